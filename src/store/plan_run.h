// store/plan_run (private to store): one run of a BlockLoader's plan
// (BlockLoader::Run), the state its steps share, on the stack of the
// thread that runs the plan.
//
// The steps common to both strategies (block_run.cc): size a read's buffer
// (Prepare), fetch it (Fetch), rebase its chunk heads (Finish), load a
// block into the cache (LoadBlock). The local strategy (RunLocal,
// block_run.cc) reads each read from the first task that needs it; the
// network strategy (RunNetwork, block_run_network.cc) issues every read
// at once from this thread and decodes on the workers once bytes landed.
// Thread-safety: the workers call the steps at once; failed_ and the
// per-read counters are atomic, first_failure_ is guarded.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "block_loader.h"

namespace b2ndfs::store {

// A network plan's reads, all issued at once (PlanRun::Issue): what each
// read claimed, how its own pieces landed, and what it fetched.
struct PlanBatch {
  explicit PlanBatch(size_t n) : claims(n), claimed(n, 0), landed(n), counts(n) {}
  std::vector<SpanFlights::Claim> claims;
  std::vector<char> claimed;
  std::vector<Status> landed;  // the first failure of a read's own pieces
  std::vector<SpanFlights::Counts> counts;
};

// Once a read's blocks are in the cache (or failed), its bytes are no
// longer worth sharing: it is released by the task that finishes its last
// block, so that its buffer serves the plan's next reads (memory in use,
// rather than the whole plan's compressed bytes in new pages at once), and
// at the end whatever is left (an exception passed by).
struct ReleaseReads {
  BlockLoads& loads;
  SpanFlights& flights;
  void One(BlockLoads::Read& read) const {
    flights.Release(read.owned);
    read.owned.clear();
    read.buffer.reset();
  }
  ~ReleaseReads() {
    for (BlockLoads::Read& read : loads.reads) One(read);
  }
};

// One run of a plan: the state its steps share, for as long as Run lasts.
class PlanRun {
 public:
  PlanRun(const BlockLoader& loader, BlockLoads& loads, WorkerPool* workers)
      : loader_(loader),
        loads_(loads),
        workers_(workers),
        sparse_(loader.source_.sparse()),
        release_{loads, loader.flights_},
        unfinished_(new std::atomic<size_t>[loads.reads.size()]) {
    for (size_t k = 0; k < loads.reads.size(); ++k) {
      unfinished_[k].store(loads.reads[k].blocks.size(), std::memory_order_relaxed);
    }
  }

  void RunLocal();    // block_run.cc
  void RunNetwork();  // block_run_network.cc

 private:
  class Fetching;

  std::pair<int64_t, int64_t> PartSpan(size_t i) const;
  bool Prepare(size_t k, size_t first);
  std::shared_ptr<uint8_t> Target(size_t k) const;
  Status ReadSource(int64_t part, int64_t offset, int64_t n, uint8_t* out) const {
    return loader_.source_.Read(part, offset, n, out);
  }
  void Finish(size_t k, const SpanFlights::Counts& counts);
  void RebaseHeads(const BlockLoads::Read& read);
  void Fetch(size_t k, size_t first);
  void Issue(PlanBatch& batch);
  void Join(PlanBatch& batch, size_t k);
  void LoadBlock(size_t i, const std::function<Result<cache::Value>()>& make);
  bool InBuffer(size_t i) const;
  void Fail(const Status& status);

  const BlockLoader& loader_;
  BlockLoads& loads_;
  WorkerPool* const workers_;
  const bool sparse_;
  ReleaseReads release_;
  // Blocks of each read not finished yet: the last one releases the read.
  std::unique_ptr<std::atomic<size_t>[]> unfinished_;
  // The plan fails with its first failed block (its reader gets that error
  // whatever the others do): blocks not begun yet are not loaded any more,
  // or a source that fails (each request with its retries) would be asked
  // again for every one of them, one after the other.
  std::atomic<bool> failed_{false};
  std::mutex failure_mutex_;  // leaf lock
  Status first_failure_;      // guarded by failure_mutex_; set once failed_ is
};

}  // namespace b2ndfs::store
