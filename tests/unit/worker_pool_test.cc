// Unit tests of store/worker_pool: every ParallelFor item runs once,
// exceptions thrown on workers reach the caller (after the other items ran)
// instead of ending the process, throwing best-effort tasks are counted and logged, and
// Shutdown() drops queued tasks, joins running ones and stops accepting work.
#include "b2ndfs/store/worker_pool.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "b2ndfs/util/atomic_max.h"
#include "b2ndfs/util/log.h"

namespace b2ndfs::store {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Failure guard for waits that a correct pool satisfies quickly.
constexpr auto kGuard = seconds(20);

// A one-shot gate that tasks wait on.
class Gate {
 public:
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, kGuard, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

template <typename Pred>
bool WaitFor(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kGuard;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

// Counts the items running at once; Arrive() blocks until `target` of them
// have run together (or kGuard passed: then it returns false). Makes "the
// workers took part" a fact the test waits for, not a matter of scheduling.
class Rendezvous {
 public:
  explicit Rendezvous(int target) : target_(target) {}
  bool Arrive() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (++running_ > peak_) peak_ = running_;
    cv_.notify_all();
    const bool met = cv_.wait_for(lock, kGuard, [&] { return peak_ >= target_; });
    --running_;
    return met;
  }
  int peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }

 private:
  const int target_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int running_ = 0;  // guarded by mutex_
  int peak_ = 0;     // guarded by mutex_
};

TEST_CASE("ParallelFor runs every item exactly once, on several threads") {
  constexpr int kThreads = 4;
  WorkerPool pool(kThreads);
  constexpr size_t kN = 2000;
  std::vector<std::atomic<int>> runs(kN);
  Rendezvous together(kThreads);
  std::atomic<int> missed{0};
  std::mutex mutex;
  std::set<std::thread::id> threads;
  pool.ParallelFor(kN, [&](size_t i) {
    runs[i]++;
    // The first items each hold their thread until kThreads run at once:
    // the caller and every helper must have taken one.
    if (i < kThreads && !together.Arrive()) missed++;
    std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  for (size_t i = 0; i < kN; ++i) REQUIRE(runs[i].load() == 1);
  CHECK(missed.load() == 0);
  CHECK(together.peak() == kThreads);
  CHECK(threads.size() == kThreads);
}

TEST_CASE("ParallelFor never runs more items at once than the pool's size") {
  constexpr int kThreads = 3;
  WorkerPool pool(kThreads);
  std::atomic<int> running{0}, peak{0};
  pool.ParallelFor(300, [&](size_t) {
    const int now = ++running;
    RaiseAtomic(peak, now);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    --running;
  });
  CHECK(peak.load() >= 1);
  CHECK(peak.load() <= kThreads);
}

TEST_CASE("an exception thrown on a worker is rethrown on the caller after all items ran") {
  WorkerPool pool(4);
  const auto caller = std::this_thread::get_id();
  constexpr size_t kN = 64;
  std::vector<std::atomic<int>> runs(kN);
  std::atomic<int> thrown_on_workers{0};
  // The caller's first item waits until a worker runs one too, so that
  // workers take items whatever the scheduling.
  Rendezvous two(2);
  std::atomic<int> missed{0};
  auto fn = [&](size_t i) {
    runs[i]++;
    if (i < 2 && !two.Arrive()) missed++;
    if (std::this_thread::get_id() != caller) {
      thrown_on_workers++;
      throw std::runtime_error("item " + std::to_string(i) + " failed");
    }
  };
  try {
    pool.ParallelFor(kN, fn);
    FAIL("ParallelFor did not rethrow");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("failed") != std::string::npos);
  }
  CHECK(missed.load() == 0);
  CHECK(thrown_on_workers.load() > 0);
  for (size_t i = 0; i < kN; ++i) REQUIRE(runs[i].load() == 1);
  // The pool still works, and its workers are alive.
  std::atomic<size_t> sum{0};
  pool.ParallelFor(100, [&](size_t i) { sum += i; });
  CHECK(sum.load() == 4950);
}

TEST_CASE("bad_alloc keeps its type, so the FUSE edge answers ENOMEM") {
  WorkerPool pool(3);
  std::atomic<int> runs{0};
  CHECK_THROWS_AS(pool.ParallelFor(32,
                                   [&](size_t i) {
                                     runs++;
                                     std::this_thread::sleep_for(milliseconds(1));
                                     if (i == 5) throw std::bad_alloc();
                                   }),
                  std::bad_alloc);
  CHECK(runs.load() == 32);
}

TEST_CASE("without helpers, items after a failing one still run and the error is rethrown") {
  WorkerPool pool(1);
  std::vector<int> seen;
  CHECK_THROWS_AS(pool.ParallelFor(5,
                                   [&](size_t i) {
                                     seen.push_back(static_cast<int>(i));
                                     if (i == 1) throw std::logic_error("first");
                                     if (i == 3) throw std::runtime_error("second");
                                   }),
                  std::logic_error);
  CHECK(seen == std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("TrySubmit tasks that throw are swallowed and counted") {
  WorkerPool pool(2);
  std::atomic<int> ran{0};
  int submitted_throwing = 0;
  for (int i = 0; i < 10; ++i) {
    if (pool.TrySubmit([] { throw std::runtime_error("read-ahead failed"); }, 1000)) {
      ++submitted_throwing;
    }
    REQUIRE(pool.TrySubmit([&] { ran++; }, 1000));
  }
  REQUIRE(submitted_throwing == 10);
  REQUIRE(WaitFor([&] { return ran.load() == 10 && pool.failed_tasks() == 10; }));
  CHECK(pool.failed_tasks() == 10);
  // Logged (a few a minute), never fatal.
  CHECK(RecentLogText().find("worker task failed: read-ahead failed") != std::string::npos);
  // The workers survived.
  REQUIRE(pool.TrySubmit([&] { ran++; }, 1000));
  REQUIRE(WaitFor([&] { return ran.load() == 11; }));
}

TEST_CASE("TrySubmit respects max_queued") {
  Gate started, release;  // outlive the pool: its threads use them until joined
  WorkerPool pool(1);
  REQUIRE(pool.TrySubmit(
      [&] {
        started.Open();
        release.Wait();
      },
      10));
  REQUIRE(started.Wait());
  CHECK(pool.TrySubmit([] {}, 2));
  CHECK(pool.TrySubmit([] {}, 2));
  CHECK_FALSE(pool.TrySubmit([] {}, 2));
  CHECK(pool.queued() == 2);
  release.Open();
}

TEST_CASE("Shutdown joins the running task, drops queued ones and refuses new work") {
  Gate started, release;  // outlive the pool: its threads use them until joined
  WorkerPool pool(1);
  std::atomic<bool> running_finished{false};
  std::atomic<int> queued_ran{0};
  auto sentinel = std::make_shared<int>(0);  // held by the queued tasks
  REQUIRE(pool.TrySubmit(
      [&] {
        started.Open();
        release.Wait();
        std::this_thread::sleep_for(milliseconds(20));
        running_finished = true;
      },
      10));
  REQUIRE(started.Wait());
  for (int i = 0; i < 3; ++i) {
    REQUIRE(pool.TrySubmit([&queued_ran, sentinel] { queued_ran++; }, 10));
  }
  CHECK(sentinel.use_count() == 4);
  std::atomic<bool> shutdown_returned{false};
  std::thread stopper([&] {
    pool.Shutdown();
    shutdown_returned = true;
  });
  // Shutdown waits for the task in flight.
  std::this_thread::sleep_for(milliseconds(50));
  CHECK_FALSE(shutdown_returned.load());
  release.Open();
  stopper.join();
  CHECK(running_finished.load());
  CHECK(queued_ran.load() == 0);
  // The dropped tasks were destroyed (they held the last copies).
  CHECK(sentinel.use_count() == 1);
  CHECK(pool.queued() == 0);
  CHECK_FALSE(pool.TrySubmit([] {}, 10));
  // ParallelFor still works, on the caller alone.
  const auto caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0}, count{0};
  pool.ParallelFor(50, [&](size_t) {
    count++;
    if (std::this_thread::get_id() != caller) elsewhere++;
  });
  CHECK(count.load() == 50);
  CHECK(elsewhere.load() == 0);
  pool.Shutdown();  // idempotent; the destructor calls it once more
}

TEST_CASE("Shutdown while a ParallelFor is in flight: the caller finishes the items") {
  WorkerPool pool(4);
  constexpr size_t kN = 200;
  std::vector<std::atomic<int>> runs(kN);
  Gate first;
  std::thread reader([&] {
    pool.ParallelFor(kN, [&](size_t i) {
      runs[i]++;
      if (i == 0) first.Open();
      std::this_thread::sleep_for(milliseconds(1));
    });
  });
  REQUIRE(first.Wait());
  pool.Shutdown();
  reader.join();
  for (size_t i = 0; i < kN; ++i) REQUIRE(runs[i].load() == 1);
}

TEST_CASE("a pool that is only destroyed drops its queue and joins") {
  std::atomic<int> ran{0};
  auto sentinel = std::make_shared<int>(0);
  {
    Gate started, release;  // outlive the pool: its threads use them until joined
    WorkerPool pool(1);
    REQUIRE(pool.TrySubmit(
        [&] {
          started.Open();
          release.Wait();
        },
        10));
    REQUIRE(started.Wait());
    REQUIRE(pool.TrySubmit([&ran, sentinel] { ran++; }, 10));
    release.Open();
    // ~WorkerPool: the running task ends, the queued one may or may not have
    // been taken yet; either way nothing is left behind.
  }
  CHECK(ran.load() <= 1);
  CHECK(sentinel.use_count() == 1);
}

}  // namespace
}  // namespace b2ndfs::store
