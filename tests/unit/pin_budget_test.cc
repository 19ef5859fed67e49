// Unit tests of store/pin_budget: the limit holds, admission is in arrival
// order (a small batch that would fit does not overtake a waiting large
// one), a batch larger than the limit is admitted alone, and a large request
// is admitted while small ones keep coming.
#include "b2ndfs/store/pin_budget.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "b2ndfs/util/atomic_max.h"

namespace b2ndfs::store {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kGuard = seconds(20);

template <typename Pred>
bool WaitFor(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kGuard;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

TEST_CASE("batches that fit are admitted at once; the limit holds") {
  PinBudget pins(100);
  pins.Acquire(40);
  pins.Acquire(60);
  CHECK(pins.used() == 100);
  std::atomic<bool> admitted{false};
  std::thread t([&] {
    pins.Acquire(1);
    admitted = true;
  });
  REQUIRE(WaitFor([&] { return pins.waiting() == 1; }));
  std::this_thread::sleep_for(milliseconds(30));
  CHECK_FALSE(admitted.load());
  pins.Release(40);
  t.join();
  CHECK(admitted.load());
  CHECK(pins.used() == 61);
  CHECK(pins.peak() == 100);
  pins.Release(60);
  pins.Release(1);
  CHECK(pins.used() == 0);
  CHECK(pins.waiting() == 0);
}

TEST_CASE("a small batch that would fit does not overtake a waiting large one") {
  PinBudget pins(100);
  pins.Acquire(60);
  std::mutex mutex;
  std::vector<char> order;
  std::thread large([&] {
    pins.Acquire(80);
    std::lock_guard<std::mutex> lock(mutex);
    order.push_back('L');
  });
  REQUIRE(WaitFor([&] { return pins.waiting() == 1; }));
  std::thread small([&] {
    pins.Acquire(10);  // 60 + 10 fits, but the large batch came first
    std::lock_guard<std::mutex> lock(mutex);
    order.push_back('S');
  });
  REQUIRE(WaitFor([&] { return pins.waiting() == 2; }));
  std::this_thread::sleep_for(milliseconds(50));
  {
    std::lock_guard<std::mutex> lock(mutex);
    CHECK(order.empty());
  }
  pins.Release(60);
  large.join();
  small.join();  // 80 + 10 fits: admitted right after the large one
  CHECK(order.size() == 2);
  CHECK(pins.used() == 90);
  CHECK(pins.peak() == 90);
}

TEST_CASE("a batch larger than the limit is admitted alone") {
  PinBudget pins(100);
  SECTION("at once when nothing is pinned, and nothing joins it") {
    pins.Acquire(250);
    std::atomic<bool> admitted{false};
    std::thread t([&] {
      pins.Acquire(1);
      admitted = true;
    });
    REQUIRE(WaitFor([&] { return pins.waiting() == 1; }));
    std::this_thread::sleep_for(milliseconds(30));
    CHECK_FALSE(admitted.load());
    pins.Release(250);
    t.join();
    CHECK(pins.used() == 1);
  }
  SECTION("once what is pinned was released") {
    pins.Acquire(10);
    std::atomic<bool> admitted{false};
    std::thread t([&] {
      pins.Acquire(250);
      admitted = true;
    });
    REQUIRE(WaitFor([&] { return pins.waiting() == 1; }));
    std::this_thread::sleep_for(milliseconds(30));
    CHECK_FALSE(admitted.load());
    pins.Release(10);
    t.join();
    CHECK(pins.used() == 250);
    CHECK(pins.peak() == 250);
  }
}

TEST_CASE("a large request is admitted while small ones keep coming") {
  PinBudget pins(100);
  std::atomic<bool> stop{false};
  std::atomic<long> small_batches{0};
  std::atomic<size_t> max_used{0};
  std::vector<std::thread> readers;
  // Eight readers of small batches that all fit at once and overlap, so
  // that something is pinned all the time: without fair admission the large
  // batch, which needs the whole budget, would wait for a moment when
  // nothing is, which hardly ever comes.
  constexpr int kReaders = 8;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      std::this_thread::sleep_for(std::chrono::microseconds(250 * r));
      while (!stop.load()) {
        pins.Acquire(10);
        const size_t used = pins.used();
        RaiseAtomic(max_used, used);
        std::this_thread::sleep_for(milliseconds(2));
        pins.Release(10);
        small_batches++;
      }
    });
  }
  REQUIRE(WaitFor([&] { return small_batches.load() > 100; }));
  for (int round = 0; round < 5; ++round) {
    const long before = small_batches.load();
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<bool> admitted{false};
    std::thread large([&] {
      pins.Acquire(100);
      admitted = true;
      std::this_thread::sleep_for(milliseconds(1));
      pins.Release(100);
    });
    bool ok = true;
    while (!admitted.load() && ok) {
      ok = std::chrono::steady_clock::now() - t0 < seconds(5);
      std::this_thread::sleep_for(milliseconds(1));
    }
    const auto waited = std::chrono::steady_clock::now() - t0;
    if (!ok) {
      // Starved: stop the readers, which lets it in, so that the joins return.
      stop = true;
      for (auto& t : readers) t.join();
      large.join();
      FAIL("a request for the whole budget was not admitted within 5 s");
    }
    large.join();
    // Admitted within a few small batches' time (2 ms each), not after seconds.
    CHECK(waited < seconds(1));
    REQUIRE(WaitFor([&] { return small_batches.load() > before + 20; }));
  }
  stop = true;
  for (auto& t : readers) t.join();
  CHECK(max_used.load() <= 100);
  CHECK(pins.peak() <= 100);
  CHECK(pins.used() == 0);
}

}  // namespace
}  // namespace b2ndfs::store
