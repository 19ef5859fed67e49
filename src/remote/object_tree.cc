#include "object_tree.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/remote/autoindex.h"
#include "b2ndfs/util/log.h"
#include "meta_cache.h"
#include "object_listing.h"
#include "remote_stats.h"

namespace b2ndfs::remote {
namespace {

// The metadata kept (meta_cache.h), least recently used dropped first: the
// names of whole listings (about 150 bytes each), HEAD answers and single
// names' entries (a few hundred bytes each): at most about 90 MB together.
constexpr size_t kMaxListedNames = 262144;
constexpr size_t kMaxHeads = 65536;
constexpr size_t kMaxNames = 131072;
// A directory of at most this many names is kept whole once listed; a
// larger one is read page by page as readdir asks (one page held), and its
// names are kept one by one (kMaxNames) for the lookups that follow.
constexpr size_t kMaxWholeListing = 65536;

using ::b2ndfs::text::Now;

// Answers worth remembering: successes, and names that are not there.
template <class T>
bool Cacheable(const Result<T>& r) {
  return r.ok() || r.status().error_number() == ENOENT;
}

class ObjectTree final : public source::Tree, public std::enable_shared_from_this<ObjectTree> {
 public:
  ObjectTree(ObjectTreeConfig config, std::shared_ptr<HttpClient> client, double revalidate)
      : revalidate_(revalidate),
        client_(std::move(client)),
        disk_cache_(std::move(config.disk_cache)),
        own_cache_(config.cache != nullptr
                       ? nullptr
                       : std::make_unique<cache::BlockCache>(kOwnCacheBytes, 1)),
        cache_(own_cache_ ? own_cache_.get() : config.cache),
        base_(std::move(config.base)),
        root_(std::move(config.root)),
        root_is_dir_(config.root_is_dir),
        list_(std::move(config.list)),
        is_directory_(std::move(config.is_directory)),
        start_time_(static_cast<int64_t>(::time(nullptr))) {
    // (One without a size is asked for again: Head() refuses it.)
    if (!root_is_dir_ && config.root_head && config.root_head->size >= 0) {
      heads_.Put(root_, *config.root_head);
    }
  }

  const std::string& root() const override { return root_; }
  // Every request goes to a server; a listing is one request, as a stat is;
  // the attributes are the mounting user's, made up.
  source::TreeCosts costs() const override {
    return source::TreeCosts{
        .requests_may_stall = true, .listing_costs_one_stat = true, .uniform_attributes = true};
  }
  double revalidate_seconds() const override { return revalidate_; }

  Result<struct stat> Stat(const std::string& path) const override {
    if (path == root_) {
      // Checked when the tree is opened; not again, so that the mount's
      // root (and .b2ndfs/stats) answers while the server is down.
      if (root_is_dir_) return MakeStat(true, 0, start_time_);
      B2NDFS_ASSIGN_OR_RETURN(const ObjectInfo info, Head(path, false));
      return MakeStat(false, info.size, info.mtime);
    }
    B2NDFS_ASSIGN_OR_RETURN(const IndexEntry entry, Find(path));
    if (entry.directory) return MakeStat(true, 0, entry.mtime);
    if (entry.size >= 0) return MakeStat(false, entry.size, entry.mtime);
    B2NDFS_ASSIGN_OR_RETURN(const ObjectInfo info, Head(path, false));
    return MakeStat(false, info.size, info.mtime != 0 ? info.mtime : entry.mtime);
  }

  Result<std::vector<source::TreeEntry>> List(const std::string& path) const override {
    B2NDFS_ASSIGN_OR_RETURN(const Listing listing, GetListing(path));
    std::vector<source::TreeEntry> out;
    out.reserve(listing->size());
    for (const auto& e : *listing) out.push_back(TreeEntryOf(e));
    return out;
  }

  Result<std::unique_ptr<source::ListCursor>> OpenList(const std::string& path) const override {
    if (auto cached = listings_.Peek(path);
        cached && cached->value.ok() && Now() - cached->at <= revalidate_) {
      return std::unique_ptr<source::ListCursor>(
          std::make_unique<StreamedList>(shared_from_this(), path, *cached->value));
    }
    return std::unique_ptr<source::ListCursor>(
        std::make_unique<StreamedList>(shared_from_this(), path, list_(path, Url(path))));
  }

  Result<source::Signature> Probe(const std::string& path) const override {
    return Signature(path, false);
  }

  Result<std::shared_ptr<const source::ByteSource>> OpenContainer(
      const std::string& path, const source::Signature* probed) const override {
    B2NDFS_ASSIGN_OR_RETURN(const bool directory, IsDirectory(path));
    const std::string frame_path = directory ? path + "/" + source::kSparseFrameIndex : path;
    // The version a probe has just seen, from the answers it was given (a
    // request saved: a round trip of every first open); fresh answers when
    // the caller cannot trust it, or when the cached object no longer
    // matches it.
    source::Signature signature;
    bool known = false;
    if (probed != nullptr) {
      auto head = Head(frame_path, false);
      if (head.ok()) {
        source::Signature cached = ObjectSignature(*head);
        cached.dir_inode = probed->dir_inode;
        known = cached == *probed;
      }
    }
    // A sparse frame's chunk objects are read at the versions its listing
    // names: the listing whose hash is the signature's.
    Listing listing;
    if (known && directory) {
      B2NDFS_ASSIGN_OR_RETURN(listing, GetListing(path));
      known = ListingHash(*listing) == probed->dir_inode;
    }
    if (known) {
      signature = *probed;
    } else {
      B2NDFS_ASSIGN_OR_RETURN(signature, Signature(path, true, &listing));
    }
    std::optional<ObjectInfo> frame;
    auto head = Head(frame_path, false);  // just fetched (by Probe or Signature)
    if (head.ok()) {
      frame = *head;
    } else if (!directory || head.status().error_number() != ENOENT) {
      return head.status();
    }
    return MakeObjectSource(client_, disk_cache_, cache_, Url(path), path, directory,
                            std::move(signature), std::move(frame), std::move(listing));
  }

  Result<std::shared_ptr<const source::PlainFile>> OpenFile(
      const std::string& path) const override {
    B2NDFS_ASSIGN_OR_RETURN(const ObjectInfo info, Head(path, true));
    if (info.size < 0) return Status(EIO, path + ": no Content-Length");
    return MakeObjectFile(client_, disk_cache_, Url(path), info);
  }

  // "remote": this mount's one source, named by its URL without
  // credentials: its requests, failures by kind, the latency of each
  // attempt, and its disk cache.
  std::string StatsJson() const override {
    return RemoteStatsJson(root_, client_->stats(), disk_cache_.get());
  }

  // The root must answer before the mount is made (its first page: kept,
  // as any page read, for the lookups and listings that follow).
  Status Check() const {
    if (!root_is_dir_) return Stat(root_).status();
    B2NDFS_ASSIGN_OR_RETURN(auto cursor, OpenList(root_));
    return cursor->Next().status();
  }

 private:
  // A directory's listing for readdir: a whole cached one, or its pages as
  // the server gives them. Every page's names are kept one by one for the
  // lookups that follow; a directory of at most kMaxWholeListing names is
  // also kept whole once its last page came.
  class StreamedList final : public source::ListCursor {
   public:
    StreamedList(std::shared_ptr<const ObjectTree> tree, std::string path, Listing whole)
        : tree_(std::move(tree)), path_(std::move(path)), whole_(std::move(whole)) {}
    StreamedList(std::shared_ptr<const ObjectTree> tree, std::string path,
                 std::unique_ptr<EntryPages> pages)
        : tree_(std::move(tree)), path_(std::move(path)), pages_(std::move(pages)) {}

    Result<std::vector<source::TreeEntry>> Next() override {
      std::vector<source::TreeEntry> out;
      if (whole_) {
        out.reserve(whole_->size());
        for (const auto& e : *whole_) out.push_back(TreeEntryOf(e));
        whole_.reset();
        done_ = true;
        return out;
      }
      if (done_) return out;
      auto page = pages_->Next();
      if (!page.ok()) return page.status();
      out.reserve(page->size());
      for (auto& e : *page) {
        out.push_back(TreeEntryOf(e));
        tree_->names_.Put(path_ + "/" + e.name, e);
        if (kept_.size() <= kMaxWholeListing) kept_.push_back(std::move(e));
      }
      if (pages_->done()) {
        done_ = true;
        if (kept_.size() <= kMaxWholeListing) {
          tree_->listings_.Put(path_, SortedListing(std::move(kept_)));
        }
        kept_.clear();
      }
      return out;
    }
    bool done() const override { return done_; }

   private:
    const std::shared_ptr<const ObjectTree> tree_;
    const std::string path_;
    Listing whole_;
    std::unique_ptr<EntryPages> pages_;
    std::vector<IndexEntry> kept_;
    bool done_ = false;
  };

  // The request URL of a tree path: the base URL (with any credentials the
  // user gave) and the path's names percent-encoded.
  std::string Url(const std::string& path) const {
    if (path.size() <= root_.size()) return base_;
    std::string url = base_;
    size_t pos = root_.size() + 1;
    while (pos <= path.size()) {
      size_t slash = path.find('/', pos);
      if (slash == std::string::npos) slash = path.size();
      url += "/" + EncodePathSegment(path.substr(pos, slash - pos));
      pos = slash + 1;
    }
    return url;
  }

  // A directory's listing: cached for `revalidate` seconds; one request
  // however many ask at once.
  Result<Listing> GetListing(const std::string& path) const {
    return listings_.Get(path, revalidate_, [&]() -> Result<Listing> {
      auto pages = list_(path, Url(path));
      std::vector<IndexEntry> entries;
      while (!pages->done()) {
        B2NDFS_ASSIGN_OR_RETURN(std::vector<IndexEntry> page, pages->Next());
        std::move(page.begin(), page.end(), std::back_inserter(entries));
      }
      return SortedListing(std::move(entries));
    });
  }

  // An object's attributes: from its HEAD answer of the last `revalidate`
  // seconds, else from its parent's listing of that time when the listing
  // names its size and ETag (S3, Azure: no request), else a HEAD (one
  // however many ask at once). `fresh`: a HEAD now.
  Result<ObjectInfo> Head(const std::string& path, bool fresh) const {
    if (!fresh) {
      auto cached = heads_.Peek(path);
      if (cached && Now() - cached->at <= revalidate_) return cached->value;
      if (auto listed = FromListing(path)) return *listed;
    }
    return heads_.Get(path, fresh ? -1.0 : revalidate_, [&]() -> Result<ObjectInfo> {
      Result<ObjectInfo> result = client_->Head(Url(path));
      // (A directory's index page, where a server redirects its name, may
      // come without a length.)
      if (result.ok() && result->size < 0 && !RedirectedToDirectory(*result)) {
        return Status(EIO, path + ": the server sent no Content-Length");
      }
      return result;
    });
  }

  // An object's attributes as its parent's fresh listing (or a fresh page
  // of it) names them, when it names an ETag and a size. (A web server's
  // index names no ETag: a Last-Modified from it would make a version that
  // its HEAD, with an ETag, never matches, and every revalidation would look
  // like a change.)
  std::optional<ObjectInfo> FromListing(const std::string& path) const {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash < root_.size() || !root_is_dir_) return std::nullopt;
    std::optional<IndexEntry> listed;
    if (auto cached = listings_.Peek(path.substr(0, slash));
        cached && cached->value.ok() && Now() - cached->at <= revalidate_) {
      if (const IndexEntry* e = Lookup(**cached->value, path.substr(slash + 1))) listed = *e;
    } else if (auto named = names_.Peek(path);
               named && named->value.ok() && Now() - named->at <= revalidate_) {
      listed = *named->value;
    }
    if (!listed || listed->directory || listed->size < 0 || listed->etag.empty()) {
      return std::nullopt;
    }
    ObjectInfo info;
    info.size = listed->size;
    info.etag = listed->etag;
    info.mtime = listed->mtime;
    return info;
  }

  static const IndexEntry* Lookup(const std::vector<IndexEntry>& listing, const std::string& name) {
    auto it =
        std::lower_bound(listing.begin(), listing.end(), name,
                         [](const IndexEntry& e, const std::string& n) { return e.name < n; });
    return it == listing.end() || it->name != name ? nullptr : &*it;
  }

  static bool RedirectedToDirectory(const ObjectInfo& info) {
    return !info.final_url.empty() && info.final_url.back() == '/';
  }

  void Forget(const std::string& path) const {
    listings_.Erase(path);
    names_.Erase(path);
    heads_.Erase(path);
    heads_.Erase(path + "/" + source::kSparseFrameIndex);
  }

  // The entry of `path` in its parent's listing.
  Result<IndexEntry> Find(const std::string& path) const {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash < root_.size() ||
        path.compare(0, root_.size(), root_) != 0) {
      return NotFound(path);
    }
    if (!root_is_dir_) return Status(ENOTDIR, root_);
    const std::string parent = path.substr(0, slash);
    const std::string name = path.substr(slash + 1);
    // A fresh listing answers; else what was last heard of this one name;
    // else the name is asked about alone, never by listing its directory
    // (a web server's index of 5,000 containers is 480 KB; an S3 prefix of
    // 100,000 keys, a hundred pages): a HEAD says whether it is an object,
    // and which version, and where it is not one, a listing of at most two
    // keys below it (a web server: its index's HEAD) whether it is a
    // directory. A name added since appears once the directory is listed
    // again (readdir).
    // A directory's name is asked about as one (a web server's index HEAD,
    // a store's two-key listing), where what was last heard says it is one.
    bool was_directory = false;
    if (auto cached = listings_.Peek(parent); cached && cached->value.ok()) {
      const IndexEntry* e = Lookup(**cached->value, name);
      if (Now() - cached->at <= revalidate_) {
        if (e == nullptr) return NotFound(path);
        return *e;
      }
      was_directory = e != nullptr && e->directory;
    }
    if (auto named = names_.Peek(path); named && named->value.ok()) {
      was_directory = named->value->directory;
    }
    if (!is_directory_) {
      B2NDFS_ASSIGN_OR_RETURN(const Listing listing, GetListing(parent));
      const IndexEntry* e = Lookup(*listing, name);
      if (e == nullptr) return NotFound(path);
      return *e;
    }
    return names_.Get(path, revalidate_, [&] { return AskName(path, name, was_directory); });
  }

  // What `path` is, asked of the server about that name alone (first as a
  // directory where `was_directory`).
  Result<IndexEntry> AskName(const std::string& path, const std::string& name,
                             bool was_directory) const {
    IndexEntry e;
    e.name = name;
    if (was_directory) {
      B2NDFS_ASSIGN_OR_RETURN(const bool still, is_directory_(path, Url(path)));
      if (still) {
        e.directory = true;
        e.mtime = start_time_;
        return e;
      }
    }
    auto head = Head(path, false);  // fresh within `revalidate`, else a HEAD now
    if (head.ok()) {
      e.mtime = head->mtime;
      // An empty object may be a folder marker, or a Data Lake directory.
      bool directory = RedirectedToDirectory(*head);
      if (!directory && head->size == 0) {
        auto below = is_directory_(path, Url(path));
        directory = below.ok() && *below;
      }
      if (directory) {
        e.directory = true;
        return e;
      }
      e.size = head->size;
      e.etag = head->etag;
      return e;
    }
    if (head.status().error_number() != ENOENT) return head.status();
    B2NDFS_ASSIGN_OR_RETURN(const bool directory, is_directory_(path, Url(path)));
    if (!directory) return NotFound(path);
    e.directory = true;
    e.mtime = start_time_;
    return e;
  }

  Result<bool> IsDirectory(const std::string& path) const {
    if (path == root_) return root_is_dir_;
    B2NDFS_ASSIGN_OR_RETURN(const IndexEntry entry, Find(path));
    return entry.directory;
  }

  // A container's signature: its object's, or for a sparse frame its
  // chunks.b2frame's plus a hash of its directory's listing.
  // `listing_used`: set to a sparse frame's listing that the signature hashes.
  Result<source::Signature> Signature(const std::string& path, bool fresh,
                                      Listing* listing_used = nullptr) const {
    if (fresh) Forget(path);
    B2NDFS_ASSIGN_OR_RETURN(const bool directory, IsDirectory(path));
    if (!directory) {
      B2NDFS_ASSIGN_OR_RETURN(const ObjectInfo info, Head(path, fresh));
      return ObjectSignature(info);
    }
    B2NDFS_ASSIGN_OR_RETURN(const Listing listing, GetListing(path));
    source::Signature s;
    auto frame = Head(path + "/" + source::kSparseFrameIndex, fresh);
    if (frame.ok()) {
      s = ObjectSignature(*frame);
    } else if (frame.status().error_number() != ENOENT) {
      return frame.status();
    }
    s.dir_inode = ListingHash(*listing);
    if (listing_used != nullptr) *listing_used = listing;
    return s;
  }

  const double revalidate_;
  const std::shared_ptr<HttpClient> client_;
  const std::shared_ptr<DiskCache> disk_cache_;
  // A tree opened without the mount's block cache keeps small objects in
  // one of its own of this size.
  static constexpr size_t kOwnCacheBytes = size_t{64} << 20;
  const std::unique_ptr<cache::BlockCache> own_cache_;
  cache::BlockCache* const cache_;
  const std::string base_;  // the root's request URL, without a trailing '/'
  const std::string root_;  // its name, without credentials
  const bool root_is_dir_;
  const ObjectTreeConfig::Lister list_;
  const ObjectTreeConfig::DirectoryProbe is_directory_;
  const int64_t start_time_;
  mutable MetaCache<Listing> listings_{
      kMaxListedNames, Cacheable<Listing>,
      [](const Result<Listing>& r) { return r.ok() ? (*r)->size() : size_t{1}; }};
  mutable MetaCache<ObjectInfo> heads_{kMaxHeads, Cacheable<ObjectInfo>};
  // Single names' entries: from listings read page by page, and from names
  // asked about alone (AskName).
  mutable MetaCache<IndexEntry> names_{kMaxNames, Cacheable<IndexEntry>};
};

}  // namespace

std::shared_ptr<DiskCache> OpenConfiguredDiskCache(const RemoteOptions& options) {
  if (options.disk_cache_dir.empty()) return nullptr;
  auto cache = DiskCache::Open(options.disk_cache_dir, options.disk_cache_size);
  if (!cache.ok()) {
    Log(LogLevel::kWarning, "mounting without the disk cache: " + cache.status().message() + " (" +
                                std::strerror(cache.status().error_number()) + ")");
    return nullptr;
  }
  return std::shared_ptr<DiskCache>(std::move(cache).value());
}

Result<std::shared_ptr<source::Tree>> OpenObjectTree(ObjectTreeConfig config,
                                                     std::shared_ptr<HttpClient> client,
                                                     double revalidate) {
  auto tree = std::make_shared<ObjectTree>(std::move(config), std::move(client), revalidate);
  B2NDFS_RETURN_IF_ERROR(tree->Check());
  return std::shared_ptr<source::Tree>(std::move(tree));
}

}  // namespace b2ndfs::remote
