// Private to remote: one "directory" of a flat object store (S3, Azure Blob)
// read from a delimiter listing, every page of it: keys below the prefix are
// files, common prefixes are directories (a sparse frame's prefix among
// them), and a name that is both is the directory.
// Errors: EIO when a page cannot be read or parsed, when the listing has
// more than kMaxListPages pages, or when a continuation repeats itself.
// Thread-safety: pure, apart from what `fetch` does.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "b2ndfs/remote/autoindex.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

// One page of a listing, as its store's parser gave it.
struct ListedPage {
  struct Key {
    std::string key;
    int64_t size = -1;
    int64_t mtime = 0;
    std::string etag;
  };
  std::vector<Key> keys;
  std::vector<std::string> prefixes;  // common prefixes, ending in '/'
  bool more = false;                  // another page follows, at `next`
  std::string next;
};

// Fetches the page that continues at `cursor` ("" for the first).
using FetchListedPage = std::function<Result<ListedPage>(const std::string& cursor)>;

// Every entry directly below `prefix` (which ends in '/' or is empty);
// directories get `dir_mtime`. `marked` (if given) is set when a key names
// the prefix itself (a folder marker, which makes an empty directory one).
Result<std::vector<IndexEntry>> ListAllPages(const std::string& prefix, int64_t dir_mtime,
                                             const FetchListedPage& fetch, bool* marked = nullptr);

}  // namespace b2ndfs::remote
