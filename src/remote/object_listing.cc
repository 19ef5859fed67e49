#include "object_listing.h"

#include <unistd.h>

#include <algorithm>

namespace b2ndfs::remote {
struct stat MakeStat(bool directory, int64_t size, int64_t mtime) {
  struct stat st {};
  st.st_mode = directory ? (S_IFDIR | 0555) : (S_IFREG | 0444);
  st.st_nlink = directory ? 2 : 1;
  st.st_uid = ::getuid();
  st.st_gid = ::getgid();
  st.st_size = directory ? 0 : size;
  st.st_blocks = (st.st_size + 511) / 512;
  st.st_blksize = 128 * 1024;
  st.st_mtim.tv_sec = mtime;
  st.st_atim = st.st_mtim;
  st.st_ctim = st.st_mtim;
  return st;
}

// FNV-1a over a listing: the version of a sparse frame's directory (chunk
// files added, removed or rewritten).
uint64_t ListingHash(const std::vector<IndexEntry>& entries) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  for (const auto& e : entries) {
    mix(e.name);
    mix(std::to_string(e.size) + "/" + std::to_string(e.mtime) + (e.directory ? "d" : "f"));
    mix(e.etag);
  }
  return h;
}

source::TreeEntry TreeEntryOf(const IndexEntry& e) {
  // Sizes an index page leaves out are asked for when the file is.
  return source::TreeEntry{e.name, MakeStat(e.directory, std::max<int64_t>(e.size, 0), e.mtime)};
}

Listing SortedListing(std::vector<IndexEntry> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const IndexEntry& a, const IndexEntry& b) { return a.name < b.name; });
  entries.erase(
      std::unique(entries.begin(), entries.end(),
                  [](const IndexEntry& a, const IndexEntry& b) { return a.name == b.name; }),
      entries.end());
  return std::make_shared<const std::vector<IndexEntry>>(std::move(entries));
}

}  // namespace b2ndfs::remote
