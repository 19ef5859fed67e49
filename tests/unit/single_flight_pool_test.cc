// util/single_flight and util/task_pool: every waiter completes on every
// path (value, error, exception, a task dropped unrun), no key is poisoned,
// and a background task that throws is logged while the pool goes on.
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

#include "b2ndfs/util/log.h"
#include "b2ndfs/util/single_flight.h"
#include "b2ndfs/util/task_pool.h"
#include "wait_until.h"

using namespace b2ndfs;

namespace {

// Spins until `done` holds or 10 s pass (a test that would hang fails).
using testing::WaitUntil;

// What a loader does once every other caller waits for it.
enum class Ending { kValue, kError, kRuntimeError, kBadAlloc, kNonStandard, kEmptyFunction };

struct Case {
  const char* name;
  Ending ending;
  int expected_errno;  // 0: the value
};

const std::vector<Case> kCases = {
    {"value", Ending::kValue, 0},
    {"error status", Ending::kError, EACCES},
    {"runtime_error", Ending::kRuntimeError, EIO},
    {"bad_alloc", Ending::kBadAlloc, ENOMEM},
    {"non-standard exception", Ending::kNonStandard, EIO},
    {"empty function", Ending::kEmptyFunction, EIO},
};

Result<int> End(Ending ending) {
  switch (ending) {
    case Ending::kValue:
      return 42;
    case Ending::kError:
      return Status(EACCES, "not yours");
    case Ending::kRuntimeError:
      throw std::runtime_error("boom");
    case Ending::kBadAlloc:
      throw std::bad_alloc();
    case Ending::kNonStandard:
      throw 7;
    case Ending::kEmptyFunction:
      break;
  }
  return std::function<Result<int>()>()();  // throws std::bad_function_call
}

void CheckOutcome(const Case& c, const Result<int>& r) {
  if (c.expected_errno == 0) {
    REQUIRE(r.ok());
    CHECK(*r == 42);
    return;
  }
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().error_number() == c.expected_errno);
  if (c.ending == Ending::kRuntimeError) {
    CHECK_THAT(r.status().message(), Catch::Matchers::Contains("boom"));
    CHECK_THAT(r.status().message(), Catch::Matchers::Contains("test load threw"));
  }
  if (c.ending == Ending::kError) CHECK(r.status().message() == "not yours");
}

}  // namespace

TEST_CASE("single flight: every waiter gets the one load's outcome, whatever it is") {
  const int kThreads = 8;
  for (const Case& c : kCases) {
    INFO("loader: " << c.name);
    SingleFlight<std::string, Result<int>> flight("test load");
    std::atomic<int> loads{0};
    std::latch start(kThreads);
    std::vector<Result<int>> results(kThreads, Status(EINVAL, "not run"));
    auto loader = [&]() -> Result<int> {
      loads.fetch_add(1);
      // Ends only once every other caller waits for it.
      WaitUntil([&] { return flight.waiters("k") == kThreads - 1; });
      return End(c.ending);
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        results[t] = flight.Do("k", loader);
      });
    }
    for (auto& th : threads) th.join();  // a hang here is the failure
    CHECK(loads.load() == 1);
    for (const auto& r : results) CheckOutcome(c, r);
    // Not poisoned: nothing left in flight, and the next call loads again.
    CHECK(flight.size() == 0);
    CHECK_FALSE(flight.InFlight("k"));
    auto again = flight.Do("k", [&]() -> Result<int> {
      loads.fetch_add(1);
      return 43;
    });
    REQUIRE(again.ok());
    CHECK(*again == 43);
    CHECK(loads.load() == 2);
  }
}

TEST_CASE("single flight: a Status outcome and distinct keys loading at once") {
  SingleFlight<int, Status> flight;
  std::latch both(2);
  auto run = [&](int key) {
    return flight.Do(key, [&]() -> Status {
      both.arrive_and_wait();  // two loads at once, or this never returns
      if (key == 1) throw std::runtime_error("first");
      return Status::Ok();
    });
  };
  Status s1, s2;
  std::thread t1([&] { s1 = run(1); });
  std::thread t2([&] { s2 = run(2); });
  t1.join();
  t2.join();
  CHECK(s1.error_number() == EIO);
  CHECK_THAT(s1.message(), Catch::Matchers::Contains("first"));
  CHECK(s2.ok());
  CHECK(flight.size() == 0);
}

TEST_CASE("flight table: an abandoned flight still answers, and a new one takes its key") {
  FlightTable<int, Result<int>> table;
  auto first = table.JoinLocked(1);
  REQUIRE(first.leader);
  auto joined = table.JoinLocked(1);
  CHECK_FALSE(joined.leader);
  CHECK(joined.flight == first.flight);
  CHECK(first.flight->waiters() == 1);
  table.AbandonLocked([](int k) { return k == 1; });
  CHECK(first.flight->abandoned());
  auto second = table.JoinLocked(1);
  REQUIRE(second.leader);
  // The old leader's end leaves the new load in place.
  table.RemoveLocked(1, first.flight.get());
  CHECK(table.FindLocked(1) == second.flight.get());
  first.flight->Publish(5);
  CHECK(*joined.flight->Wait() == 5);
  first.flight->Publish(6);  // ignored: published once
  CHECK(*first.flight->Wait() == 5);
  CHECK_FALSE(second.flight->WaitFor(std::chrono::milliseconds(1)));
  second.flight->Publish(Status(EIO, "x"));
  CHECK(second.flight->WaitFor(std::chrono::milliseconds(1)));
  table.RemoveLocked(1, second.flight.get());
  CHECK(table.SizeLocked() == 0);
}

TEST_CASE("single flight on a pool: launched loads that throw answer everyone") {
  TaskPool pool("test pool", 2);
  auto submit = [&pool](std::function<void()> task) { return pool.Submit(std::move(task)); };
  for (const Case& c : kCases) {
    INFO("loader: " << c.name);
    SingleFlight<std::string, Result<int>> flight("test load");
    std::atomic<bool> release{false};
    std::atomic<int> loads{0};
    bool joined = true;
    auto first = flight.Launch(
        "k",
        [&]() -> Result<int> {
          loads.fetch_add(1);
          WaitUntil([&] { return release.load(); });
          return End(c.ending);
        },
        submit, &joined);
    CHECK_FALSE(joined);
    auto second = flight.Launch(
        "k", [&]() -> Result<int> { return 0; }, submit, &joined);
    CHECK(joined);
    CHECK(second == first);
    CHECK_FALSE(first->WaitFor(std::chrono::milliseconds(5)));  // still loading
    release = true;
    CheckOutcome(c, first->Wait());
    CHECK(loads.load() == 1);
    CHECK(WaitUntil([&] { return flight.size() == 0; }));
    // The next launch loads again, on a pool that still serves.
    auto next = flight.Launch(
        "k", []() -> Result<int> { return 42; }, submit, &joined);
    CHECK_FALSE(joined);
    REQUIRE(next->Wait().ok());
    CHECK(*next->Wait() == 42);
  }
  // Each exception answered the waiters, then reached the pool, which logged
  // it: runtime_error, bad_alloc, non-standard, empty function.
  CHECK(WaitUntil([&] { return pool.failures() == 4; }));
  CHECK_THAT(RecentLogText(), Catch::Matchers::Contains("test pool failed: boom"));
}

TEST_CASE("single flight: a pool that refuses or throws leaves the load to its caller") {
  SingleFlight<int, Result<int>> flight;
  auto refuse = [](std::function<void()>) { return false; };
  auto thrower = [](std::function<void()>) -> bool { throw std::bad_alloc(); };
  const auto caller = std::this_thread::get_id();
  std::thread::id ran_on;
  auto load = [&]() -> Result<int> {
    ran_on = std::this_thread::get_id();
    return 1;
  };
  auto a = flight.Launch(1, load, refuse);
  CHECK(a->done());
  CHECK(ran_on == caller);
  ran_on = {};
  auto b = flight.Launch(1, load, thrower);
  CHECK(b->done());
  CHECK(ran_on == caller);
  CHECK(*b->Wait() == 1);
  CHECK(flight.size() == 0);
}

TEST_CASE("task pool: a task that throws is logged and the pool keeps serving") {
  TaskPool pool("test probe", 1);
  std::atomic<int> ran{0};
  REQUIRE(pool.Submit([] { throw std::runtime_error("probe exploded"); }));
  REQUIRE(pool.Submit([] { throw 3; }));
  REQUIRE(pool.Submit([] { throw std::bad_alloc(); }));
  REQUIRE(pool.Submit(std::function<void()>()));  // std::bad_function_call
  REQUIRE(pool.Submit([&] { ran.fetch_add(1); }));
  CHECK(WaitUntil([&] { return ran.load() == 1; }));
  CHECK(WaitUntil([&] { return pool.failures() == 4; }));
  const std::string log = RecentLogText();
  CHECK_THAT(log, Catch::Matchers::Contains("test probe failed: probe exploded"));
  CHECK_THAT(log, Catch::Matchers::Contains("test probe failed: a non-standard exception"));
  // Still serving, on as many threads as it has.
  for (int i = 0; i < 20; ++i) REQUIRE(pool.Submit([&] { ran.fetch_add(1); }));
  CHECK(WaitUntil([&] { return ran.load() == 21; }));
}

TEST_CASE("task pool: stopping ends running tasks, answers queued flights, refuses the rest") {
  auto pool = std::make_unique<TaskPool>("test pool", 1);
  auto submit = [&pool](std::function<void()> task) { return pool->Submit(std::move(task)); };
  SingleFlight<int, Result<int>> flight("queued load");
  std::atomic<bool> running{false};
  std::atomic<bool> release{false};
  auto busy = flight.Launch(
      0,
      [&]() -> Result<int> {
        running = true;
        WaitUntil([&] { return release.load(); });
        return 0;
      },
      submit);
  REQUIRE(WaitUntil([&] { return running.load(); }));
  // Queued behind the running one, on the pool's only thread.
  std::atomic<int> queued_ran{0};
  std::vector<std::shared_ptr<const Flight<Result<int>>>> queued;
  for (int k = 1; k <= 5; ++k) {
    queued.push_back(flight.Launch(
        k,
        [&]() -> Result<int> {
          queued_ran.fetch_add(1);
          return 1;
        },
        submit));
  }
  std::thread stopper([&] { pool->Stop(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(busy->done());  // Stop waits for the running task
  release = true;
  stopper.join();
  CHECK(*busy->Wait() == 0);
  for (const auto& q : queued) {
    REQUIRE(q->WaitFor(std::chrono::seconds(10)));
    const Result<int>& r = q->Wait();
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().error_number() == EIO);
    CHECK_THAT(r.status().message(), Catch::Matchers::Contains("stopped before it ran"));
  }
  CHECK(queued_ran.load() == 0);
  CHECK(flight.size() == 0);  // no key poisoned
  // A stopped pool refuses; a launch then runs on its caller's thread.
  CHECK_FALSE(pool->Submit([] {}));
  auto after = flight.Launch(
      1, []() -> Result<int> { return 9; }, submit);
  CHECK(*after->Wait() == 9);
  pool->Stop();  // idempotent
  pool.reset();
}
