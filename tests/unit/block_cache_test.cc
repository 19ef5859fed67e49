// Unit tests of cache/block_cache: byte budget, LRU order, eviction safety,
// single-flight loads and their errors, and a multi-threaded stress run.
#include "b2ndfs/cache/block_cache.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <latch>
#include <mutex>
#include <new>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace b2ndfs::cache {
namespace {

using std::chrono::seconds;

// Failure guard for waits that a correct cache satisfies quickly; a broken
// one makes the test fail instead of hanging.
constexpr auto kGuard = seconds(20);

Key K(uint64_t container, int64_t chunk, int64_t block = 0, EntryKind kind = EntryKind::kBlock) {
  return Key{container, chunk, block, kind};
}

// Content derived from the key, so any mix-up between keys is visible.
uint8_t ByteOf(const Key& key, size_t i) {
  const uint64_t seed = key.container_id * 1000003u + static_cast<uint64_t>(key.chunk) * 7919u +
                        static_cast<uint64_t>(key.block) * 131u + static_cast<uint64_t>(key.kind);
  return static_cast<uint8_t>(((seed + i) * 2654435761u) >> 13);
}

size_t SizeOf(const Key& key) {
  return 1 + (static_cast<size_t>(ByteOf(key, 0)) * 16 + static_cast<size_t>(key.block)) % 3000;
}

Value MakeValue(const Key& key, size_t size) {
  auto bytes = std::make_shared<Bytes>(size);
  for (size_t i = 0; i < size; ++i) (*bytes)[i] = ByteOf(key, i);
  return bytes;
}

Value MakeValue(const Key& key) { return MakeValue(key, SizeOf(key)); }

bool Matches(const Key& key, const Value& value) {
  if (value == nullptr || value->size() != SizeOf(key)) return false;
  for (size_t i = 0; i < value->size(); ++i) {
    if ((*value)[i] != ByteOf(key, i)) return false;
  }
  return true;
}

// Spins (yielding) until `pred` holds or the guard expires.
template <typename Pred>
bool WaitUntil(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kGuard;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// A barrier with a timeout: true when `n` parties met.
class Rendezvous {
 public:
  explicit Rendezvous(int n) : n_(n) {}
  bool ArriveAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (++arrived_ >= n_) cv_.notify_all();
    return cv_.wait_for(lock, kGuard, [this] { return arrived_ >= n_; });
  }

 private:
  std::mutex mu_;  // Lock order: leaf.
  std::condition_variable cv_;
  int n_;
  int arrived_ = 0;
};

// A one-shot gate the test opens to release blocked loaders.
class Gate {
 public:
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kGuard, [this] { return open_; });
  }

 private:
  std::mutex mu_;  // Lock order: leaf.
  std::condition_variable cv_;
  bool open_ = false;
};

TEST_CASE("charges include the fixed per-entry overhead") {
  STATIC_REQUIRE(BlockCache::ChargeFor(0) == BlockCache::kEntryOverheadBytes);
  BlockCache cache(1 << 20, 1);
  cache.Insert(K(1, 0), MakeValue(K(1, 0), 1000));
  const CacheStats s = cache.stats();
  CHECK(s.entries == 1);
  CHECK(s.bytes_cached == BlockCache::ChargeFor(1000));
  CHECK(s.capacity_bytes == size_t{1} << 20);
}

TEST_CASE("shard count is at least one") {
  CHECK(BlockCache(1000, 0).shard_count() == 1);
  CHECK(BlockCache(1000, -3).shard_count() == 1);
  CHECK(BlockCache(1000, 7).shard_count() == 7);
}

TEST_CASE("byte budget is never exceeded by random inserts") {
  const int shards = GENERATE(1, 4, 16);
  const size_t capacity = GENERATE(size_t{0}, size_t{5000}, size_t{64 << 10});
  BlockCache cache(capacity, shards);
  std::mt19937_64 rng(12345u + static_cast<unsigned>(shards));
  std::uniform_int_distribution<size_t> size_dist(0, 20000);
  std::uniform_int_distribution<int64_t> key_dist(0, 400);
  for (int i = 0; i < 3000; ++i) {
    const Key key = K(1, key_dist(rng), 0);
    cache.Insert(key, MakeValue(key, size_dist(rng)));
    REQUIRE(cache.stats().bytes_cached <= capacity);
  }
  const CacheStats s = cache.stats();
  CHECK(s.bytes_cached <= capacity);
  if (capacity == 0) {
    CHECK(s.entries == 0);
    CHECK(s.inserts == 0);
  } else {
    CHECK(s.entries > 0);
    CHECK(s.evictions > 0);
  }
  // Each retained insert adds an entry, each eviction removes one, and a
  // replacement removes one more.
  CHECK(s.entries <= s.inserts - s.evictions);
}

TEST_CASE("budget holds on the GetOrLoad path too") {
  BlockCache cache(20000, 4);
  for (int64_t b = 0; b < 500; ++b) {
    const Key key = K(2, 0, b);
    auto r = cache.GetOrLoad(key, [&] { return Result<Value>(MakeValue(key)); });
    REQUIRE(r.ok());
    REQUIRE(Matches(key, *r));
    REQUIRE(cache.stats().bytes_cached <= 20000);
  }
  const CacheStats s = cache.stats();
  // Only fresh keys: entries are exactly what was retained minus evicted.
  CHECK(s.entries == s.inserts - s.evictions);
  CHECK(s.misses == 500);
}

TEST_CASE("ContainsOrLoading sees a load in flight; Contains does not") {
  BlockCache cache(1 << 20, 4);
  const Key k = K(1, 0);
  std::latch loading(1), release(1);
  std::thread loader([&] {
    auto r = cache.GetOrLoad(k, [&] {
      loading.count_down();
      release.wait();
      return Result<Value>(MakeValue(k));
    });
    CHECK(r.ok());
  });
  loading.wait();
  CHECK_FALSE(cache.Contains(k));
  CHECK(cache.ContainsOrLoading(k));
  CHECK_FALSE(cache.ContainsOrLoading(K(1, 1)));
  release.count_down();
  loader.join();
  CHECK(cache.Contains(k));
  CHECK(cache.ContainsOrLoading(k));
  // A failed load leaves nothing behind.
  const Key failing = K(1, 2);
  CHECK_FALSE(cache.GetOrLoad(failing, [] { return Result<Value>(Status(EIO, "boom")); }).ok());
  CHECK_FALSE(cache.ContainsOrLoading(failing));
}

TEST_CASE("TryGet counts hits unless told not to; CountHits adds them later") {
  BlockCache cache(1 << 20, 4);
  const Key a = K(1, 0), b = K(1, 1);
  cache.Insert(a, MakeValue(a));
  const CacheStats before = cache.stats();
  CHECK(Matches(a, cache.TryGet(a)));
  CHECK(cache.TryGet(b) == nullptr);  // nothing found: no miss either
  CHECK(cache.stats().hits == before.hits + 1);
  CHECK(Matches(a, cache.TryGet(a, BlockCache::Count::kNo)));
  CHECK(cache.stats().hits == before.hits + 1);
  cache.CountHits(5);
  CHECK(cache.stats().hits == before.hits + 6);
  CHECK(cache.stats().misses == before.misses);
}

TEST_CASE("LRU order with one shard") {
  const size_t kSize = 100;
  BlockCache cache(3 * BlockCache::ChargeFor(kSize), 1);
  const Key a = K(1, 0), b = K(1, 1), c = K(1, 2), d = K(1, 3), e = K(1, 4);
  cache.Insert(a, MakeValue(a, kSize));
  cache.Insert(b, MakeValue(b, kSize));
  cache.Insert(c, MakeValue(c, kSize));
  REQUIRE(cache.stats().entries == 3);

  // Touch a: b becomes the least recently used and goes first.
  REQUIRE(cache.Lookup(a) != nullptr);
  cache.Insert(d, MakeValue(d, kSize));
  CHECK(cache.Contains(a));
  CHECK_FALSE(cache.Contains(b));
  CHECK(cache.Contains(c));
  CHECK(cache.Contains(d));

  // Contains() does not count as use: c (oldest) is still evicted next.
  const CacheStats before = cache.stats();
  CHECK(cache.Contains(c));
  const CacheStats after = cache.stats();
  CHECK(after.hits == before.hits);
  CHECK(after.misses == before.misses);
  cache.Insert(e, MakeValue(e, kSize));
  CHECK_FALSE(cache.Contains(c));
  CHECK(cache.Contains(a));
  CHECK(cache.Contains(d));
  CHECK(cache.Contains(e));

  // A GetOrLoad hit touches too: a becomes most recent, d goes next.
  auto hit = cache.GetOrLoad(a, [] { return Result<Value>(Status(EIO, "x")); });
  REQUIRE(hit.ok());
  cache.Insert(b, MakeValue(b, kSize));
  CHECK_FALSE(cache.Contains(d));
  CHECK(cache.Contains(a));
  CHECK(cache.Contains(e));
  CHECK(cache.Contains(b));
  CHECK(cache.stats().evictions == 3);
}

TEST_CASE("a value held by a reader survives its eviction") {
  BlockCache cache(2 * BlockCache::ChargeFor(1000), 1);
  const Key key = K(1, 0);
  cache.Insert(key, MakeValue(key, 1000));
  Value held = cache.Lookup(key);
  REQUIRE(held != nullptr);
  for (int64_t i = 1; i <= 10; ++i) {
    cache.Insert(K(1, i), MakeValue(K(1, i), 1000));
  }
  REQUIRE_FALSE(cache.Contains(key));
  CHECK(held.use_count() == 1);  // the cache let go, the reader did not
  REQUIRE(held->size() == 1000);
  for (size_t i = 0; i < held->size(); ++i) REQUIRE((*held)[i] == ByteOf(key, i));
}

TEST_CASE("single-flight: concurrent callers of one key share one load") {
  const size_t capacity = GENERATE(size_t{0}, size_t{1} << 20);
  const int kThreads = 8;
  BlockCache cache(capacity, 4);
  const Key key = K(7, 3, 5);
  std::atomic<int> loads{0};
  std::latch start(kThreads);
  std::vector<Result<Value>> results(kThreads, Status(EINVAL, "not run"));
  auto loader = [&]() -> Result<Value> {
    loads.fetch_add(1);
    // Slow on purpose: finish only once every other caller is waiting.
    WaitUntil([&] { return cache.stats().shared_waits == kThreads - 1; });
    return MakeValue(key);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      results[t] = cache.GetOrLoad(key, loader);
    });
  }
  for (auto& th : threads) th.join();

  CHECK(loads.load() == 1);
  const CacheStats s = cache.stats();
  CHECK(s.misses == kThreads);
  CHECK(s.shared_waits == kThreads - 1);
  CHECK(s.hits == 0);
  CHECK(s.bytes_loaded == SizeOf(key));
  REQUIRE(results[0].ok());
  for (const auto& r : results) {
    REQUIRE(r.ok());
    CHECK(r->get() == results[0]->get());  // the same buffer, not copies
  }
  CHECK(Matches(key, *results[0]));
  CHECK(cache.Contains(key) == (capacity > 0));
}

TEST_CASE("loads of different keys run in parallel") {
  // One shard: both keys share a mutex, which must not be held by loaders.
  BlockCache cache(1 << 20, 1);
  Rendezvous both_loading(2);
  std::atomic<int> overlapped{0};
  auto run = [&](Key key) {
    return cache.GetOrLoad(key, [&, key]() -> Result<Value> {
      // Serialised loads would never meet here (the guard would expire).
      if (both_loading.ArriveAndWait()) overlapped.fetch_add(1);
      return MakeValue(key);
    });
  };
  Result<Value> r1 = Status(EINVAL, "not run");
  Result<Value> r2 = Status(EINVAL, "not run");
  std::thread t1([&] { r1 = run(K(1, 1)); });
  std::thread t2([&] { r2 = run(K(1, 2)); });
  t1.join();
  t2.join();
  CHECK(overlapped.load() == 2);
  REQUIRE(r1.ok());
  REQUIRE(r2.ok());
  CHECK(Matches(K(1, 1), *r1));
  CHECK(Matches(K(1, 2), *r2));
}

TEST_CASE("a load error reaches every waiter and is not cached") {
  const int kThreads = 8;
  BlockCache cache(1 << 20, 4);
  const Key key = K(3, 1, 1);
  std::atomic<int> loads{0};
  std::latch start(kThreads);
  std::vector<Result<Value>> results(kThreads, Status(EINVAL, "not run"));
  auto failing = [&]() -> Result<Value> {
    loads.fetch_add(1);
    WaitUntil([&] { return cache.stats().shared_waits == kThreads - 1; });
    return Status(EACCES, "chunk 1 is unreadable");
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      results[t] = cache.GetOrLoad(key, failing);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(loads.load() == 1);
  for (const auto& r : results) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().error_number() == EACCES);
    CHECK(r.status().message() == "chunk 1 is unreadable");
  }
  CHECK_FALSE(cache.Contains(key));
  CacheStats s = cache.stats();
  CHECK(s.load_errors == 1);
  CHECK(s.entries == 0);
  CHECK(s.bytes_loaded == 0);

  // The next call retries and its success is cached.
  auto ok = cache.GetOrLoad(key, [&]() -> Result<Value> {
    loads.fetch_add(1);
    return MakeValue(key);
  });
  REQUIRE(ok.ok());
  CHECK(Matches(key, *ok));
  CHECK(loads.load() == 2);
  CHECK(cache.Contains(key));
  s = cache.stats();
  CHECK(s.load_errors == 1);
  CHECK(s.inserts == 1);
}

TEST_CASE("a throwing loader becomes an error status for every waiter") {
  struct Case {
    const char* name;
    int expected_errno;
    std::function<Result<Value>()> thrower;
  };
  const std::vector<Case> cases = {
      {"runtime_error", EIO, []() -> Result<Value> { throw std::runtime_error("boom"); }},
      {"bad_alloc", ENOMEM, []() -> Result<Value> { throw std::bad_alloc(); }},
      {"non-standard", EIO, []() -> Result<Value> { throw 42; }},
      {"null value", EIO, []() -> Result<Value> { return Value(); }},
      {"empty function", EIO, std::function<Result<Value>()>()},
  };
  for (const Case& c : cases) {
    INFO("loader: " << c.name);
    {
      const int kThreads = 4;
      BlockCache cache(1 << 20, 2);
      const Key key = K(9, 9, 9);
      std::latch start(kThreads);
      std::vector<Result<Value>> results(kThreads, Status(EINVAL, "not run"));
      std::function<Result<Value>()> loader;
      if (c.thrower) {
        loader = [&]() -> Result<Value> {
          WaitUntil([&] { return cache.stats().shared_waits == kThreads - 1; });
          return c.thrower();
        };
      }
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          start.arrive_and_wait();
          results[t] = cache.GetOrLoad(key, loader);
        });
      }
      for (auto& th : threads) th.join();  // a hang here is the failure
      for (const auto& r : results) {
        REQUIRE_FALSE(r.ok());
        CHECK(r.status().error_number() == c.expected_errno);
      }
      if (std::string(c.name) == "runtime_error") {
        CHECK_THAT(results[0].status().message(), Catch::Matchers::Contains("boom"));
      }
      CHECK_FALSE(cache.Contains(key));
      CHECK(cache.stats().load_errors >= 1);
      auto retry = cache.GetOrLoad(key, [&] { return Result<Value>(MakeValue(key)); });
      REQUIRE(retry.ok());
      CHECK(Matches(key, *retry));
    }
  }
}

TEST_CASE("a value bigger than a shard's budget is returned, not retained") {
  BlockCache cache(4000, 2);  // 2000 bytes per shard
  const Key key = K(1, 0, 0);
  auto r = cache.GetOrLoad(key, [&] { return Result<Value>(MakeValue(key, 2500)); });
  REQUIRE(r.ok());
  REQUIRE((*r)->size() == 2500);
  for (size_t i = 0; i < 2500; ++i) REQUIRE((**r)[i] == ByteOf(key, i));
  CHECK_FALSE(cache.Contains(key));
  CacheStats s = cache.stats();
  CHECK(s.entries == 0);
  CHECK(s.bytes_cached == 0);
  CHECK(s.inserts == 0);
  CHECK(s.bytes_loaded == 2500);

  // Just within the budget it is kept; replacing it by an oversize value
  // drops the old entry rather than keeping stale bytes.
  const size_t fits = 2000 - BlockCache::kEntryOverheadBytes;
  cache.Insert(key, MakeValue(key, fits));
  CHECK(cache.Contains(key));
  CHECK(cache.stats().bytes_cached == 2000);
  cache.Insert(key, MakeValue(key, fits + 1));
  CHECK_FALSE(cache.Contains(key));
  CHECK(cache.stats().bytes_cached == 0);
}

TEST_CASE("EraseContainer drops exactly that container's entries") {
  BlockCache cache(1 << 20, 16);
  size_t kept_charge = 0;
  for (uint64_t c = 1; c <= 3; ++c) {
    for (int64_t chunk = 0; chunk < 10; ++chunk) {
      for (int64_t block = 0; block < 5; ++block) {
        const Key key = K(c, chunk, block);
        cache.Insert(key, MakeValue(key));
        if (c != 2) kept_charge += BlockCache::ChargeFor(SizeOf(key));
      }
    }
  }
  cache.Insert(K(2, 0, 0, EntryKind::kCompressedChunk), MakeValue(K(2, 0)));
  REQUIRE(cache.stats().entries == 151);
  cache.EraseContainer(2);
  for (uint64_t c = 1; c <= 3; ++c) {
    for (int64_t chunk = 0; chunk < 10; ++chunk) {
      for (int64_t block = 0; block < 5; ++block) {
        CHECK(cache.Contains(K(c, chunk, block)) == (c != 2));
      }
    }
  }
  CHECK_FALSE(cache.Contains(K(2, 0, 0, EntryKind::kCompressedChunk)));
  const CacheStats s = cache.stats();
  CHECK(s.entries == 100);
  CHECK(s.bytes_cached == kept_charge);
  CHECK(s.evictions == 0);   // erasing is not evicting
  cache.EraseContainer(42);  // unknown: a no-op
  CHECK(cache.stats().entries == 100);
  cache.Clear();
  CHECK(cache.stats().entries == 0);
  CHECK(cache.stats().bytes_cached == 0);
}

TEST_CASE("EraseContainer during a load keeps the stale result out") {
  BlockCache cache(1 << 20, 4);
  const Key key = K(5, 0, 0);
  Gate loading, release;
  Result<Value> r = Status(EINVAL, "not run");
  std::thread loader_thread([&] {
    r = cache.GetOrLoad(key, [&]() -> Result<Value> {
      loading.Open();
      release.Wait();
      return MakeValue(key);
    });
  });
  REQUIRE(loading.Wait());
  cache.EraseContainer(5);
  // A new caller must not join the abandoned load: it loads afresh.
  std::atomic<int> fresh_loads{0};
  auto fresh = cache.GetOrLoad(key, [&]() -> Result<Value> {
    fresh_loads.fetch_add(1);
    return MakeValue(key);
  });
  REQUIRE(fresh.ok());
  CHECK(fresh_loads.load() == 1);
  CHECK(cache.Contains(key));
  cache.EraseContainer(5);
  release.Open();
  loader_thread.join();
  REQUIRE(r.ok());  // the caller still gets its bytes
  CHECK(Matches(key, *r));
  CHECK_FALSE(cache.Contains(key));
}

TEST_CASE("stats counters follow the operations") {
  BlockCache cache(1 << 20, 4);
  const Key a = K(1, 1), b = K(1, 2);
  int loads = 0;
  auto load = [&](const Key& key) {
    return [&loads, key]() -> Result<Value> {
      ++loads;
      return MakeValue(key);
    };
  };
  CHECK(cache.Lookup(a) == nullptr);          // miss
  REQUIRE(cache.GetOrLoad(a, load(a)).ok());  // miss + load
  REQUIRE(cache.GetOrLoad(a, load(a)).ok());  // hit
  CHECK(cache.Lookup(a) != nullptr);          // hit
  CHECK(cache.Contains(b) == false);          // no stats
  REQUIRE_FALSE(cache
                    .GetOrLoad(b,
                               [] {  // miss + error
                                 return Result<Value>(Status(EIO, "bad"));
                               })
                    .ok());
  cache.Insert(b, MakeValue(b));  // insert
  const CacheStats s = cache.stats();
  CHECK(loads == 1);
  CHECK(s.hits == 2);
  CHECK(s.misses == 3);
  CHECK(s.shared_waits == 0);
  CHECK(s.inserts == 2);
  CHECK(s.evictions == 0);
  CHECK(s.load_errors == 1);
  CHECK(s.bytes_loaded == SizeOf(a));
  CHECK(s.entries == 2);
  CHECK(s.bytes_cached == BlockCache::ChargeFor(SizeOf(a)) + BlockCache::ChargeFor(SizeOf(b)));
}

TEST_CASE("keys differing in one field are distinct entries") {
  BlockCache cache(1 << 20, 16);
  const std::vector<Key> keys = {
      K(1, 2, 3), K(2, 2, 3), K(1, 3, 3), K(1, 2, 4), K(1, 2, 3, EntryKind::kOther), K(1, -2, 3)};
  for (const Key& key : keys) cache.Insert(key, MakeValue(key));
  CHECK(cache.stats().entries == keys.size());
  for (const Key& key : keys) CHECK(Matches(key, cache.Lookup(key)));
}

TEST_CASE("stress: threads over a key space bigger than the cache") {
  const int kThreads = 8;
  const int kOpsPerThread = 20000;
  const size_t kCapacity = 256 << 10;  // ~170 average values; 2000 keys
  BlockCache cache(kCapacity, 8);
  std::atomic<uint64_t> loads{0}, bytes_produced{0}, bad_content{0}, failures{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(777u + static_cast<unsigned>(t));
      // Skewed: a hot set gets most traffic, so hits and shared loads occur.
      std::uniform_int_distribution<int> hot(0, 49), cold(0, 1999), coin(0, 3);
      start.arrive_and_wait();
      for (int i = 0; i < kOpsPerThread; ++i) {
        const int k = coin(rng) == 0 ? cold(rng) : hot(rng);
        const Key key = K(1 + static_cast<uint64_t>(k % 3), k / 40, k % 40);
        auto r = cache.GetOrLoad(key, [&, key]() -> Result<Value> {
          loads.fetch_add(1);
          Value v = MakeValue(key);
          bytes_produced.fetch_add(v->size());
          return v;
        });
        if (!r.ok()) {
          failures.fetch_add(1);
        } else if (!Matches(key, *r)) {
          bad_content.fetch_add(1);
        }
        if (i % 1000 == 0 && cache.stats().bytes_cached > kCapacity) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();

  CHECK(failures.load() == 0);
  CHECK(bad_content.load() == 0);
  const CacheStats s = cache.stats();
  CHECK(s.bytes_cached <= kCapacity);
  CHECK(s.hits + s.misses == uint64_t{kThreads} * kOpsPerThread);
  // Each miss either ran the loader or waited for one.
  CHECK(s.misses - s.shared_waits == loads.load());
  CHECK(s.bytes_loaded == bytes_produced.load());
  CHECK(s.entries == s.inserts - s.evictions);
  CHECK(s.evictions > 0);
  CHECK(s.hits > 0);
  CHECK(s.load_errors == 0);
}

TEST_CASE("stress: loads, lookups, inserts and erasures interleaved") {
  const int kThreads = 8;
  const size_t kCapacity = 64 << 10;
  BlockCache cache(kCapacity, 4);
  std::atomic<uint64_t> bad{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(99u + static_cast<unsigned>(t));
      std::uniform_int_distribution<int> key_dist(0, 299), op(0, 99);
      start.arrive_and_wait();
      for (int i = 0; i < 10000; ++i) {
        const int k = key_dist(rng);
        const Key key = K(static_cast<uint64_t>(k % 4), k / 20, k % 20);
        const int o = op(rng);
        if (o < 70) {
          auto r = cache.GetOrLoad(key, [key]() -> Result<Value> {
            if (key.block == 7) return Status(EIO, "block 7 is corrupt");
            if (key.block == 13) throw std::runtime_error("decoder blew up");
            return MakeValue(key);
          });
          const bool should_fail = key.block == 7 || key.block == 13;
          if (r.ok() == should_fail || (r.ok() && !Matches(key, *r))) {
            bad.fetch_add(1);
          }
        } else if (o < 85) {
          Value v = cache.Lookup(key);
          if (v != nullptr && !Matches(key, v)) bad.fetch_add(1);
        } else if (o < 95) {
          if (key.block != 7 && key.block != 13) cache.Insert(key, MakeValue(key));
        } else if (o < 99) {
          cache.EraseContainer(key.container_id);
        } else {
          cache.Clear();
        }
        if (cache.Contains(key) && key.block == 7) bad.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(bad.load() == 0);
  const CacheStats s = cache.stats();
  CHECK(s.bytes_cached <= kCapacity);
  CHECK(s.load_errors > 0);
}

}  // namespace
}  // namespace b2ndfs::cache
