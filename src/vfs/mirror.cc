#include "mirror.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace b2ndfs::vfs {
namespace {

constexpr const char* kExtensions[] = {".b2nd",    ".b2frame", ".b2f", ".b2",
                                       ".caterva", ".cat",     ".b2b"};

bool StatPath(const std::string& path, struct stat* st) { return ::stat(path.c_str(), st) == 0; }

Status Errno(const std::string& what) {
  const int e = errno;
  return Status(e, what + ": " + std::strerror(e));
}

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

Status ValidateLocalSource(const std::string& source) {
  struct stat st;
  if (!StatPath(source, &st)) return Errno("source " + source);
  if (S_ISDIR(st.st_mode)) {
    if (::access(source.c_str(), R_OK | X_OK) != 0) {
      return Errno("source " + source + " cannot be listed");
    }
    return Status::Ok();
  }
  if (S_ISREG(st.st_mode)) {
    if (::access(source.c_str(), R_OK) != 0) return Errno("source " + source + " cannot be read");
    return Status::Ok();
  }
  return InvalidArgument("source " + source + " is neither a directory nor a container file");
}

}  // namespace b2ndfs::vfs
