// remote/meta_cache: loaders that fail or throw answer every waiter, are not
// kept, and leave the key free for the next call (util/single_flight.h).
#include "meta_cache.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <latch>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "wait_until.h"

using namespace b2ndfs;

namespace {

using testing::WaitUntil;

}  // namespace

TEST_CASE("metadata cache: a loader that throws answers every waiter and poisons nothing") {
  struct Case {
    const char* name;
    int expected_errno;
    std::function<Result<int>()> end;
  };
  const std::vector<Case> cases = {
      {"runtime_error", EIO, []() -> Result<int> { throw std::runtime_error("listing broke"); }},
      {"bad_alloc", ENOMEM, []() -> Result<int> { throw std::bad_alloc(); }},
      {"non-standard", EIO, []() -> Result<int> { throw 1; }},
      {"error status", ETIMEDOUT, []() -> Result<int> { return Status(ETIMEDOUT, "slow"); }},
  };
  const int kThreads = 6;
  for (const Case& c : cases) {
    INFO("loader: " << c.name);
    // Keeps everything it is given, errors too: a throw must still not be kept.
    remote::MetaCache<int> cache(16, [](const Result<int>& r) { return r.ok(); });
    std::atomic<int> loads{0};
    std::latch start(kThreads);
    std::vector<Result<int>> results(kThreads, Status(EINVAL, "not run"));
    auto loader = [&]() -> Result<int> {
      loads.fetch_add(1);
      WaitUntil([&] { return cache.waiters("k") == kThreads - 1; });
      return c.end();
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        results[t] = cache.Get("k", 60, loader);
      });
    }
    for (auto& th : threads) th.join();  // a hang here is the failure
    CHECK(loads.load() == 1);
    for (const auto& r : results) {
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().error_number() == c.expected_errno);
    }
    if (c.expected_errno == EIO && std::string(c.name) == "runtime_error") {
      CHECK_THAT(results[0].status().message(), Catch::Matchers::Contains("listing broke"));
    }
    CHECK(cache.size() == 0);
    CHECK(cache.waiters("k") == 0);
    // The next call asks again and its answer is kept.
    auto again = cache.Get("k", 60, [&]() -> Result<int> {
      loads.fetch_add(1);
      return 5;
    });
    REQUIRE(again.ok());
    CHECK(*again == 5);
    CHECK(loads.load() == 2);
    CHECK(*cache.Get("k", 60, [] { return Result<int>(Status(EIO, "not asked")); }) == 5);
  }
}

TEST_CASE("metadata cache: a keep or weigh function that throws keeps nothing but answers") {
  remote::MetaCache<int> cache(16, [](const Result<int>& r) -> bool {
    throw std::runtime_error("keep? " + std::to_string(*r));
  });
  auto r = cache.Get("k", 60, [] { return Result<int>(3); });
  REQUIRE(r.ok());
  CHECK(*r == 3);
  CHECK(cache.size() == 0);
  int loads = 0;
  CHECK(*cache.Get("k", 60, [&] { return Result<int>(++loads); }) == 1);
}
