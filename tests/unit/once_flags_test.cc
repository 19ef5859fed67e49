// Unit tests of store/once_flags.h: each flag's function runs once however
// many threads call at the same time, every caller returns after it ended,
// and a call that throws leaves the flag to the next caller.
#include "once_flags.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace b2ndfs::store {
namespace {

TEST_CASE("each flag runs its function once, and its callers return after it", "[once_flags]") {
  constexpr size_t kFlags = 64;
  constexpr int kThreads = 8;
  OnceFlags flags(kFlags);
  std::vector<std::atomic<int>> runs(kFlags);
  std::vector<int> written(kFlags, 0);  // plain ints: published by the flag
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < kFlags; ++i) {
        const size_t k = (i + static_cast<size_t>(t) * 7) % kFlags;  // different orders
        flags.Call(
            k,
            [&](size_t key) {
              runs[key].fetch_add(1);
              std::this_thread::sleep_for(std::chrono::microseconds(50));
              written[key] = static_cast<int>(key) + 1;
            },
            k);
        if (written[k] != static_cast<int>(k) + 1) bad.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t k = 0; k < kFlags; ++k) CHECK(runs[k].load() == 1);
  CHECK(bad.load() == 0);
}

TEST_CASE("a call that throws leaves the flag to the next caller", "[once_flags]") {
  OnceFlags flags(1);
  int runs = 0;
  CHECK_THROWS_AS(flags.Call(0,
                             [&] {
                               ++runs;
                               throw std::runtime_error("first try fails");
                             }),
                  std::runtime_error);
  flags.Call(0, [&] { ++runs; });
  flags.Call(0, [&] { ++runs; });
  CHECK(runs == 2);
}

}  // namespace
}  // namespace b2ndfs::store
