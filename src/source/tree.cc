#include "b2ndfs/source/tree.h"

namespace b2ndfs::source {
namespace {

// A listing handed over whole, as one page.
class WholeListing final : public ListCursor {
 public:
  explicit WholeListing(std::vector<TreeEntry> entries) : entries_(std::move(entries)) {}
  Result<std::vector<TreeEntry>> Next() override {
    if (done_) return std::vector<TreeEntry>{};
    done_ = true;
    return std::move(entries_);
  }
  bool done() const override { return done_; }

 private:
  std::vector<TreeEntry> entries_;
  bool done_ = false;
};

}  // namespace

Result<struct stat> Tree::StatBeneath(const std::string& path, bool /*confined*/) const {
  return Stat(path);
}

Result<std::unique_ptr<ListCursor>> Tree::OpenList(const std::string& path) const {
  B2NDFS_ASSIGN_OR_RETURN(std::vector<TreeEntry> entries, List(path));
  return std::unique_ptr<ListCursor>(std::make_unique<WholeListing>(std::move(entries)));
}

}  // namespace b2ndfs::source
