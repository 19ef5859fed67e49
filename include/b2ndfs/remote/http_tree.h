// remote/http_tree: a source tree on a web server that answers Range
// requests (http:// and https://).
//
// A URL ending in '/' is a directory, listed from the server's index page
// (nginx `autoindex`, JSON or HTML); a URL without it is a single object (a
// container). Entries are files and directories as the index says; a
// directory with a container extension is a sparse frame. Attributes are made
// up: the mounting user's, read-only, the index's (or Last-Modified) time.
// Versions: an object's signature is its size and ETag (or Last-Modified);
// listings and HEAD answers are reused for `revalidate` seconds, so a change
// on the server is seen within that time, and every Range request carries
// If-Match (or If-Unmodified-Since): bytes of another version read as ESTALE.
// Ownership: the tree owns its HttpClient (the connection pool); sources and
// files opened from it hold the client through a shared_ptr.
// Errors: as HttpClient (ENOENT, EACCES, ESTALE, EIO), plus ENOTDIR.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "b2ndfs/remote/http_client.h"
#include "b2ndfs/source/tree.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::cache {
class BlockCache;
}  // namespace b2ndfs::cache

namespace b2ndfs::remote {

struct RemoteOptions {
  HttpOptions http;
  // Where small objects fetched whole are kept (the mount's block cache,
  // counted in cache_size); null: a tree keeps its own of 64 MiB.
  cache::BlockCache* cache = nullptr;
  double revalidate = 1.0;  // seconds a listing or HEAD answer is reused
  // A local cache of fetched ranges (disk_cache.h); empty: none. A cache
  // that cannot be opened (another daemon holds it) is logged and left out.
  std::string disk_cache_dir;
  uint64_t disk_cache_size = kDefaultDiskCacheSize;
  // Told, before the tree is handed out, what the mounting user must know
  // of the server (http(s): that it ignores Range requests); may be empty.
  std::function<void(const std::string&)> warn;
  static constexpr uint64_t kDefaultDiskCacheSize = uint64_t{1} << 30;
};

// True for the URLs b2ndfs treats as remote sources (http://, https://,
// s3://, az://; the scheme is case-insensitive).
bool IsRemoteUrl(const std::string& source);

// A tree at an http(s) URL; checks that the root answers (a listing for a
// directory, a HEAD for an object) before returning.
Result<std::shared_ptr<source::Tree>> OpenHttpTree(const std::string& url,
                                                   const RemoteOptions& options);

}  // namespace b2ndfs::remote
