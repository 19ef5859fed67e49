// Private to vfs: the mirrored part of the tree (SOURCE's own directories
// and files) and what each entry is shown as, decided from its name and
// attributes alone (source::Tree), without opening any container.
#pragma once

#include <sys/stat.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/source/tree.h"
#include "b2ndfs/util/status.h"
#include "b2ndfs/vfs/types.h"

namespace b2ndfs::vfs {

enum class MirroredType { kDir, kFile, kContainer };

// Checks that a local SOURCE (a directory, or a single container file)
// exists and can be served (Filesystem::ValidateSource).
Status ValidateLocalSource(const std::string& source);

// Regular files and directories with a container extension are containers
// (a directory is a sparse frame; one without chunks.b2frame shows as a
// broken container saying so), and so is a regular file the tree says is
// one (source::Tree::IsContainer: a python-blosc2 store's leaves, which have
// no extension); devices, fifos and sockets are not shown. `path` is the
// entry's tree path, `name` its last component.
std::optional<MirroredType> MirroredKind(const source::Tree& tree, const std::string& path,
                                         const std::string& name, const struct stat& st);

class VectorListing : public DirListing {
 public:
  explicit VectorListing(std::vector<DirEntry> entries) : entries_(std::move(entries)) {}
  size_t size() const override { return entries_.size(); }
  DirEntry at(size_t index) const override { return entries_[index]; }

 private:
  std::vector<DirEntry> entries_;
};

// A directory read page by page as readdir goes (a remote prefix of
// 100,000 names): holds one page; a reader going back (rewinddir) starts
// again from the first page.
class PagedListing : public DirListing {
 public:
  using Open = std::function<Result<std::unique_ptr<source::ListCursor>>()>;
  // A page's entries as readdir shows them (those not shown left out).
  using Convert = std::function<std::vector<DirEntry>(std::vector<source::TreeEntry>)>;
  PagedListing(Open open, Convert convert, std::unique_ptr<source::ListCursor> cursor,
               std::vector<DirEntry> first_page)
      : open_(std::move(open)),
        convert_(std::move(convert)),
        cursor_(std::move(cursor)),
        page_(std::move(first_page)) {}
  Result<bool> Has(size_t index) override;
  size_t size() const override { return base_ + page_.size(); }
  DirEntry at(size_t index) const override { return page_[index - base_]; }

 private:
  const Open open_;
  const Convert convert_;
  std::unique_ptr<source::ListCursor> cursor_;
  std::vector<DirEntry> page_;
  size_t base_ = 0;  // the index of page_[0]
};

}  // namespace b2ndfs::vfs
