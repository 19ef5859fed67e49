// Running a plan (BlockLoader::Run): the blocks are decoded straight from
// the plan's read buffers into their cache entries, in one round of parallel
// tasks. Each read fetches only the bytes no other plan has in flight
// (span_flights.h). A local read is made by the first task that needs it
// (RunLocal); a network source gets all of the plan's reads at once
// (ByteSource::ReadMany: a round trip for the lot) from the thread that runs
// the plan, and the workers decode once the bytes have landed: they never
// wait for the network (RunNetwork, block_run_network.cc). A read that serves blocks of several
// chunks is not copied apart: each chunk's head, rebased, sits in front of
// the read's bytes in the same buffer (codec::RebaseChunkHead).
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/store/worker_pool.h"
#include "cache_keys.h"
#include "once_flags.h"
#include "plan_run.h"

namespace b2ndfs::store {

void ForEachBlock(WorkerPool* workers, size_t n, const std::function<void(size_t)>& fn) {
  if (workers != nullptr && n > 1) {
    workers->ParallelFor(n, fn);
  } else {
    for (size_t i = 0; i < n; ++i) fn(i);
  }
}

// Where block i's compressed bytes are in its part.
std::pair<int64_t, int64_t> PlanRun::PartSpan(size_t i) const {
  const BlockLoads::Block& b = loads_.blocks[i];
  const BlockLoads::View& view = loads_.views[static_cast<size_t>(b.view)];
  const int64_t base = loads_.chunks[view.chunk].ref.Base(sparse_);
  return {base + b.span.begin, base + b.span.end};
}

// Sizes read k's buffer and sets the bytes of the part its blocks still
// need (block `first` needs them now); false if none are. Blocks another
// reader loaded since the plan was made are not fetched again
// (DecodePlanned loads such a block alone should it be evicted before its
// turn).
// The buffer holds the heads, then the fetched bytes only: no byte of it
// that a decoder may see was left unwritten (see RebaseHeads).
bool PlanRun::Prepare(size_t k, size_t first) {
  BlockLoads::Read& read = loads_.reads[k];
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i : read.blocks) {
    const BlockLoads::Block& b = loads_.blocks[i];
    if (i != first &&
        loader_.context_.cache->Contains(BlockKey(loader_.cache_id_, b.chunk, b.block))) {
      continue;
    }
    const auto [begin, end] = PartSpan(i);
    lo = std::min(lo, begin);
    hi = std::max(hi, end);
  }
  if (lo >= hi) return false;
  read.fetched_begin = lo;
  read.fetched_end = hi;
  read.buffer = std::make_shared<cache::Bytes>(static_cast<size_t>(read.heads_bytes + hi - lo));
  return true;
}

// Where read k's fetched bytes go, shared with other plans (SpanFlights).
std::shared_ptr<uint8_t> PlanRun::Target(size_t k) const {
  const BlockLoads::Read& read = loads_.reads[k];
  return std::shared_ptr<uint8_t>(read.buffer, read.buffer->data() + read.heads_bytes);
}

// Read k's bytes are in (or read.status says why not): counts them and
// rebases its chunk heads.
void PlanRun::Finish(size_t k, const SpanFlights::Counts& counts) {
  const BlockLoads::Read& read = loads_.reads[k];
  GlobalReadStats().bytes_fetched += static_cast<uint64_t>(counts.read);
  GlobalReadStats().bytes_shared += static_cast<uint64_t>(counts.shared);
  if (!read.status.ok()) return;
  if (read.nblocks > 1) {
    GlobalReadStats().coalesced_reads++;
    GlobalReadStats().coalesced_blocks += read.nblocks;
  }
  RebaseHeads(read);
}

// The decoder guard: a decoder is handed the view's rebased head, then
// bytes up to the end of the view's fetched bytes, and the head's cbytes
// says so. A crafted block stream that claims more bytes than its span
// then fails in c-blosc2 (it checks every length against cbytes) rather
// than reading the buffer's unfetched tail (reused memory: another
// container's bytes). Between the head and its bytes lie only the later
// views' heads, each written (or zeroed) here.
void PlanRun::RebaseHeads(const BlockLoads::Read& read) {
  for (size_t v : read.views) {
    BlockLoads::View& view = loads_.views[v];
    const BlockLoads::Chunk& chunk = loads_.chunks[view.chunk];
    const int64_t base = chunk.ref.Base(sparse_);
    const std::span<uint8_t> head(read.buffer->data() + view.head_pos,
                                  static_cast<size_t>(codec::ChunkHeadSize(chunk.info)));
    // The view's bytes that were fetched (blocks outside them are decoded
    // alone: InBuffer).
    const codec::ChunkSpan cut{std::max(view.span.begin, read.fetched_begin - base),
                               std::min(view.span.end, read.fetched_end - base)};
    if (cut.begin >= cut.end) {
      view.status = Status(EIO, "internal error: no bytes of the view were fetched");
    } else {
      const int64_t distance =
          read.heads_bytes + (base + cut.begin - read.fetched_begin) - view.head_pos;
      view.cbytes = distance + (cut.end - cut.begin);
      view.status =
          codec::RebaseChunkHead(*chunk.head, chunk.info, cut, distance, view.cbytes, head);
    }
    if (!view.status.ok()) std::memset(head.data(), 0, head.size());
  }
}

// A local source: read k by the first of its blocks' tasks.
void PlanRun::Fetch(size_t k, size_t first) {
  if (!Prepare(k, first)) return;
  BlockLoads::Read& read = loads_.reads[k];
  SpanFlights::Counts counts;
  read.status = loader_.flights_.Fetch(
      read.part, read.fetched_begin, read.fetched_end, Target(k),
      [this](int64_t part, int64_t offset, int64_t n, uint8_t* out) {
        return ReadSource(part, offset, n, out);
      },
      &read.owned, &counts);
  Finish(k, counts);
}

void PlanRun::Fail(const Status& status) {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (!failed_.load(std::memory_order_relaxed)) {
    first_failure_ = status;
    failed_.store(true, std::memory_order_release);
  }
}

// Block i into the cache (single-flight per block) by `make`, and into
// loads.blocks.
void PlanRun::LoadBlock(size_t i, const std::function<Result<cache::Value>()>& make) {
  BlockLoads::Block& b = loads_.blocks[i];
  const cache::Key key = BlockKey(loader_.cache_id_, b.chunk, b.block);
  bool skipped = false;
  auto value = loader_.context_.cache->GetOrLoad(key, [&]() -> Result<cache::Value> {
    if (failed_.load(std::memory_order_acquire)) {
      skipped = true;
      std::lock_guard<std::mutex> lock(failure_mutex_);
      return first_failure_;
    }
    return make();
  });
  if (value.ok()) {
    b.value = std::move(value).value();
  } else if (skipped) {
    b.status = value.status();
  } else {
    b.status = value.status().WithContext("chunk " + std::to_string(b.chunk) + " block " +
                                          std::to_string(b.block));
    Fail(b.status);
  }
  if (b.view >= 0) {
    const size_t k = loads_.views[static_cast<size_t>(b.view)].read;
    if (unfinished_[k].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      release_.One(loads_.reads[k]);
    }
  }
}

// Whether block i's bytes are in its read's buffer (else it is loaded
// alone: a block another reader had loaded when the read was sized, and
// that was evicted since).
bool PlanRun::InBuffer(size_t i) const {
  const auto [begin, end] = PartSpan(i);
  const BlockLoads::Read& read = loads_.reads[loads_.views[loads_.blocks[i].view].read];
  return begin >= read.fetched_begin && end <= read.fetched_end;
}

// A local source: one round of tasks, one per block: the first block that
// needs a read does it, the others of that read wait for it (OnceFlags).
// Reads overlap with decoding, a read whose blocks another reader loaded
// meanwhile is skipped, and the workers are woken once per plan rather
// than twice (on a busy machine every wake-up can wait for a CPU).
// Every read's first block is handed out first: the first tasks start as
// many reads as there are threads, rather than several threads waiting for
// one read while the next ones are not asked for yet.
void PlanRun::RunLocal() {
  std::vector<size_t> order;
  order.reserve(loads_.blocks.size());
  std::vector<bool> first(loads_.blocks.size(), false);
  for (const BlockLoads::Read& read : loads_.reads) {
    if (read.blocks.empty()) continue;
    order.push_back(read.blocks.front());
    first[read.blocks.front()] = true;
  }
  for (size_t i = 0; i < loads_.blocks.size(); ++i) {
    if (!first[i]) order.push_back(i);
  }
  OnceFlags fetched(loads_.reads.size());
  ForEachBlock(workers_, order.size(), [&](size_t j) {
    const size_t i = order[j];
    const BlockLoads::Block& b = loads_.blocks[i];
    LoadBlock(i, [&]() -> Result<cache::Value> {
      if (b.view < 0) return loader_.DecodeBlock(b.chunk, b.block);
      const size_t k = loads_.views[static_cast<size_t>(b.view)].read;
      fetched.Call(k, [&] { Fetch(k, i); });
      if (!InBuffer(i)) return loader_.DecodeBlock(b.chunk, b.block);
      return loader_.DecodePlanned(loads_, i);
    });
  });
}

// Blocks a carrier makes: nothing is read.
void BlockLoader::RunMade(BlockLoads& loads, WorkerPool* workers) const {
  ForEachBlock(workers, loads.blocks.size(), [&](size_t i) {
    BlockLoads::Block& b = loads.blocks[i];
    auto made = context_.cache->GetOrLoad(BlockKey(cache_id_, b.chunk, b.block),
                                          [&] { return maker_->Make(b.chunk, b.block); });
    if (made.ok()) {
      b.value = std::move(made).value();
    } else {
      b.status = made.status();
    }
  });
}

void BlockLoader::Run(BlockLoads& loads, WorkerPool* workers) const {
  if (maker_ != nullptr) return RunMade(loads, workers);
  PlanRun run(*this, loads, workers);
  if (network_) {
    run.RunNetwork();
  } else {
    run.RunLocal();
  }
}

bool BlockLoader::Fetching(int64_t chunk, int64_t block) const {
  std::lock_guard<std::mutex> lock(fetching_mutex_);
  return fetching_.count({chunk, block}) != 0;
}

}  // namespace b2ndfs::store
