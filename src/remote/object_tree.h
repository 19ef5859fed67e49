// remote/object_tree (private to src/remote): the source::Tree shared by
// every remote source whose files are objects behind URLs (a web server's
// directory, an S3 bucket). Only how a directory is listed differs; paths,
// attributes, versions (size + ETag or Last-Modified), the reuse of answers
// for `revalidate` seconds, sparse frames as directories, and every read
// naming the version it expects (If-Match) are the same. See http_tree.h.
//
// Ownership: the tree and every source and file opened from it share the
// HttpClient (the connection pool). Thread-safety: any thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/remote/autoindex.h"
#include "b2ndfs/remote/disk_cache.h"
#include "b2ndfs/remote/http_client.h"
#include "b2ndfs/remote/http_tree.h"
#include "b2ndfs/source/tree.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

struct ObjectTreeConfig {
  // The root's request URL without a trailing '/'; a path's URL is this
  // plus its names, each percent-encoded (EncodePathSegment).
  std::string base;
  // The root's name (Tree::root()): no credentials, no query.
  std::string root;
  bool root_is_dir = true;
  // The entries of directory `path` (request URL `url`), in any order;
  // entries without a size have size -1. Errors as HttpClient's.
  using Lister = std::function<Result<std::vector<IndexEntry>>(const std::string& path,
                                                               const std::string& url)>;
  Lister list;
  // Optional: the root object's HEAD answer, when the opener asked for it
  // to tell an object from a directory; taken as the tree's first answer
  // for the root (reused for `revalidate` seconds, as any other).
  std::optional<ObjectInfo> root_head;
  // Optional: where fetched ranges are kept (disk_cache.h).
  std::shared_ptr<DiskCache> disk_cache;
};

// The disk cache `options` ask for, or null (none asked for, or it cannot be
// opened: logged, the mount goes on without it).
std::shared_ptr<DiskCache> OpenConfiguredDiskCache(const RemoteOptions& options);

// The tree; checks that the root answers (a listing for a directory, a HEAD
// for an object) before returning.
Result<std::shared_ptr<source::Tree>> OpenObjectTree(ObjectTreeConfig config,
                                                     std::shared_ptr<HttpClient> client,
                                                     double revalidate);

}  // namespace b2ndfs::remote
