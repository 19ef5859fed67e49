#include "b2ndfs/cache/block_cache.h"

#include <atomic>
#include <cerrno>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include "b2ndfs/util/single_flight.h"
#include "b2ndfs/util/weighted_lru.h"
#include "key_index.h"

namespace b2ndfs::cache {

namespace {

// One finalizer over a multiply-add of the fields (distinct odd multipliers,
// so blocks, chunks and containers do not cancel out): a warm read hashes
// every block it touches (once: the high half picks the shard, the low half
// the slot), and four rounds of Mix() were a tenth of its lookup.
uint64_t HashKey(const Key& key) {
  return Mix(key.container_id * 0x9e3779b97f4a7c15ULL +
             static_cast<uint64_t>(key.chunk) * 0xc2b2ae3d27d4eb4fULL +
             static_cast<uint64_t>(key.block) * 0x165667b19e3779f9ULL +
             static_cast<uint64_t>(key.kind));
}

struct KeyHash {
  size_t operator()(const Key& key) const { return static_cast<size_t>(HashKey(key)); }
};

using Flights = FlightTable<Key, Result<Value>, KeyHash>;

// The LRU's index: cache/key_index.h's table, handed the key's hash that
// also picked the shard.
struct BlockIndex {
  template <typename Handle>
  class For {
   public:
    using Hint = uint64_t;
    static uint64_t HintOf(const Key& key) { return HashKey(key); }
    const Handle* Find(const Key& key, uint64_t hash) const { return index_.Find(key, hash); }
    void Insert(const Key&, uint64_t hash, Handle handle) { index_.Insert(hash, handle); }
    void Erase(const Key& key, uint64_t hash) { index_.Erase(key, hash); }
    void Clear() { index_.clear(); }
    void Prefetch(uint64_t hash) const { index_.Prefetch(hash); }

   private:
    struct KeyOf {
      const Key& operator()(const Handle& handle) const { return handle->key; }
    };
    KeyIndex<Key, Handle, KeyOf> index_;
  };
};

}  // namespace

// Aligned to a cache line so counters of neighbouring shards, bumped by
// different threads, do not share one.
struct alignas(64) BlockCache::Shard {
  // Entries weigh their charge (ChargeOf).
  using Lru = util::WeightedLru<Key, Value, BlockIndex>;
  using List = Lru::Entries;

  explicit Shard(size_t budget_bytes) : budget(budget_bytes) { lru.set_limits(Room()); }

  // Lock order: taken alone (one shard at a time), before a flight's own
  // mutex (util/single_flight.h); loaders run after it is released.
  mutable std::mutex mu;
  const size_t budget;
  size_t reserved = 0;  // this shard's share of external charges; guarded by mu
  Lru lru;              // guarded by mu
  Flights in_flight;    // guarded by mu

  // This shard's share of CacheStats' tallies (each counted as it says
  // there). Relaxed: read together only by stats(), never to decide.
  std::atomic<uint64_t> hits{0}, misses{0}, shared_waits{0};
  std::atomic<uint64_t> evictions{0}, inserts{0};
  std::atomic<uint64_t> load_errors{0}, bytes_loaded{0};

  // The entries' room: the budget less the reservation.
  Lru::Limits Room() const { return {Lru::kUnbounded, reserved < budget ? budget - reserved : 0}; }

  // Looks `key` up and marks it most recently used; nullptr when absent.
  Value TouchLocked(const Key& key, uint64_t hash) {
    const Value* value = lru.Find(key, hash);
    return value == nullptr ? nullptr : *value;
  }

  // Caches `value` under `key`, evicting from the tail to fit the budget
  // (into `dropped`, which the caller destroys after unlocking). A value
  // charged more than the whole budget is not kept (and any older entry of
  // the key is dropped regardless).
  void RetainLocked(const Key& key, uint64_t hash, Value value, List* dropped) {
    const size_t charge = ChargeOf(key, *value);
    if (charge + reserved > budget) {
      lru.Erase(key, hash, dropped);
      return;
    }
    const size_t evicted = lru.Insert(key, hash, std::move(value), charge, dropped);
    inserts.fetch_add(1, std::memory_order_relaxed);
    evictions.fetch_add(evicted, std::memory_order_relaxed);
  }

  // Evicts from the tail until the entries and the reservation fit.
  void FitLocked(List* dropped) {
    lru.set_limits(Room());
    evictions.fetch_add(lru.Trim(dropped), std::memory_order_relaxed);
  }

  // Ends the load of `key` by `flight`: unregisters it and caches a good
  // result unless EraseContainer/Clear abandoned it meanwhile. Takes `mu`.
  void Complete(const Key& key, uint64_t hash, const Flight<Result<Value>>& flight,
                const Result<Value>& result) noexcept {
    List dropped;  // outlives the lock: evicted buffers are freed unlocked
    std::lock_guard<std::mutex> lock(mu);
    // The record may be gone (abandoned) or replaced by a newer load.
    in_flight.RemoveLocked(key, &flight);
    if (!result.ok()) {
      load_errors.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    bytes_loaded.fetch_add((*result)->size(), std::memory_order_relaxed);
    if (flight.abandoned()) return;
    try {
      RetainLocked(key, hash, *result, &dropped);
    } catch (const std::bad_alloc&) {
      // Not cached; the waiters still get the value.
    }
  }

  // Detaches in-flight loads matching `pred` so their results are not cached
  // and later callers start a fresh load.
  template <typename Pred>
  void AbandonInFlightLocked(Pred pred) {
    in_flight.AbandonLocked(pred);
  }
};

BlockCache::BlockCache(size_t capacity_bytes, int shards) : capacity_bytes_(capacity_bytes) {
  const size_t n = shards < 1 ? 1 : static_cast<size_t>(shards);
  shards_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // The remainder goes to the first shards so the budgets sum to capacity.
    const size_t budget = capacity_bytes / n + (i < capacity_bytes % n ? 1 : 0);
    shards_.push_back(std::make_unique<Shard>(budget));
  }
}

BlockCache::~BlockCache() = default;

BlockCache::Shard& BlockCache::ShardFor(uint64_t hash) const {
  // The high half picks the shard; the index slots use the low bits, so the
  // two choices stay independent.
  return *shards_[static_cast<size_t>((hash >> 32) % shards_.size())];
}

Result<Value> BlockCache::GetOrLoad(const Key& key, const std::function<Result<Value>()>& loader) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  Flights::Joined joined;
  try {
    std::lock_guard<std::mutex> lock(shard.mu);
    if (Value hit = shard.TouchLocked(key, hash)) {
      shard.hits.fetch_add(1, std::memory_order_relaxed);
      return hit;
    }
    shard.misses.fetch_add(1, std::memory_order_relaxed);
    joined = shard.in_flight.JoinLocked(key);
    if (!joined.leader) shard.shared_waits.fetch_add(1, std::memory_order_relaxed);
  } catch (const std::bad_alloc&) {
    return Status(ENOMEM, "out of memory");
  }

  const Result<Value>* outcome = nullptr;
  if (joined.leader) {
    auto load = [&loader]() -> Result<Value> {
      Result<Value> result = loader();
      if (result.ok() && *result == nullptr) {
        return Status(EIO, "block loader returned no value");
      }
      return result;
    };
    // The cache is updated before the outcome is published: a caller
    // arriving in between already finds the value (or, after an error,
    // starts a fresh load).
    outcome = &LeadFlight(
        joined.flight, load,
        [&](const Result<Value>& result) noexcept {
          shard.Complete(key, hash, *joined.flight, result);
        },
        "block loader");
  } else {
    outcome = &joined.flight->Wait();
  }
  try {
    return *outcome;
  } catch (const std::bad_alloc&) {
    return Status(ENOMEM, "out of memory");
  }
}

Result<std::shared_ptr<const void>> BlockCache::GetOrLoadObject(
    Key key, const std::function<Result<LoadedObject>()>& loader) {
  key.kind = EntryKind::kObject;
  B2NDFS_ASSIGN_OR_RETURN(Value value, GetOrLoad(key, [&loader]() -> Result<Value> {
                            B2NDFS_ASSIGN_OR_RETURN(LoadedObject loaded, loader());
                            if (loaded.object == nullptr) return Value();
                            auto held = std::make_shared<ObjectValue>();
                            held->object = std::move(loaded.object);
                            held->charge_bytes = loaded.bytes;
                            return Value(std::move(held));
                          }));
  return static_cast<const ObjectValue&>(*value).object;
}

std::shared_ptr<const void> BlockCache::TryGetObject(Key key) {
  key.kind = EntryKind::kObject;
  Value value = TryGet(key, Count::kNo);
  if (value == nullptr) return nullptr;
  return static_cast<const ObjectValue&>(*value).object;
}

Value BlockCache::Lookup(const Key& key) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  std::lock_guard<std::mutex> lock(shard.mu);
  Value value = shard.TouchLocked(key, hash);
  (value ? shard.hits : shard.misses).fetch_add(1, std::memory_order_relaxed);
  return value;
}

Value BlockCache::TryGet(const Key& key, Count count) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  std::lock_guard<std::mutex> lock(shard.mu);
  Value value = shard.TouchLocked(key, hash);
  if (value && count == Count::kYes) shard.hits.fetch_add(1, std::memory_order_relaxed);
  return value;
}

void BlockCache::CountHits(uint64_t n) {
  // stats() sums the shards: any one of them may hold the count.
  shards_.front()->hits.fetch_add(n, std::memory_order_relaxed);
}

void BlockCache::Prefetch(const Key& key) const {
  const uint64_t hash = HashKey(key);
  ShardFor(hash).lru.index().Prefetch(hash);
}

bool BlockCache::Contains(const Key& key) const {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  std::lock_guard<std::mutex> lock(shard.mu);
  return shard.lru.Contains(key, hash);
}

bool BlockCache::ContainsOrLoading(const Key& key) const {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  std::lock_guard<std::mutex> lock(shard.mu);
  return shard.lru.Contains(key, hash) || shard.in_flight.FindLocked(key) != nullptr;
}

void BlockCache::Insert(const Key& key, Value value) {
  if (value == nullptr) return;
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  Shard::List dropped;  // outlives the lock: freed after unlocking
  std::lock_guard<std::mutex> lock(shard.mu);
  try {
    shard.RetainLocked(key, hash, std::move(value), &dropped);
  } catch (const std::bad_alloc&) {
    // Caching is best effort: without memory for the index, skip it.
  }
}

void BlockCache::EraseContainer(uint64_t container_id) {
  for (const auto& shard_ptr : shards_) {
    Shard& shard = *shard_ptr;
    Shard::List dropped;
    std::lock_guard<std::mutex> lock(shard.mu);
    shard.lru.EraseIf(
        [container_id](const Shard::Lru::Entry& e) { return e.key.container_id == container_id; },
        &dropped);
    shard.AbandonInFlightLocked(
        [container_id](const Key& k) { return k.container_id == container_id; });
  }
}

void BlockCache::Clear() {
  for (const auto& shard_ptr : shards_) {
    Shard& shard = *shard_ptr;
    Shard::List dropped;
    std::lock_guard<std::mutex> lock(shard.mu);
    shard.lru.Clear(&dropped);
    shard.AbandonInFlightLocked([](const Key&) { return true; });
  }
}

void BlockCache::Charge(int64_t delta_bytes) {
  std::lock_guard<std::mutex> charge_lock(charge_mutex_);
  external_bytes_ += delta_bytes;
  if (external_bytes_ < 0) external_bytes_ = 0;
  const size_t n = shards_.size();
  const size_t external = static_cast<size_t>(external_bytes_);
  for (size_t i = 0; i < n; ++i) {
    Shard& shard = *shards_[i];
    Shard::List dropped;
    std::lock_guard<std::mutex> lock(shard.mu);
    shard.reserved = external / n + (i < external % n ? 1 : 0);
    shard.FitLocked(&dropped);
  }
}

CacheStats BlockCache::stats() const {
  CacheStats s;
  s.capacity_bytes = capacity_bytes_;
  {
    std::lock_guard<std::mutex> charge_lock(charge_mutex_);
    s.external_bytes = static_cast<size_t>(external_bytes_);
  }
  for (const auto& shard_ptr : shards_) {
    const Shard& shard = *shard_ptr;
    s.hits += shard.hits.load(std::memory_order_relaxed);
    s.misses += shard.misses.load(std::memory_order_relaxed);
    s.shared_waits += shard.shared_waits.load(std::memory_order_relaxed);
    s.evictions += shard.evictions.load(std::memory_order_relaxed);
    s.inserts += shard.inserts.load(std::memory_order_relaxed);
    s.load_errors += shard.load_errors.load(std::memory_order_relaxed);
    s.bytes_loaded += shard.bytes_loaded.load(std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(shard.mu);
    s.bytes_cached += shard.lru.weight();
    s.entries += shard.lru.size();
  }
  return s;
}

}  // namespace b2ndfs::cache
