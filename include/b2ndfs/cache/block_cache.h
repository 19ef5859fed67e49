// cache/block_cache: a sharded LRU of immutable byte buffers (decompressed
// blocks and compressed chunks), bounded in bytes, with single-flight loads.
//
// Values are shared_ptr<const Bytes>: eviction drops the cache's reference
// only, so a reader still copying from a block keeps it alive. Concurrent
// GetOrLoad() calls for the same key run the loader once; the others wait for
// its result (errors are not cached). Bytes are charged when inserted; an
// entry larger than a shard's budget is returned but not kept.
//
// Accounting: an entry is charged value->size() + kEntryOverheadBytes (the
// list node, map node, shared_ptr control block and vector header it costs).
// Each of the `shards` shards gets capacity/shards bytes (the remainder is
// spread over the first shards) and evicts least-recently-used entries until
// its charges fit. Choose capacity so a shard's budget holds several of the
// largest values, or they will never be retained. capacity 0 caches nothing
// but loads are still single-flight.
// External charges (Charge()) count memory held elsewhere on the same
// budget, as one accounting pool: container metadata, chunk indexes and
// rendered documents. Their total is spread over the shards, which evict
// blocks to make room.
// Objects: a value that is not bytes (a python-blosc2 store's parsed index)
// is held as an ObjectValue, a Value of no bytes that owns the object and
// says what it costs; GetOrLoadObject() loads it through the same single
// flight and LRU as blocks, charged ChargeFor(its declared bytes). Keys of
// kind kObject hold ObjectValues only: use them with GetOrLoadObject(),
// TryGetObject() and EraseContainer() alone. Other kinds that outlive one
// container generation (embed chunks, whole remote objects) are bytes keyed
// by cache_id.h's NamedKey(): their source's name and signature.
// Errors: a loader's non-OK Result is handed to every waiter and not cached
// (the next call retries); a loader that throws yields ENOMEM (bad_alloc) or
// EIO (anything else), and one that returns a null Value yields EIO. The
// single flight is util/single_flight.h's (a FlightTable per shard, under
// the shard's mutex, so that a lookup and joining a load are one step).
// Thread-safety: every method may be called from any thread; the cache must
// outlive every call in progress.
// Lock order: charge_mutex_ before one shard mutex at a time; one shard
// mutex at a time, then (never while holding it) the mutex of one in-flight
// load (util/single_flight.h's Flight); loaders run with no lock held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "b2ndfs/cache/buffer_memory.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::cache {

// Leaves new elements uninitialised: block and chunk buffers are always
// overwritten in full (by decompression or a read), and zero-filling them
// first cost ~15% of a cold read. Large buffers come from buffer_memory.h
// (slabs of present, huge-page-backed memory, reused as soon as freed).
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  // Large buffers are at least 4 KiB-aligned; small ones use operator new.
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kSlabSlotMinBytes) return std::allocator<T>::allocate(n);
    return static_cast<T*>(AllocateLargeBuffer(bytes));
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kSlabSlotMinBytes) return std::allocator<T>::deallocate(p, n);
    FreeLargeBuffer(p, bytes);
  }
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}  // NOLINT
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

using Bytes = std::vector<uint8_t, UninitializedAllocator<uint8_t>>;
using Value = std::shared_ptr<const Bytes>;

enum class EntryKind : uint8_t {
  kBlock = 0,
  kCompressedChunk = 1,
  kOther = 2,
  kEmbedChunk = 3,   // a decompressed piece of a store's embed frame chunk
  kWholeObject = 4,  // a small remote object fetched whole
  kObject = 5,       // an ObjectValue (see above)
};

struct Key {
  uint64_t container_id = 0;  // unique per opened container generation
  int64_t chunk = 0;
  int64_t block = 0;
  EntryKind kind = EntryKind::kBlock;
  bool operator==(const Key&) const = default;
};

// A typed value held by the cache: no bytes of its own, it owns `object`
// and counts `charge_bytes` (what the object holds) against the budget.
struct ObjectValue final : Bytes {
  std::shared_ptr<const void> object;
  size_t charge_bytes = 0;
};

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;        // lookups that had to load (or found nothing)
  uint64_t shared_waits = 0;  // misses that waited for another thread's load
  uint64_t evictions = 0;     // entries dropped to fit the budget only
  uint64_t inserts = 0;       // values retained (oversize ones are not)
  uint64_t load_errors = 0;   // failed loads (once per load, not waiter)
  uint64_t bytes_loaded = 0;  // bytes of values produced by loaders
  size_t bytes_cached = 0;    // sum of charges (see ChargeFor)
  size_t entries = 0;
  size_t capacity_bytes = 0;
  size_t external_bytes = 0;  // charged from outside the cache (Charge)
};

// What the daemon holds beyond cache_size and its pin budget (blocks readers
// copy from outside the cache, store/pin_budget.h), at most: the program and
// its libraries, thread stacks, decompression contexts' scratch, request and
// reply buffers, and metadata being parsed (a store's central directory of
// at most 32 MiB and its members, before the index is charged to the cache;
// a listing page). README.md, "Runtime statistics" (cache.memory_bound_bytes)
// documents it; fuse.stores checks the daemon's peak RSS against it.
constexpr size_t kDaemonOverheadBytes = size_t{128} << 20;

class BlockCache {
 public:
  // capacity_bytes is split evenly across `shards` (rounded to >= 1 shard).
  explicit BlockCache(size_t capacity_bytes, int shards = 16);
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // Returns the cached value, or runs `loader` (once across concurrent
  // callers of the same key) and caches what it returns.
  Result<Value> GetOrLoad(const Key& key, const std::function<Result<Value>()>& loader);
  // The same for a typed object (key.kind is set to kObject): `loader`
  // returns the object and the bytes it holds.
  struct LoadedObject {
    std::shared_ptr<const void> object;
    size_t bytes = 0;
  };
  Result<std::shared_ptr<const void>> GetOrLoadObject(
      Key key, const std::function<Result<LoadedObject>()>& loader);
  template <typename T>
  Result<std::shared_ptr<const T>> GetOrLoadObjectAs(
      const Key& key, const std::function<Result<LoadedObject>()>& loader) {
    B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const void> object, GetOrLoadObject(key, loader));
    return std::static_pointer_cast<const T>(std::move(object));
  }
  // The cached object of `key` (kind set to kObject), or nullptr; no stats.
  std::shared_ptr<const void> TryGetObject(Key key);
  // Cached value or nullptr; counts a hit or a miss.
  Value Lookup(const Key& key);
  // Cached value (made most recently used) or nullptr. A value found counts
  // as a hit unless `count` is kNo; nothing found counts nothing: for a fast
  // path before GetOrLoad, which counts the miss. kNo is for probes that may
  // be abandoned for a path that looks the same keys up again: their caller
  // reports what it used with CountHits, so that no lookup counts twice.
  enum class Count : uint8_t { kYes, kNo };
  Value TryGet(const Key& key, Count count = Count::kYes);
  void CountHits(uint64_t n);
  // Starts loading where `key`'s entry is looked up (no lock, no stats): a
  // reader about to look up a run of keys issues this a few keys ahead.
  void Prefetch(const Key& key) const;
  // True when cached (no stats, no LRU touch): for read-ahead decisions.
  bool Contains(const Key& key) const;
  // True when cached or being loaded by a GetOrLoad: read-ahead has no
  // reason to wait for a load already on its way (a worker would block on
  // it, and read-ahead runs on few workers).
  bool ContainsOrLoading(const Key& key) const;
  // Caches `value` (replacing any entry of `key`); null values are ignored.
  void Insert(const Key& key, Value value);
  // Drops every entry of a container (it changed on disk or was closed).
  // Loads of that container still in flight reach their waiters but are not
  // cached, so no stale block survives the call.
  void EraseContainer(uint64_t container_id);
  // Drops every entry; loads in flight are likewise not cached.
  void Clear();
  // Adds (or, negative, returns) bytes held outside the cache that count
  // against its capacity; blocks are evicted to make room.
  void Charge(int64_t delta_bytes);

  CacheStats stats() const;
  size_t capacity_bytes() const { return capacity_bytes_; }
  int shard_count() const { return static_cast<int>(shards_.size()); }

  // Fixed bookkeeping cost added to every entry's charge.
  static constexpr size_t kEntryOverheadBytes = 128;
  // What an entry holding `value_bytes` bytes counts against the budget.
  static constexpr size_t ChargeFor(size_t value_bytes) {
    return value_bytes + kEntryOverheadBytes;
  }
  // What the entry of `key` holding `value` counts (an ObjectValue: its
  // declared bytes).
  static size_t ChargeOf(const Key& key, const Bytes& value) {
    return key.kind == EntryKind::kObject
               ? ChargeFor(static_cast<const ObjectValue&>(value).charge_bytes)
               : ChargeFor(value.size());
  }
  // True when a value of `value_bytes` bytes can be retained at all (it fits
  // a shard's budget): callers choose smaller units otherwise.
  bool CanRetain(size_t value_bytes) const {
    return ChargeFor(value_bytes) <= capacity_bytes_ / shards_.size();
  }

 private:
  struct Shard;
  Shard& ShardFor(uint64_t key_hash) const;
  size_t capacity_bytes_;
  std::vector<std::unique_ptr<Shard>> shards_;
  mutable std::mutex charge_mutex_;  // guards external_bytes_
  int64_t external_bytes_ = 0;
};

}  // namespace b2ndfs::cache
