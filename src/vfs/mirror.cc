#include "mirror.h"

namespace b2ndfs::vfs {
namespace {

constexpr const char* kExtensions[] = {".b2nd", ".b2frame", ".b2f", ".b2", ".caterva", ".cat"};

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

}  // namespace b2ndfs::vfs
