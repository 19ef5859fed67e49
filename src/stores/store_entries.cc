#include "store_entries.h"

#include <algorithm>
#include <cstring>

namespace b2ndfs::stores::internal {

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() > n && s.compare(s.size() - n, n, suffix) == 0;
}

std::optional<StoreKind> KindByName(const std::string& name) {
  if (EndsWith(name, ".b2z")) return StoreKind::kZip;
  if (EndsWith(name, ".b2e")) return StoreKind::kEmbed;
  if (EndsWith(name, ".b2d")) return StoreKind::kDir;
  return std::nullopt;
}

bool KindMatches(StoreKind kind, const struct stat& st) {
  return kind == StoreKind::kDir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
}

struct stat AsDirectory(struct stat st) {
  const mode_t perm = st.st_mode & 0444;
  st.st_mode = S_IFDIR | perm | (perm >> 2);
  st.st_nlink = 2;
  st.st_size = 4096;
  return st;
}

struct stat AsFile(struct stat st, int64_t size) {
  st.st_mode = S_IFREG | (st.st_mode & 0444);
  st.st_nlink = 1;
  st.st_size = size;
  return st;
}

Result<size_t> TextFile::ReadUpTo(int64_t offset, uint8_t* out, size_t length) const {
  if (offset < 0) return Status(EINVAL, "negative offset");
  if (offset >= static_cast<int64_t>(text_.size())) return size_t{0};
  const size_t n = std::min(length, text_.size() - static_cast<size_t>(offset));
  std::memcpy(out, text_.data() + offset, n);
  return n;
}

Result<std::vector<source::TreeEntry>> StoreFilesAsDirectories::Next() {
  B2NDFS_ASSIGN_OR_RETURN(std::vector<source::TreeEntry> entries, base_->Next());
  for (auto& e : entries) {
    auto kind = KindByName(e.name);
    if (kind && KindMatches(*kind, e.st)) e.st = AsDirectory(e.st);
  }
  return entries;
}

}  // namespace b2ndfs::stores::internal
