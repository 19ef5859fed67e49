#include "mirror.h"

#include <algorithm>
#include <boost/filesystem.hpp>

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

std::optional<MirroredType> MirroredKind(const std::string& name, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) {
    return HasContainerExtension(name) ? MirroredType::kContainer : MirroredType::kDir;
  }
  if (S_ISREG(st.st_mode)) {
    return HasContainerExtension(name) ? MirroredType::kContainer : MirroredType::kFile;
  }
  return std::nullopt;
}

Result<std::vector<MirroredEntry>> ListDirectory(const std::string& path) {
  // Boost.Filesystem lists; its errors are caught here, at the module edge.
  boost::system::error_code ec;
  boost::filesystem::directory_iterator it(path, ec);
  auto failed = [&] {
    return Status(ec.value() > 0 ? ec.value() : EIO, path + ": " + ec.message());
  };
  if (ec) return failed();
  std::vector<MirroredEntry> entries;
  for (; it != boost::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return failed();
    const std::string name = it->path().filename().string();
    struct stat st;
    if (::stat(it->path().c_str(), &st) != 0) continue;  // vanished or a dangling link
    if (auto kind = MirroredKind(name, st)) entries.push_back(MirroredEntry{name, *kind});
  }
  std::sort(entries.begin(), entries.end(),
            [](const MirroredEntry& a, const MirroredEntry& b) { return a.name < b.name; });
  return entries;
}

}  // namespace b2ndfs::vfs
