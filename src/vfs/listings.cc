#include "listings.h"

#include <utility>
#include <vector>

#include "attributes.h"
#include "b2ndfs/views/view.h"
#include "mirror.h"

namespace b2ndfs::vfs {
namespace {

// A view directory's listing, numbered from its generation's inode block.
class ViewListing : public DirListing {
 public:
  ViewListing(std::shared_ptr<const views::Listing> listing, std::shared_ptr<Generation> generation,
              std::shared_ptr<const store::Container> container,
              std::shared_ptr<const views::Node> directory, double timeout)
      : listing_(std::move(listing)),
        generation_(std::move(generation)),
        container_(std::move(container)),
        directory_(std::move(directory)),
        timeout_(timeout) {}
  size_t size() const override {
    const size_t n = listing_->size();
    return n > kMaxListedNames ? 0 : n;
  }
  DirEntry at(size_t index) const override {
    views::ListEntry e = listing_->at(index);
    return DirEntry{std::move(e.name), static_cast<mode_t>(e.directory ? S_IFDIR : S_IFREG),
                    e.ordinal == views::kNoOrdinal ? 0 : generation_->ino_base() + e.ordinal};
  }
  Result<Attr> Attributes(size_t index) const override {
    views::ListEntry e = listing_->at(index);
    if (e.ordinal == views::kNoOrdinal) return Status(ENOSYS, e.name + " has no fixed number");
    B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const views::Node> view,
                            directory_->Lookup(*container_, e.name));
    return InsideAttributes(*generation_, *container_, *view, generation_->ino_base() + e.ordinal,
                            timeout_);
  }
  bool cheap_lookups() const override { return true; }

 private:
  std::shared_ptr<const views::Listing> listing_;
  std::shared_ptr<Generation> generation_;
  std::shared_ptr<const store::Container> container_;
  std::shared_ptr<const views::Node> directory_;
  double timeout_;
};

}  // namespace

Result<std::shared_ptr<DirListing>> ListMirroredDir(std::shared_ptr<source::Tree> tree,
                                                    InodeTable* inodes, const std::string& dir) {
  auto convert = [inodes, tree = tree.get(), dir](std::vector<source::TreeEntry> entries) {
    std::vector<DirEntry> out;
    out.reserve(entries.size());
    for (auto& e : entries) {
      const std::string path = dir + "/" + e.name;
      const auto kind = MirroredKind(*tree, path, e.name, e.st);
      if (!kind) continue;
      const mode_t type = *kind == MirroredType::kFile ? S_IFREG : S_IFDIR;
      // The number a lookup gives, computed: a listing remembers nothing.
      Ino ino = inodes->PathIno(path, type);
      if (auto held = inodes->FindPathByName(path)) ino = held->ino;
      out.push_back(DirEntry{std::move(e.name), type, ino});
    }
    return out;
  };
  auto open = [tree, dir] { return tree->OpenList(dir); };
  B2NDFS_ASSIGN_OR_RETURN(std::unique_ptr<source::ListCursor> cursor, open());
  B2NDFS_ASSIGN_OR_RETURN(std::vector<source::TreeEntry> first, cursor->Next());
  if (cursor->done()) {
    return std::shared_ptr<DirListing>(std::make_shared<VectorListing>(convert(std::move(first))));
  }
  std::vector<DirEntry> first_page = convert(std::move(first));
  return std::shared_ptr<DirListing>(std::make_shared<PagedListing>(
      std::move(open), std::move(convert), std::move(cursor), std::move(first_page)));
}

Result<std::shared_ptr<DirListing>> ListViewDir(std::shared_ptr<Generation> generation,
                                                std::shared_ptr<const store::Container> container,
                                                std::shared_ptr<const views::Node> directory,
                                                double timeout) {
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const views::Listing> listing,
                          directory->List(*container));
  return std::shared_ptr<DirListing>(
      std::make_shared<ViewListing>(std::move(listing), std::move(generation), std::move(container),
                                    std::move(directory), timeout));
}

}  // namespace b2ndfs::vfs
