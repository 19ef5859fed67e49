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

#include <cstdint>
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
#include "prefix_listing.h"

namespace b2ndfs::remote {

struct ObjectTreeConfig {
  // The root's request URL without a trailing '/'; a path's URL is this
  // plus its names, each percent-encoded (EncodePathSegment).
  std::string base;
  // The root's name (Tree::root()): no credentials, no query.
  std::string root;
  bool root_is_dir = true;
  // The entries of directory `path` (request URL `url`), a page at a time
  // (prefix_listing.h); entries without a size have size -1.
  using Lister =
      std::function<std::unique_ptr<EntryPages>(const std::string& path, const std::string& url)>;
  Lister list;
  // Whether `path` (request URL `url`), which is not an object, is a
  // directory: asked with one small request when a name is looked up
  // without its directory's listing, so that no lookup lists a directory.
  using DirectoryProbe =
      std::function<Result<bool>(const std::string& path, const std::string& url)>;
  DirectoryProbe is_directory;
  // Optional: the root object's HEAD answer, when the opener asked for it
  // to tell an object from a directory; taken as the tree's first answer
  // for the root (reused for `revalidate` seconds, as any other).
  std::optional<ObjectInfo> root_head;
  // Optional: where fetched ranges are kept (disk_cache.h).
  std::shared_ptr<DiskCache> disk_cache;
  // Optional: where small objects fetched whole are kept (RemoteOptions).
  cache::BlockCache* cache = nullptr;
};

// A container's signature from its object's answer: size, mtime, and the
// ETag (else Last-Modified) as the tag.
source::Signature ObjectSignature(const ObjectInfo& info);

// A directory's entries, sorted by name, without repeated names.
using Listing = std::shared_ptr<const std::vector<IndexEntry>>;

// One generation of a remote container (object_source.cc): an object, or a
// sparse frame's directory of objects (`sparse`), whose index is `frame`
// (nullopt: none) and whose chunk objects are read at the versions
// `listing` (the directory's listing when the generation opened) names.
// Every read names the version it expects (If-Match, else
// If-Unmodified-Since, and the total size): a changed object reads as
// ESTALE and sets found_stale(), never as another version's bytes.
// Small objects are fetched whole into `cache` (object_source.cc), which
// must outlive the source.
std::shared_ptr<const source::ByteSource> MakeObjectSource(
    std::shared_ptr<HttpClient> client, std::shared_ptr<DiskCache> disk_cache,
    cache::BlockCache* cache, std::string url, std::string name, bool sparse,
    source::Signature signature, std::optional<ObjectInfo> frame, Listing listing);

// One version of a plain file, read as a container's parts are.
std::shared_ptr<const source::PlainFile> MakeObjectFile(std::shared_ptr<HttpClient> client,
                                                        std::shared_ptr<DiskCache> disk_cache,
                                                        std::string url, ObjectInfo info);

// The disk cache `options` ask for, or null (none asked for, or it cannot be
// opened: logged, the mount goes on without it).
std::shared_ptr<DiskCache> OpenConfiguredDiskCache(const RemoteOptions& options);

// The tree; checks that the root answers (a listing for a directory, a HEAD
// for an object) before returning.
Result<std::shared_ptr<source::Tree>> OpenObjectTree(ObjectTreeConfig config,
                                                     std::shared_ptr<HttpClient> client,
                                                     double revalidate);

}  // namespace b2ndfs::remote
