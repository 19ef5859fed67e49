// remote/disk_cache: a node-local cache, on disk, of the byte ranges fetched
// from remote objects, so that a node's second mount of the same store is
// warm (-o disk_cache=DIR,disk_cache_size=SIZE).
//
// What is kept: the bytes of ranges exactly as they were fetched (compressed
// chunk bytes; nothing is decoded), one file per range under
// DIR/ranges/<URL key>/<version key>-<offset>-<length>. Both keys are hashes:
// the URL's without credentials or query (RedactUrl), and the version's (its
// ETag and size), so no name, key or secret is ever written to the directory.
// Computed values (source/derived_store.h: the blocks of a computed pyramid
// level) are kept beside the ranges, one file each, under
// DIR/ranges/<URL key>/c-<version key>-<value key>-<length>: scoped, tagged,
// bounded and dropped like the ranges of the same object and version (the
// value's key text is kept and checked in its header).
// Versions: a range is served only for the ETag and size it was fetched at
// (they are in its key, and again in its header). Storing a range of another
// version of a URL, or Forget() (a request found the object changed), drops
// every range of the old versions: old bytes cannot come back, even if the
// object's ETag later returns to an old value.
// Trust: DIR must be the daemon's own (owned by its user, not writable by
// group or others, not a symbolic link; CheckDirectory), and it holds a
// random key (DIR/key, mode 0600) made with it. A range file's header and
// every 64 KiB segment carry an HMAC-SHA256 tag under that key, checked on
// each read: a file planted or altered without the key, like a torn,
// truncated or otherwise corrupt one, is a miss (and is deleted), never
// wrong bytes. A directory given a new key (its first, or after the key
// file was deleted) drops every range it held.
// Crash safety: a range is written to DIR/tmp and renamed into place;
// temporary files left by a crash are deleted by Open().
// Bounds: the files' bytes stay within the capacity; the least recently used
// ranges are deleted first (recency survives restarts through the files'
// mtimes). A range larger than a quarter of the capacity is not kept.
// Ownership: one process per DIR. Open() takes an exclusive flock on DIR/lock
// for the cache's lifetime (inherited by a daemon's forked child); a second
// process gets EBUSY and mounts without the cache.
// Errors: Open() fails with the errno of what went wrong; Read() returns the
// fetch's Status; the cache's own I/O failures only make misses.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "b2ndfs/util/status.h"
#include "b2ndfs/util/weighted_lru.h"

namespace b2ndfs::remote {

struct DiskCacheStats {
  uint64_t capacity_bytes = 0;
  uint64_t bytes_on_disk = 0;  // files' bytes (headers included)
  uint64_t entries = 0;
  uint64_t hits = 0;    // reads served from disk alone
  uint64_t misses = 0;  // reads that fetched some or all of their bytes
  uint64_t bytes_hit = 0;
  uint64_t bytes_missed = 0;
  uint64_t bytes_stored = 0;
  uint64_t evictions = 0;
  uint64_t corrupt = 0;          // files torn, corrupt or not tagged with the key (deleted)
  uint64_t write_errors = 0;     // ranges that could not be stored
  uint64_t invalidations = 0;    // ranges dropped as of an old version
  uint64_t computed_hits = 0;    // computed values served from disk
  uint64_t computed_stored = 0;  // computed values written
};

class DiskCache {
 public:
  // Bytes of a range covered by one tag.
  static constexpr size_t kSegmentBytes = 64 << 10;

  // Whether DIR may be a disk cache, for a mount to refuse it before it
  // starts: creates a missing DIR (mode 0700); EACCES or ENOTDIR, with a
  // message saying why and what to do, for a symbolic link, a file, a
  // directory owned by another user or writable by group or others, or a
  // key file that is not this user's alone (mode 0600) or not a key.
  static Status CheckDirectory(const std::string& dir);

  // Opens DIR (checked as CheckDirectory does) and takes its lock; reads
  // its key, or makes one; indexes the ranges already there and deletes
  // what is over `capacity`. EBUSY if another process holds the lock.
  static Result<std::unique_ptr<DiskCache>> Open(const std::string& dir, uint64_t capacity);
  ~DiskCache();
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  // Fetches `length` bytes at `offset` of the object into `out` (the
  // network: what the cache does not hold).
  using Fetch = std::function<Status(int64_t offset, size_t length, uint8_t* out)>;

  // Reads `length` bytes at `offset` of object `url` at version (`etag`,
  // `size`): the bytes held for that version from disk, the rest through
  // `fetch` (one request spanning what is missing), which are then kept. An
  // empty `etag` bypasses the cache. Returns fetch's Status.
  Status Read(const std::string& url, const std::string& etag, int64_t size, int64_t offset,
              size_t length, uint8_t* out, const Fetch& fetch);

  // Drops every range of `url` (a request found that it changed).
  void Forget(const std::string& url);

  // Computed values of object `url` at version (`etag`, `size`), under a
  // key (source/derived_store.h; an empty `etag` holds none). Whether one
  // is indexed; the value into `out` when it is held with exactly
  // out.size() bytes and verifies (a file that does not is deleted and
  // counted in `corrupt`); keeps `bytes` (a write error only counted).
  bool HoldsComputed(const std::string& url, const std::string& etag, int64_t size,
                     std::string_view key);
  bool ReadComputed(const std::string& url, const std::string& etag, int64_t size,
                    std::string_view key, std::span<uint8_t> out);
  void StoreComputed(const std::string& url, const std::string& etag, int64_t size,
                     std::string_view key, std::span<const uint8_t> bytes);

  DiskCacheStats stats() const;
  const std::string& dir() const { return dir_; }

 private:
  static constexpr size_t kKeyBytes = 32;
  using Key = std::array<uint8_t, kKeyBytes>;
  // A range file in the index (its name: disk_cache_file.h), or a computed
  // value's (`computed` != 0, the hash of its key; offset 0).
  struct Entry {
    uint64_t url_key = 0;
    uint64_t version_key = 0;
    int64_t offset = 0;
    int64_t length = 0;
    int64_t touched = 0;  // seconds since the epoch of the mtime we last set
    uint64_t computed = 0;
  };
  // (url_key, offset, length, computed): which range or value of which URL.
  struct RangeKey {
    uint64_t url_key = 0;
    std::pair<int64_t, int64_t> range;
    uint64_t computed = 0;
    bool operator==(const RangeKey&) const = default;
  };
  struct RangeKeyHash {
    size_t operator()(const RangeKey& k) const;
  };
  // Entries weigh their files' bytes.
  using Lru = util::WeightedLru<RangeKey, Entry, util::HashIndex<RangeKey, RangeKeyHash>>;
  // A URL's ranges (of one version): by (offset, length); its computed
  // values: their lengths by the hashes of their keys.
  struct Object {
    uint64_t version = 0;
    int64_t max_length = 0;
    std::set<std::pair<int64_t, int64_t>> ranges;
    std::map<uint64_t, int64_t> computed;
    bool empty() const { return ranges.empty() && computed.empty(); }
  };

  DiskCache(std::string dir, uint64_t capacity, int lock_fd, const Key& key);
  void Scan(bool forget_all);
  std::string PathOf(const Entry& e) const;
  // Inserts a stored file into the index (mutex_ held); drops other versions.
  void Insert(const Entry& entry, uint64_t disk_bytes);
  void DropObject(uint64_t url_key);      // mutex_ held
  void Drop(const RangeKey& key);         // mutex_ held; unlinks the file
  void Unlink(const Lru::Entries& gone);  // mutex_ held: files of entries gone
  void Evict();                           // mutex_ held
  static RangeKey KeyOf(const Entry& e) {
    return RangeKey{e.url_key, {e.offset, e.length}, e.computed};
  }
  // Writes and indexes the file of `e` (of e.length bytes at `bytes`); its
  // header names `etag` (a computed value's: the ETag and its key). False
  // when it is not kept.
  bool Store(const Entry& e, const std::string& etag, const uint8_t* bytes);
  bool ReadEntry(const Entry& e, const std::string& etag, int64_t offset, size_t length,
                 uint8_t* out) const;
  // Re-stamps the mtimes of `held` entries not touched for a while (mutex_
  // held).
  void Touch(const std::vector<Entry>& held);

  const std::string dir_;
  const uint64_t capacity_;
  const int lock_fd_;
  const Key key_;             // of the range files' tags
  mutable std::mutex mutex_;  // leaf lock; guards everything below
  Lru lru_;                   // weight: bytes on disk, at most the capacity
  std::map<uint64_t, Object> objects_;
  uint64_t temp_counter_ = 0;
  DiskCacheStats counters_;  // the counting members only
};

}  // namespace b2ndfs::remote
