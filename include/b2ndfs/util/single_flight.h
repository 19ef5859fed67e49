// util/single_flight: one load per key at a time; whoever asks for a key
// while its load runs waits for that load's outcome. The project's only
// single flight: the block cache, the remote metadata cache, the store's
// span reads and the vfs probes all use it.
//
// Three layers, from the inside out:
// - Flight<V>: one load's outcome, published exactly once; any number of
//   waiters block on it (Wait, WaitFor). V is Status or Result<T>: anything
//   constructible from a Status.
// - FlightTable<K, V>: the flights in progress by key, guarded by a lock of
//   its owner, for a cache that must look a key up and join its flight under
//   one lock (cache/block_cache, remote/meta_cache). LeadFlight() runs a
//   load its caller leads and ends it.
// - SingleFlight<K, V>: a FlightTable with a mutex of its own. Do() runs the
//   load on the caller's thread (or waits for the one in flight); Launch()
//   hands it to a pool (TaskPool) and returns the flight, for callers that
//   wait only so long.
// Guarantees, on every path (value, error Status, exception, a task dropped
// unrun by a stopping pool):
// - every waiter completes: a loader that throws yields an error for all of
//   them (ENOMEM for std::bad_alloc, EIO "WHAT threw: ..." for anything
//   else, an empty std::function included); a Launch()ed task destroyed
//   before it ran yields EIO;
// - the key leaves the table before its outcome is published, so nothing is
//   ever poisoned: errors are not kept, and the next call loads again;
// - no lock is held while a loader runs or while a waiter waits.
// Ownership: a flight is shared (shared_ptr) by its table entry, its leader
// and its waiters; its outcome lives as long as the last of them.
// Thread-safety: Flight and SingleFlight from any thread; a FlightTable
// under its owner's lock (methods ending in Locked).
// Lock order: Flight::mu_ is a leaf (held only to publish or read the
// outcome); a table's lock (its owner's, or SingleFlight::mutex_) never
// waits for a flight, and a flight is never published under it (a waiter
// count and the abandoned mark are atomics). A Launch()ed task takes
// SingleFlight::mutex_ when it ends, so a pool must not run or drop tasks
// while holding it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "b2ndfs/util/status.h"

namespace b2ndfs {

// The error a caught exception stands for: ENOMEM for std::bad_alloc (and
// when the message cannot be built), else EIO "`what` threw: MESSAGE".
// Call only inside a catch block.
Status StatusOfCurrentException(const char* what) noexcept;
// EIO "`what` stopped before it ran (unmounting)" (ENOMEM when the message
// cannot be built): the outcome of a task a stopping pool dropped.
Status StoppedStatus(const char* what) noexcept;

// Runs `load` (a callable returning V, or something V is made from) and
// never lets an exception out (see StatusOfCurrentException).
template <typename V, typename Load>
V RunGuarded(Load& load, const char* what) noexcept {
  try {
    return V(load());
  } catch (...) {
    return V(StatusOfCurrentException(what));
  }
}

// One load's outcome. Publish() once (later calls are ignored); waiters
// block until then. Whoever publishes must hold a shared_ptr to the flight
// (a waiter that wakes may drop the last other one).
template <typename V>
class Flight {
 public:
  void Publish(V value) noexcept {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (value_) return;
      value_.emplace(std::move(value));
    }
    cv_.notify_all();
  }
  // Blocks until published; the outcome lives as long as the flight.
  const V& Wait() const {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return value_.has_value(); });
    return *value_;
  }
  // Whether it was published within `timeout`.
  template <typename Rep, typename Period>
  bool WaitFor(const std::chrono::duration<Rep, Period>& timeout) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return value_.has_value(); });
  }
  bool done() const {
    std::lock_guard<std::mutex> lock(mu_);
    return value_.has_value();
  }
  // Callers that joined this flight rather than leading it.
  int waiters() const { return waiters_.load(std::memory_order_relaxed); }
  void AddWaiter() { waiters_.fetch_add(1, std::memory_order_relaxed); }
  // Set when its table dropped it before it ended (FlightTable::
  // AbandonLocked): its outcome still reaches its waiters, but an owner
  // should not keep it (what it loaded may be stale).
  bool abandoned() const { return abandoned_.load(std::memory_order_acquire); }
  void Abandon() { abandoned_.store(true, std::memory_order_release); }

 private:
  mutable std::mutex mu_;  // leaf lock; guards value_
  mutable std::condition_variable cv_;
  std::optional<V> value_;
  std::atomic<int> waiters_{0};
  std::atomic<bool> abandoned_{false};
};

// The flights in progress, by key. Not locked: its owner's lock guards every
// call (see the header block).
template <typename Key, typename V, typename Hash = std::hash<Key>,
          typename Eq = std::equal_to<Key>>
class FlightTable {
 public:
  using FlightPtr = std::shared_ptr<Flight<V>>;
  struct Joined {
    FlightPtr flight;
    bool leader = false;  // true: the caller runs the load (LeadFlight)
  };

  // The flight of `key` (counted as one more waiter), or a new one the
  // caller leads. Throws std::bad_alloc, with nothing changed.
  Joined JoinLocked(const Key& key) {
    if (auto it = flights_.find(key); it != flights_.end()) {
      it->second->AddWaiter();
      return Joined{it->second, false};
    }
    auto flight = std::make_shared<Flight<V>>();
    flights_.emplace(key, flight);
    return Joined{std::move(flight), true};
  }
  // The flight of `key` in progress, or null.
  const Flight<V>* FindLocked(const Key& key) const {
    auto it = flights_.find(key);
    return it == flights_.end() ? nullptr : it->second.get();
  }
  // Ends `flight`'s entry, unless it was abandoned (and perhaps replaced by
  // a newer load of the same key) meanwhile.
  void RemoveLocked(const Key& key, const Flight<V>* flight) noexcept {
    auto it = flights_.find(key);
    if (it != flights_.end() && it->second.get() == flight) flights_.erase(it);
  }
  // Drops the flights whose key matches `pred`, marking them abandoned:
  // their waiters still get their outcome, later callers start afresh.
  template <typename Pred>
  void AbandonLocked(Pred&& pred) {
    for (auto it = flights_.begin(); it != flights_.end();) {
      if (pred(it->first)) {
        it->second->Abandon();
        it = flights_.erase(it);
      } else {
        ++it;
      }
    }
  }
  size_t SizeLocked() const { return flights_.size(); }

 private:
  std::unordered_map<Key, FlightPtr, Hash, Eq> flights_;
};

// Runs the load of a flight its caller leads (FlightTable::JoinLocked said
// leader) and ends it on every path: `finish(outcome)` (noexcept; it takes
// the owner's lock, removes the key and keeps what it wants to keep), then
// the outcome is published to the waiters. Returns the outcome.
template <typename V, typename Load, typename Finish>
const V& LeadFlight(const std::shared_ptr<Flight<V>>& flight, Load& load, Finish&& finish,
                    const char* what) noexcept {
  static_assert(std::is_nothrow_invocable_v<Finish&, const V&>,
                "finish() must not throw: the waiters would never be answered");
  V outcome = RunGuarded<V>(load, what);
  finish(outcome);
  flight->Publish(std::move(outcome));
  return flight->Wait();  // already published: no wait
}

// A FlightTable with its own lock, for callers that keep nothing themselves
// (or keep it after the flight ends).
template <typename Key, typename V, typename Hash = std::hash<Key>,
          typename Eq = std::equal_to<Key>>
class SingleFlight {
 public:
  using FlightPtr = std::shared_ptr<const Flight<V>>;
  // `what` names the loads in error messages ("probe", "stat").
  explicit SingleFlight(const char* what = "load") : what_(what) {}
  SingleFlight(const SingleFlight&) = delete;
  SingleFlight& operator=(const SingleFlight&) = delete;

  // The outcome of one call of `load` for `key`: made here, or by the call
  // already in flight, which this one waits for.
  template <typename Load>
  V Do(const Key& key, Load&& load) {
    typename FlightTable<Key, V, Hash, Eq>::Joined joined;
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      joined = table_.JoinLocked(key);
    } catch (...) {
      return V(StatusOfCurrentException(what_));
    }
    if (!joined.leader) return joined.flight->Wait();
    return LeadFlight(
        joined.flight, load, [&](const V&) noexcept { Remove(key, *joined.flight); }, what_);
  }

  // The flight of `key`, or a new one whose `load` is handed to
  // `submit(std::function<void()>)` (returning whether it took the task, as
  // TaskPool::Submit); run here when it refuses or throws. `*joined` says
  // whether the flight was already there. A load that throws answers its
  // waiters as in Do(), and its exception then leaves the task, for the pool
  // to log (run here, it is only answered). A task that `submit` took but
  // destroyed unrun (a pool stopping) ends its flight with EIO. Every task
  // must end before this SingleFlight is destroyed (stop the pool first).
  template <typename Submit>
  FlightPtr Launch(const Key& key, std::function<V()> load, Submit&& submit,
                   bool* joined = nullptr) {
    if (joined != nullptr) *joined = true;
    std::shared_ptr<Task> task;
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      auto entry = table_.JoinLocked(key);
      if (!entry.leader) return entry.flight;
      // Made under the lock so that no failure leaves the entry behind.
      try {
        task = std::make_shared<Task>(this, key, entry.flight, std::move(load));
      } catch (...) {
        table_.RemoveLocked(key, entry.flight.get());
        throw;
      }
    } catch (...) {
      auto failed = std::make_shared<Flight<V>>();
      failed->Publish(V(StatusOfCurrentException(what_)));
      return failed;
    }
    if (joined != nullptr) *joined = false;
    FlightPtr flight = task->flight;
    bool taken = false;
    try {
      // Once its waiters are answered, what the load threw goes on to the
      // pool, which logs it (TaskPool: never fatal).
      taken = submit(std::function<void()>([task] {
        if (std::exception_ptr thrown = task->Run()) std::rethrow_exception(thrown);
      }));
    } catch (...) {
      taken = false;  // not queued: run here
    }
    if (!taken) (void)task->Run();
    return flight;
  }

  // Whether a load of `key` is in flight.
  bool InFlight(const Key& key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return table_.FindLocked(key) != nullptr;
  }
  // Callers waiting for the load of `key` in flight (0: none in flight).
  int waiters(const Key& key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const Flight<V>* flight = table_.FindLocked(key);
    return flight == nullptr ? 0 : flight->waiters();
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return table_.SizeLocked();
  }

 private:
  // A launched load, shared by every copy of the function handed to the
  // pool: whichever way it goes, its flight ends exactly once.
  struct Task {
    Task(SingleFlight* o, Key k, std::shared_ptr<Flight<V>> f, std::function<V()> l)
        : owner(o), key(std::move(k)), flight(std::move(f)), load(std::move(l)) {}
    ~Task() {
      if (!ran.exchange(true)) End(V(StoppedStatus(owner->what_)));
    }
    // Runs the load (once) and ends the flight; returns what the load
    // threw (null: nothing), for the pool to log.
    std::exception_ptr Run() noexcept {
      if (ran.exchange(true)) return nullptr;
      std::exception_ptr thrown;
      V outcome = [&]() -> V {
        try {
          return V(load());
        } catch (...) {
          thrown = std::current_exception();
          return V(StatusOfCurrentException(owner->what_));
        }
      }();
      load = nullptr;  // what it captured goes now, not with the last copy
      End(std::move(outcome));
      return thrown;
    }
    void End(V outcome) noexcept {
      owner->Remove(key, *flight);
      flight->Publish(std::move(outcome));
    }
    SingleFlight* owner;
    Key key;
    std::shared_ptr<Flight<V>> flight;
    std::function<V()> load;
    std::atomic<bool> ran{false};
  };

  void Remove(const Key& key, const Flight<V>& flight) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    table_.RemoveLocked(key, &flight);
  }

  const char* what_;
  mutable std::mutex mutex_;  // guards table_; never held while a load runs
  FlightTable<Key, V, Hash, Eq> table_;
};

}  // namespace b2ndfs
