// remote/range_prefetch: announced ranges are fetched at once in the
// background and taken by the reads that follow; failures, budget, Forget.
#include "range_prefetch.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

using namespace b2ndfs;
using namespace b2ndfs::remote;

namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Bytes of "the object": a function of the offset, after `delay` seconds.
RangePrefetch::Fetch SlowFetch(std::atomic<int>* calls, double delay, bool fail = false) {
  return [=](int64_t offset, size_t length, uint8_t* out) {
    ++*calls;
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    if (fail) return Status(EIO, "no");
    for (size_t i = 0; i < length; ++i) out[i] = static_cast<uint8_t>((offset + i) * 7);
    return Status::Ok();
  };
}

bool Expected(const std::vector<uint8_t>& bytes, int64_t offset) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != static_cast<uint8_t>((offset + i) * 7)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("announced ranges are fetched together and taken by the reads") {
  RangePrefetch p;
  const uint64_t id = p.NewSourceId();
  std::atomic<int> calls{0};
  const double t0 = Seconds();
  for (int k = 0; k < 4; ++k) p.Start(id, -1, k * 1000, 500, SlowFetch(&calls, 0.2));
  for (int k = 0; k < 4; ++k) {
    std::vector<uint8_t> out(500);
    REQUIRE(p.Take(id, -1, k * 1000, 500, out.data()));
    CHECK(Expected(out, k * 1000));
  }
  // Four 0.2 s fetches overlapped, not one after the other.
  CHECK(Seconds() - t0 < 0.6);
  CHECK(calls == 4);
  // Taken exactly: gone.
  std::vector<uint8_t> out(500);
  CHECK_FALSE(p.Take(id, -1, 0, 500, out.data()));
  // A part inside a held range is served, the range kept for the rest.
  p.Start(id, 3, 0, 1000, SlowFetch(&calls, 0));
  std::vector<uint8_t> part(100);
  REQUIRE(p.Take(id, 3, 200, 100, part.data()));
  CHECK(Expected(part, 200));
}

TEST_CASE("failures, other sources, the budget and Forget") {
  RangePrefetch p;
  const uint64_t a = p.NewSourceId(), b = p.NewSourceId();
  CHECK(a != b);
  std::atomic<int> calls{0};
  std::vector<uint8_t> out(100);
  p.Start(a, -1, 0, 100, SlowFetch(&calls, 0, true));
  CHECK_FALSE(p.Take(a, -1, 0, 100, out.data()));  // failed: the reader fetches itself
  CHECK(p.stats().failed == 1);
  p.Start(a, -1, 0, 100, SlowFetch(&calls, 0));
  CHECK_FALSE(p.Take(b, -1, 0, 100, out.data()));   // another source's range
  CHECK_FALSE(p.Take(a, 0, 0, 100, out.data()));    // another part
  CHECK_FALSE(p.Take(a, -1, 50, 100, out.data()));  // not covered
  p.Forget(a);
  CHECK_FALSE(p.Take(a, -1, 0, 100, out.data()));
  // Over the budget: ignored.
  const int before = calls;
  p.Start(b, -1, 0, static_cast<size_t>(RangePrefetch::kMaxBytes) + 1, SlowFetch(&calls, 0));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(calls == before);
}
