// remote/meta_cache (private to src/remote): the object tree's answers about
// names (a directory's listing, an object's HEAD), kept per key for
// `revalidate` seconds, bounded by a least-recently-used total weight (a
// listing weighs its entries, a HEAD answer one), and fetched
// by one request however many threads ask for the same key at once (util/
// single_flight.h, under mutex_: the others wait for that answer).
//
// Ownership: the cache owns its entries; values are handed out by copy
// (Listing is a shared_ptr, so a copy is cheap and outlives eviction).
// Thread-safety: any thread. mutex_ is a leaf lock: a loader runs without it.
// Errors: a loader's Result is returned to every waiter; only answers that
// `keep` accepts are cached (successes, names that are not there). A loader
// that throws answers every waiter EIO (ENOMEM for bad_alloc), and the next
// call asks again.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "b2ndfs/util/single_flight.h"
#include "b2ndfs/util/status.h"
#include "b2ndfs/util/text.h"
#include "b2ndfs/util/weighted_lru.h"

namespace b2ndfs::remote {

template <class T>
class MetaCache {
 public:
  struct Entry {
    double at = 0;  // text::Now() when the answer came
    Result<T> value = Status(EIO, "unset");
    size_t weight = 1;
  };
  using Loader = std::function<Result<T>()>;
  using Keep = std::function<bool(const Result<T>&)>;
  using Weigh = std::function<size_t(const Result<T>&)>;

  // `capacity`: the total weight kept; `weigh`: an answer's weight (null:
  // 1 each, so that `capacity` counts answers).
  MetaCache(size_t capacity, Keep keep, Weigh weigh = nullptr)
      : keep_(std::move(keep)), weigh_(std::move(weigh)), lru_({Lru::kUnbounded, capacity}) {}

  // The answer for `key` if it is at most `max_age` seconds old; else the
  // answer of one call of `load` (made by this thread, or by the one already
  // loading `key`, whose answer this one waits for).
  Result<T> Get(const std::string& key, double max_age, const Loader& load) {
    typename Flights::Joined joined;
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto* e = FindLocked(key); e != nullptr && ::b2ndfs::text::Now() - e->at <= max_age) {
        return e->value;
      }
      joined = flights_.JoinLocked(key);
    } catch (...) {
      return StatusOfCurrentException("metadata request");
    }
    if (!joined.leader) return joined.flight->Wait();
    return LeadFlight(
        joined.flight, load,
        [&](const Result<T>& value) noexcept {
          std::lock_guard<std::mutex> lock(mutex_);
          flights_.RemoveLocked(key, joined.flight.get());
          try {
            if (keep_(value)) PutLocked(key, value);
          } catch (...) {
            // Not kept (no memory, or `keep` or `weigh` threw): the waiters
            // still get the answer, and the next call asks again.
          }
        },
        "metadata request");
  }

  // The cached entry, however old (nullopt: none).
  std::optional<Entry> Peek(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto* e = FindLocked(key);
    if (e == nullptr) return std::nullopt;
    return *e;
  }

  void Put(const std::string& key, Result<T> value) {
    std::lock_guard<std::mutex> lock(mutex_);
    PutLocked(key, std::move(value));
  }

  void Erase(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    lru_.Erase(key, nullptr);
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return lru_.size();
  }
  // Threads waiting for another's load of `key` (for tests).
  int waiters(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto* flight = flights_.FindLocked(key);
    return flight == nullptr ? 0 : flight->waiters();
  }

 private:
  using Flights = FlightTable<std::string, Result<T>>;
  using Lru = util::WeightedLru<std::string, Entry>;

  Entry* FindLocked(const std::string& key) { return lru_.Find(key); }
  void PutLocked(const std::string& key, Result<T> value) {
    const size_t weight = weigh_ ? std::max<size_t>(weigh_(value), 1) : 1;
    // (The newest answer stays, however heavy: its caller has it anyway.)
    lru_.Insert(key, Entry{::b2ndfs::text::Now(), std::move(value), weight}, weight, nullptr);
  }

  const Keep keep_;
  const Weigh weigh_;
  mutable std::mutex mutex_;  // leaf lock; guards everything below
  Lru lru_;                   // at most `capacity` of total weight
  Flights flights_;
};

}  // namespace b2ndfs::remote
