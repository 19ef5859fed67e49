// Remote byte sources and plain files (private to src/remote): one version
// of an object, or of a sparse frame's directory of objects, read by Range
// requests that name that version (object_tree.h).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/cache/cache_id.h"
#include "b2ndfs/source/derived_store.h"
#include "object_tree.h"

namespace b2ndfs::remote {

source::Signature ObjectSignature(const ObjectInfo& info) {
  source::Signature s;
  s.size = info.size;
  s.mtime_ns = info.mtime * 1000000000LL;
  s.tag = !info.etag.empty() ? info.etag : info.last_modified;
  return s;
}

namespace {

// A contiguous frame up to this size is fetched whole by its first read and
// kept in the mount's block cache (keyed by its URL and version, charged in
// cache_size, evicted like a block: the next read then fetches it again):
// the open's header and trailer windows, every chunk head and every block
// then cost one GET, where reading it by parts cost up to nine requests and
// 1.3 times its bytes (a 78 KB container, docs/remote.md). Above it, or when
// the cache is too small to keep a few such objects in a shard, a container
// is read by ranges.
constexpr int64_t kWholeObjectMaxBytes = int64_t{1} << 20;

// A Range read of one version of an object: through the disk cache when
// there is one. A changed object's ranges are dropped from it.
Status FetchRange(HttpClient& client, DiskCache* disk_cache, const std::string& url, int64_t offset,
                  size_t length, uint8_t* out, const ObjectInfo& info) {
  auto fetch = [&](int64_t at, size_t n, uint8_t* into) {
    return client.GetRange(url, at, n, into, info);
  };
  Status s = disk_cache != nullptr
                 ? disk_cache->Read(url, info.etag, info.size, offset, length, out, fetch)
                 : fetch(offset, length, out);
  if (s.error_number() == ESTALE && disk_cache != nullptr) disk_cache->Forget(url);
  return s;
}

// Values computed from one version of a remote container, kept in the disk
// cache under its URL and version (DiskCache::StoreComputed).
class DiskDerivedStore final : public source::DerivedStore {
 public:
  DiskDerivedStore(std::shared_ptr<DiskCache> disk_cache, std::string url, std::string etag,
                   int64_t size)
      : disk_cache_(std::move(disk_cache)),
        url_(std::move(url)),
        etag_(std::move(etag)),
        size_(size) {}
  bool Contains(std::string_view key) const override {
    return disk_cache_->HoldsComputed(url_, etag_, size_, key);
  }
  bool Get(std::string_view key, std::span<uint8_t> out) const override {
    return disk_cache_->ReadComputed(url_, etag_, size_, key, out);
  }
  void Put(std::string_view key, std::span<const uint8_t> bytes) const override {
    disk_cache_->StoreComputed(url_, etag_, size_, key, bytes);
  }

 private:
  const std::shared_ptr<DiskCache> disk_cache_;
  const std::string url_;
  const std::string etag_;
  const int64_t size_;
};

// One generation of a remote container: an object, or a sparse frame's
// directory of objects. Every read names the version it expects.
class ObjectSource final : public source::ByteSource {
 public:
  ObjectSource(std::shared_ptr<HttpClient> client, std::shared_ptr<DiskCache> disk_cache,
               cache::BlockCache* cache, std::string url, std::string name, bool sparse,
               source::Signature signature, std::optional<ObjectInfo> frame, Listing listing)
      : client_(std::move(client)),
        disk_cache_(std::move(disk_cache)),
        cache_(cache),
        url_(std::move(url)),
        name_(std::move(name)),
        sparse_(sparse),
        signature_(std::move(signature)),
        frame_(std::move(frame)),
        listing_(std::move(listing)),
        derived_(MakeDerivedStore()) {}

  const std::string& name() const override { return name_; }
  bool sparse() const override { return sparse_; }
  const source::Signature& signature() const override { return signature_; }
  const source::DerivedStore* derived_store() const override { return derived_.get(); }
  bool found_stale() const override { return stale_.load(std::memory_order_relaxed); }
  // A request costs a round trip: bytes up to this far apart are fetched in
  // one, within the plan's 25% waste bound (store/read_plan.h).
  source::CostProfile cost() const override {
    source::CostProfile cost;
    cost.merge_gap = int64_t{1} << 20;
    cost.max_read = int64_t{8} << 20;
    cost.batch_reads = true;
    cost.latency = source::CostProfile::Latency::kNetwork;
    return cost;
  }

  Result<int64_t> PartSize(int64_t part) const override {
    B2NDFS_ASSIGN_OR_RETURN(const ObjectInfo info, Part(part));
    return info.size;
  }

  Status Read(int64_t part, int64_t offset, size_t length, uint8_t* out) const override {
    B2NDFS_ASSIGN_OR_RETURN(const ObjectInfo info, Part(part));
    if (offset < 0 || offset > info.size || static_cast<int64_t>(length) > info.size - offset) {
      return InvalidData(RedactUrl(PartUrl(part)) + ": read of " + std::to_string(length) +
                         " bytes at " + std::to_string(offset) + " passes its end (" +
                         std::to_string(info.size) + " bytes)");
    }
    if (Whole(part)) return ReadWhole(offset, length, out);
    Status s = FetchRange(*client_, disk_cache_.get(), PartUrl(part), offset, length, out, info);
    if (s.error_number() == ESTALE) stale_.store(true, std::memory_order_relaxed);
    return s;
  }

  // Every range that the disk cache does not hold goes out at once
  // (HttpClient::GetRanges). With a disk cache, a read is looked up first
  // and the bytes it misses (one span, as DiskCache::Read would fetch) are
  // deferred to the batch; once they land, the same lookup runs again and
  // finds them already in place, so the cache stores and counts them as it
  // would for a single read.
  void ReadMany(std::span<const source::PartRead> reads,
                const source::ReadDone& done) const override {
    struct Pending {
      size_t read = 0;
      std::string url;
      ObjectInfo info;
      int64_t offset = 0;  // of the bytes to fetch
      size_t length = 0;
      uint8_t* out = nullptr;
    };
    std::vector<Pending> pending;
    pending.reserve(reads.size());
    for (size_t i = 0; i < reads.size(); ++i) {
      const source::PartRead& r = reads[i];
      auto info = Part(r.part);
      Status s = info.ok() ? Status::Ok() : info.status();
      if (s.ok() && (r.offset < 0 || r.offset > info->size ||
                     static_cast<int64_t>(r.length) > info->size - r.offset)) {
        s = InvalidData(RedactUrl(PartUrl(r.part)) + ": read of " + std::to_string(r.length) +
                        " bytes at " + std::to_string(r.offset) + " passes its end (" +
                        std::to_string(info->size) + " bytes)");
      }
      const bool whole = s.ok() && Whole(r.part);
      if (whole) s = ReadWhole(r.offset, r.length, r.out);
      if (!s.ok() || whole) {
        done(i, s);
        continue;
      }
      Pending p{i, PartUrl(r.part), *info, r.offset, r.length, r.out};
      if (disk_cache_ != nullptr && !p.info.etag.empty() && r.length > 0) {
        bool deferred = false;
        s = disk_cache_->Read(p.url, p.info.etag, p.info.size, r.offset, r.length, r.out,
                              [&](int64_t at, size_t n, uint8_t* into) {
                                deferred = true;
                                p.offset = at;
                                p.length = n;
                                p.out = into;
                                return Status(EAGAIN, "deferred");
                              });
        if (!deferred) {
          done(i, s);
          continue;
        }
      }
      pending.push_back(std::move(p));
    }
    std::vector<RangeGet> gets(pending.size());
    for (size_t j = 0; j < pending.size(); ++j) {
      gets[j] = RangeGet{&pending[j].url, pending[j].offset, pending[j].length, pending[j].out,
                         &pending[j].info};
    }
    client_->GetRanges(gets, [&](size_t j, const Status& fetched) {
      const Pending& p = pending[j];
      const source::PartRead& r = reads[p.read];
      Status s = fetched;
      if (s.ok() && disk_cache_ != nullptr && !p.info.etag.empty()) {
        s = disk_cache_->Read(p.url, p.info.etag, p.info.size, r.offset, r.length, r.out,
                              [&](int64_t at, size_t n, uint8_t* into) {
                                if (at == p.offset && n == p.length && into == p.out) {
                                  return Status::Ok();  // landed there already
                                }
                                return client_->GetRange(p.url, at, n, into, p.info);
                              });
      }
      if (s.error_number() == ESTALE) {
        stale_.store(true, std::memory_order_relaxed);
        if (disk_cache_ != nullptr) disk_cache_->Forget(p.url);
      }
      done(p.read, s);
    });
  }

 private:
  // Whether reads of `part` are served from the whole object (see
  // kWholeObjectMaxBytes).
  bool Whole(int64_t part) const {
    return part == source::kFramePart && !sparse_ && frame_ && frame_->size > 0 &&
           frame_->size <= kWholeObjectMaxBytes && cache_ != nullptr &&
           cache_->CanRetain(static_cast<size_t>(frame_->size) * 4);
  }

  // Bytes [offset, offset + length) of the whole object, from the block
  // cache, or fetched (one GET, at the version of the open) by the first of
  // the readers that ask at once. A failed fetch is not kept: the next read
  // asks again.
  Status ReadWhole(int64_t offset, size_t length, uint8_t* out) const {
    const std::string identity = url_ + "|" + std::to_string(frame_->size) + "|" + frame_->etag +
                                 "|" + frame_->last_modified;
    auto bytes = cache_->GetOrLoad(
        cache::NamedKey(cache::EntryKind::kWholeObject, identity), [&]() -> Result<cache::Value> {
          auto fetched = std::make_shared<cache::Bytes>(static_cast<size_t>(frame_->size));
          Status s = FetchRange(*client_, disk_cache_.get(), PartUrl(source::kFramePart), 0,
                                fetched->size(), fetched->data(), *frame_);
          if (s.error_number() == ESTALE) stale_.store(true, std::memory_order_relaxed);
          B2NDFS_RETURN_IF_ERROR(s);
          return cache::Value(std::move(fetched));
        });
    B2NDFS_RETURN_IF_ERROR(bytes.status());
    const cache::Bytes& whole = **bytes;
    if (offset < 0 || offset > static_cast<int64_t>(whole.size()) ||
        length > whole.size() - static_cast<size_t>(offset)) {
      return InvalidData(name_ + ": read of " + std::to_string(length) + " bytes at " +
                         std::to_string(offset) + " passes its end");
    }
    std::copy_n(whole.data() + offset, length, out);
    return Status::Ok();
  }

  // Values computed from this version are kept in the disk cache when the
  // version is named by ETags alone: a contiguous frame's object's; a sparse
  // frame's chunks.b2frame's and its listing's, when that lists an ETag for
  // every object (kept under the directory's URL with a '/', which names no
  // object; without ETags, a chunk object rewritten with the same size
  // would not change the version).
  std::unique_ptr<const source::DerivedStore> MakeDerivedStore() const {
    if (disk_cache_ == nullptr || !frame_ || frame_->etag.empty()) return nullptr;
    if (!sparse_)
      return std::make_unique<DiskDerivedStore>(disk_cache_, url_, frame_->etag, frame_->size);
    if (listing_ == nullptr) return nullptr;
    for (const IndexEntry& e : *listing_) {
      if (!e.directory && e.etag.empty()) return nullptr;
    }
    return std::make_unique<DiskDerivedStore>(
        disk_cache_, url_ + "/", frame_->etag + "|" + std::to_string(signature_.dir_inode),
        frame_->size);
  }

  std::string PartUrl(int64_t part) const {
    if (part == source::kFramePart) return sparse_ ? url_ + "/" + source::kSparseFrameIndex : url_;
    return url_ + "/" + source::SparseChunkFileName(part);
  }

  // The version of a part this generation reads: the frame's from the
  // open; a chunk object's from the sparse frame's listing made when the
  // generation opened (its signature hashes it), so that a chunk object
  // rewritten after the open answers a read with 412 (ESTALE), never with
  // another version's bytes. A listing that names no ETags (a web server's
  // index) leaves the version to the chunk object's HEAD at its first use,
  // which must agree with the listed size; a rewrite of the same size before
  // that first use is not seen there (a HEAD of every chunk object at the
  // open would cost a round trip each).
  Result<ObjectInfo> Part(int64_t part) const {
    if (part < source::kFramePart || (part != source::kFramePart && !sparse_)) {
      return InvalidData("no chunk file " + std::to_string(part) + " in a contiguous frame");
    }
    if (part == source::kFramePart) {
      if (!frame_) return InvalidData(name_ + " has no " + source::kSparseFrameIndex);
      return *frame_;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = chunks_.find(part);
      if (it != chunks_.end()) return it->second;
    }
    const IndexEntry* listed = Listed(source::SparseChunkFileName(part));
    if (listed == nullptr) {
      return NotFound(RedactUrl(PartUrl(part)) + ": not in the listing of this version");
    }
    ObjectInfo info;
    if (!listed->etag.empty() && listed->size >= 0) {
      info.size = listed->size;
      info.etag = listed->etag;
      info.mtime = listed->mtime;
    } else {
      B2NDFS_ASSIGN_OR_RETURN(info, client_->Head(PartUrl(part)));
      if (info.size < 0) return Status(EIO, RedactUrl(PartUrl(part)) + ": no Content-Length");
      if ((listed->size >= 0 && info.size != listed->size) ||
          (!listed->etag.empty() && info.etag != listed->etag)) {
        stale_.store(true, std::memory_order_relaxed);
        return Status(ESTALE, RedactUrl(PartUrl(part)) + ": changed since this version was listed");
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    return chunks_.try_emplace(part, std::move(info)).first->second;
  }

  const IndexEntry* Listed(const std::string& name) const {
    if (listing_ == nullptr) return nullptr;
    auto it =
        std::lower_bound(listing_->begin(), listing_->end(), name,
                         [](const IndexEntry& e, const std::string& n) { return e.name < n; });
    return it != listing_->end() && it->name == name && !it->directory ? &*it : nullptr;
  }

  const std::shared_ptr<HttpClient> client_;
  const std::shared_ptr<DiskCache> disk_cache_;
  cache::BlockCache* const cache_;  // small objects fetched whole; may be null
  const std::string url_;
  const std::string name_;
  const bool sparse_;
  const source::Signature signature_;
  const std::optional<ObjectInfo> frame_;
  const Listing listing_;  // a sparse frame's directory, sorted by name
  mutable std::atomic<bool> stale_{false};
  mutable std::mutex mutex_;  // leaf lock; guards chunks_
  mutable std::unordered_map<int64_t, ObjectInfo> chunks_;
  const std::unique_ptr<const source::DerivedStore> derived_;  // may be null
};

class ObjectFile final : public source::PlainFile {
 public:
  ObjectFile(std::shared_ptr<HttpClient> client, std::shared_ptr<DiskCache> disk_cache,
             std::string url, ObjectInfo info)
      : client_(std::move(client)),
        disk_cache_(std::move(disk_cache)),
        url_(std::move(url)),
        info_(std::move(info)),
        version_(ObjectSignature(info_)) {}
  const source::Signature& version() const override { return version_; }
  Result<size_t> ReadUpTo(int64_t offset, uint8_t* out, size_t length) const override {
    if (offset < 0) return Status(EINVAL, "negative offset");
    if (offset >= info_.size) return size_t{0};
    const size_t n =
        static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(length), info_.size - offset));
    B2NDFS_RETURN_IF_ERROR(FetchRange(*client_, disk_cache_.get(), url_, offset, n, out, info_));
    return n;
  }

 private:
  const std::shared_ptr<HttpClient> client_;
  const std::shared_ptr<DiskCache> disk_cache_;
  const std::string url_;
  const ObjectInfo info_;
  const source::Signature version_;
};
}  // namespace

std::shared_ptr<const source::ByteSource> MakeObjectSource(
    std::shared_ptr<HttpClient> client, std::shared_ptr<DiskCache> disk_cache,
    cache::BlockCache* cache, std::string url, std::string name, bool sparse,
    source::Signature signature, std::optional<ObjectInfo> frame, Listing listing) {
  return std::make_shared<ObjectSource>(std::move(client), std::move(disk_cache), cache,
                                        std::move(url), std::move(name), sparse,
                                        std::move(signature), std::move(frame), std::move(listing));
}

std::shared_ptr<const source::PlainFile> MakeObjectFile(std::shared_ptr<HttpClient> client,
                                                        std::shared_ptr<DiskCache> disk_cache,
                                                        std::string url, ObjectInfo info) {
  return std::make_shared<ObjectFile>(std::move(client), std::move(disk_cache), std::move(url),
                                      std::move(info));
}

}  // namespace b2ndfs::remote
