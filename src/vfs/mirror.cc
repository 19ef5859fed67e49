#include "mirror.h"

namespace b2ndfs::vfs {
namespace {

constexpr const char* kExtensions[] = {".b2nd",    ".b2frame", ".b2f", ".b2",
                                       ".caterva", ".cat",     ".b2b"};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool HasContainerExtension(const std::string& name) {
  for (const char* ext : kExtensions) {
    if (EndsWith(name, ext)) return true;
  }
  return false;
}

std::optional<MirroredType> MirroredKind(const source::Tree& tree, const std::string& path,
                                         const std::string& name, const struct stat& st) {
  if (S_ISREG(st.st_mode) && tree.IsContainer(path)) {
    return MirroredType::kContainer;
  }
  if (S_ISDIR(st.st_mode)) {
    return HasContainerExtension(name) ? MirroredType::kContainer : MirroredType::kDir;
  }
  if (S_ISREG(st.st_mode)) {
    return HasContainerExtension(name) ? MirroredType::kContainer : MirroredType::kFile;
  }
  return std::nullopt;
}

Result<bool> PagedListing::Has(size_t index) {
  if (index < base_) {
    B2NDFS_ASSIGN_OR_RETURN(auto cursor, open_());
    B2NDFS_ASSIGN_OR_RETURN(auto first, cursor->Next());
    cursor_ = std::move(cursor);
    page_ = convert_(std::move(first));
    base_ = 0;
  }
  while (index >= base_ + page_.size()) {
    if (cursor_->done()) return false;
    B2NDFS_ASSIGN_OR_RETURN(auto next, cursor_->Next());
    base_ += page_.size();
    page_ = convert_(std::move(next));
  }
  return true;
}

}  // namespace b2ndfs::vfs
