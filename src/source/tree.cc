#include "b2ndfs/source/tree.h"

#include <cstdio>

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

std::string SparseChunkFileName(int64_t n) {
  char name[32];
  std::snprintf(name, sizeof name, "%08llX.chunk", static_cast<unsigned long long>(n));
  return name;
}

Result<struct stat> Tree::StatBeneath(const std::string& path, bool /*confined*/) const {
  return Stat(path);
}

Result<std::unique_ptr<ListCursor>> Tree::OpenList(const std::string& path) const {
  B2NDFS_ASSIGN_OR_RETURN(std::vector<TreeEntry> entries, List(path));
  return std::unique_ptr<ListCursor>(std::make_unique<WholeListing>(std::move(entries)));
}

}  // namespace b2ndfs::source
