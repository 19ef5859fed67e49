// Private to remote: one "directory" of a flat object store (S3, Azure Blob)
// read from a delimiter listing, page by page: keys below the prefix are
// files, common prefixes are directories (a sparse frame's prefix among
// them), and a name that is both is the directory.
// Errors: EIO when a page cannot be read or parsed, when the listing has
// more than kMaxListPages pages, or when a continuation repeats itself.
// Thread-safety: a PrefixPager is used by one thread at a time; the rest is
// pure, apart from what `fetch` does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
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

// A directory's entries, a page at a time, in the order its server gives
// them (each page sorted by name, no name twice): a web server's index is
// one page, a store's prefix one page per request.
class EntryPages {
 public:
  virtual ~EntryPages() = default;
  // The next page; empty once done(). ENOENT when the directory is not
  // there (from the page that finds it out); other errors as HttpClient's.
  virtual Result<std::vector<IndexEntry>> Next() = 0;
  virtual bool done() const = 0;
};

// Pages of one page: `list`'s answer.
std::unique_ptr<EntryPages> OnePage(std::function<Result<std::vector<IndexEntry>>()> list);

// The entries directly below `prefix` (which ends in '/' or is empty), one
// page of the store's listing at a time, holding no more than that page:
// the stores list keys and common prefixes in one order (a prefix "x/"
// sorts after the keys "x" and "x.b2nd"), so a key whose name a later page
// may show to be a directory is held back until the listing has passed
// "x/" (at most the few keys that are leading parts of the page's last
// one). Directories get `dir_mtime`.
class PrefixPager {
 public:
  PrefixPager(std::string prefix, int64_t dir_mtime, FetchListedPage fetch);
  // The next page's entries, sorted by name, no name twice; empty once
  // done().
  Result<std::vector<IndexEntry>> Next();
  bool done() const { return done_; }
  // A key named the prefix itself (a folder marker, which makes an empty
  // directory one).
  bool marked() const { return marked_; }
  // Entries returned so far.
  size_t listed() const { return listed_; }

 private:
  const std::string prefix_;
  const int64_t dir_mtime_;
  const FetchListedPage fetch_;
  std::vector<IndexEntry> held_;
  std::string cursor_;
  std::set<std::string> cursors_seen_;
  int pages_ = 0;
  size_t listed_ = 0;
  bool done_ = false;
  bool marked_ = false;
};

// A prefix's pages (PrefixPager), whose errors name `path`. Stores have no
// directories: a prefix with nothing below it (nor a folder marker, where
// `marker_makes_directory`) is not there, ENOENT with `missing` (an empty
// `missing`: the store's root, which is always there).
std::unique_ptr<EntryPages> MakePrefixPages(std::string path, std::string prefix, int64_t dir_mtime,
                                            FetchListedPage fetch, std::string missing,
                                            bool marker_makes_directory);

// Whether anything is below `prefix` (a directory of a store), from the
// first page of its listing (`fetch` asks for two keys: the folder marker
// and one more).
Result<bool> PrefixHasEntries(const std::string& prefix, const FetchListedPage& fetch,
                              bool marker_makes_directory);

}  // namespace b2ndfs::remote
