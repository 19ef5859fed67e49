#include "prefix_listing.h"

#include <set>

#include "b2ndfs/remote/s3_tree.h"

namespace b2ndfs::remote {

Result<std::vector<IndexEntry>> ListAllPages(const std::string& prefix, int64_t dir_mtime,
                                             const FetchListedPage& fetch, bool* marked) {
  std::vector<IndexEntry> files;
  std::set<std::string> dirs;
  std::string cursor;
  std::set<std::string> cursors_seen;
  for (int page_number = 0;; ++page_number) {
    if (page_number >= kMaxListPages) {
      return Status(EIO, "the listing of '" + prefix + "' has more than " +
                             std::to_string(kMaxListPages) + " pages");
    }
    auto page = fetch(cursor);
    if (!page.ok()) return page.status();
    for (auto& k : page->keys) {
      if (k.key.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string name = k.key.substr(prefix.size());
      if (name.empty() && marked != nullptr) *marked = true;
      // Empty names are "folder" marker objects; '/' cannot occur with the
      // delimiter, but a server could send it.
      if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
        continue;
      }
      files.push_back(IndexEntry{name, false, k.size, k.mtime, std::move(k.etag)});
    }
    for (const auto& p : page->prefixes) {
      if (p.size() <= prefix.size() + 1 || p.compare(0, prefix.size(), prefix) != 0 ||
          p.back() != '/') {
        continue;
      }
      const std::string name = p.substr(prefix.size(), p.size() - prefix.size() - 1);
      if (name == "." || name == ".." || name.find('/') != std::string::npos) continue;
      dirs.insert(name);
    }
    if (!page->more) break;
    if (!cursors_seen.insert(page->next).second) {
      return Status(EIO, "the listing of '" + prefix + "' repeats itself");
    }
    cursor = page->next;
  }
  // A name that is both a key and a prefix (a sparse frame, or a Data Lake
  // directory, which is both): the prefix wins.
  std::vector<IndexEntry> out;
  out.reserve(files.size() + dirs.size());
  for (auto& f : files) {
    if (dirs.count(f.name) == 0) out.push_back(std::move(f));
  }
  for (const auto& d : dirs) out.push_back(IndexEntry{d, true, -1, dir_mtime});
  return out;
}

}  // namespace b2ndfs::remote
