// remote/range_prefetch (private to src/remote): ranges a reader announced
// (ByteSource::Prefetch) fetched in the background, so that the reads of one
// plan, which its caller makes one after the other, cost one round trip
// together instead of one each.
//
// A started range is held until a read takes it (a read of exactly that
// range), or for kHoldSeconds; reads inside a range that is still being
// fetched wait for it instead of asking again. A range that failed is
// dropped, and its reader fetches it itself (and reports the error).
// Bounds: at most kMaxBytes of ranges held or in flight per tree (hints past
// that are ignored), fetched by kThreads threads (started on first use).
// Ownership: the tree owns one; sources hold it through a shared_ptr and a
// source id (ranges of a source that is gone are dropped by Forget()).
// Thread-safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

class RangePrefetch {
 public:
  static constexpr int64_t kMaxBytes = int64_t{64} << 20;
  static constexpr size_t kThreads = 6;
  static constexpr double kHoldSeconds = 10.0;

  using Fetch = std::function<Status(int64_t offset, size_t length, uint8_t* out)>;

  RangePrefetch() = default;
  ~RangePrefetch();
  RangePrefetch(const RangePrefetch&) = delete;
  RangePrefetch& operator=(const RangePrefetch&) = delete;

  // A unique id for a source (never reused).
  uint64_t NewSourceId();
  // Starts fetching bytes [offset, offset + length) of a source's part,
  // unless held or in flight already, or over the budget.
  void Start(uint64_t source, int64_t part, int64_t offset, size_t length, Fetch fetch);
  // Copies the range into `out` if a started range holds it (waiting for
  // its fetch); false if none does or its fetch failed.
  bool Take(uint64_t source, int64_t part, int64_t offset, size_t length, uint8_t* out);
  // Drops a source's ranges.
  void Forget(uint64_t source);

  struct Stats {
    uint64_t started = 0, taken = 0, dropped = 0, failed = 0;
  };
  Stats stats() const;

 private:
  struct Range {
    uint64_t source = 0;
    int64_t part = 0;
    int64_t offset = 0;
    size_t length = 0;
    Fetch fetch;
    enum State { kQueued, kRunning, kDone, kFailed } state = kQueued;
    std::vector<uint8_t> bytes;
    double done_at = 0;
  };
  using RangePtr = std::shared_ptr<Range>;

  void Work();
  void Expire();                       // mutex_ held
  void Remove(const RangePtr& range);  // mutex_ held

  mutable std::mutex mutex_;  // leaf lock; guards everything below
  std::condition_variable queued_;
  std::condition_variable finished_;
  std::list<RangePtr> ranges_;  // held or in flight, oldest first
  std::deque<RangePtr> queue_;
  std::vector<std::thread> threads_;
  int64_t bytes_ = 0;
  uint64_t next_source_ = 1;
  bool stopping_ = false;
  Stats stats_;
};

}  // namespace b2ndfs::remote
