// The network strategy of a plan's run (plan_run.h): every read of the plan
// at once (ByteSource::ReadMany: a round trip for the lot), claimed first
// so that other plans share what it fetches (span_flights.h), from the
// thread that runs the plan; the workers decode once the bytes have landed:
// they never wait for the network.
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "cache_keys.h"
#include "plan_run.h"

namespace b2ndfs::store {

// A network source: every read of the plan at once (ReadMany), claimed
// first (SpanFlights::Begin), so that other plans share what it fetches.
void PlanRun::Issue(PlanBatch& batch) {
  SpanFlights& flights = loader_.flights_;
  std::vector<source::PartRead> pieces;
  std::vector<std::pair<size_t, size_t>> owner;  // (read, index in its claim's mine)
  std::vector<char> piece_landed;
  auto land = [&](size_t j, const Status& s) {
    if (piece_landed[j] != 0) return;
    piece_landed[j] = 1;
    const auto [k, m] = owner[j];
    flights.Land(batch.claims[k], batch.claims[k].mine[m], s, &loads_.reads[k].owned,
                 &batch.counts[k]);
    if (!s.ok() && batch.landed[k].ok()) batch.landed[k] = s;
  };
  // Every claimed piece lands, also when an exception cut the batch short
  // (other plans wait for it).
  auto fail_unlanded = [&](const Status& status) {
    for (size_t k = 0; k < loads_.reads.size(); ++k) {
      if (batch.claimed[k] == 0) continue;
      for (const auto& f : batch.claims[k].mine) {
        if (f->landed()) continue;
        flights.Land(batch.claims[k], f, status, &loads_.reads[k].owned, &batch.counts[k]);
        if (batch.landed[k].ok()) batch.landed[k] = status;
      }
    }
  };
  try {
    for (size_t k = 0; k < loads_.reads.size(); ++k) {
      const BlockLoads::Read& read = loads_.reads[k];
      if (read.blocks.empty() || !Prepare(k, SIZE_MAX)) continue;
      SpanFlights::Claim& claim = batch.claims[k];
      claim = flights.Begin(read.part, read.fetched_begin, read.fetched_end, Target(k));
      batch.claimed[k] = 1;
      for (size_t m = 0; m < claim.mine.size(); ++m) {
        const SpanFlights::Flight& f = *claim.mine[m];
        pieces.push_back(source::PartRead{read.part, f.begin, static_cast<size_t>(f.end - f.begin),
                                          claim.out.get() + (f.begin - claim.begin)});
        owner.emplace_back(k, m);
      }
    }
    piece_landed.assign(pieces.size(), 0);
    loader_.source_.ReadMany(pieces, land);
  } catch (...) {
    fail_unlanded(StatusOfCurrentException("source read"));
  }
}

// After Issue(): read k's bytes, with those other plans were fetching.
void PlanRun::Join(PlanBatch& batch, size_t k) {
  BlockLoads::Read& read = loads_.reads[k];
  if (!batch.claimed[k]) return;
  read.status = loader_.flights_.Join(
      batch.claims[k], batch.landed[k],
      [this](int64_t part, int64_t offset, int64_t n, uint8_t* out) {
        return ReadSource(part, offset, n, out);
      },
      &batch.counts[k]);
  Finish(k, batch.counts[k]);
}

// Until a network plan ends, read-ahead leaves its blocks alone
// (BlockLoader::Fetching).
class PlanRun::Fetching {
 public:
  Fetching(const BlockLoader& loader, const BlockLoads& loads) : loader_(loader), loads_(loads) {
    std::lock_guard<std::mutex> lock(loader_.fetching_mutex_);
    for (const BlockLoads::Block& b : loads_.blocks) {
      ++loader_.fetching_[{b.chunk, b.block}];
      ++added_;
    }
  }
  ~Fetching() {
    std::lock_guard<std::mutex> lock(loader_.fetching_mutex_);
    for (size_t i = 0; i < added_; ++i) {
      const BlockLoads::Block& b = loads_.blocks[i];
      auto it = loader_.fetching_.find({b.chunk, b.block});
      if (--it->second == 0) loader_.fetching_.erase(it);
    }
  }
  Fetching(const Fetching&) = delete;
  Fetching& operator=(const Fetching&) = delete;

 private:
  const BlockLoader& loader_;
  const BlockLoads& loads_;
  size_t added_ = 0;
};

// A network source: this thread (a reader's, or an I/O worker's running
// read-ahead) waits for the bytes, every read of the plan at once when the
// source takes them together (one round trip for the lot); only then are
// the blocks decoded, on the workers. A decoder that waited here would stop
// every read's decoding (cached blocks' misses too) for a round trip.
// Blocks loaded alone read the source: this thread (and the I/O workers,
// when the mount has them) loads them, not the decoders.
void PlanRun::RunNetwork() {
  const Fetching fetching(loader_, loads_);
  PlanBatch batch(loads_.reads.size());
  const bool batched = loader_.policy_.batch_plan_reads && loads_.reads.size() > 1;
  if (batched) Issue(batch);
  // The first failed read fails the plan (as a failed block does): no more
  // reads are asked for, no block is loaded alone instead.
  for (size_t k = 0; k < loads_.reads.size() && !failed_.load(); ++k) {
    BlockLoads::Read& read = loads_.reads[k];
    if (read.blocks.empty()) continue;
    if (batched) {
      Join(batch, k);
    } else {
      Fetch(k, SIZE_MAX);
    }
    if (!read.status.ok()) Fail(read.status);
  }
  std::vector<size_t> decode, alone;
  for (size_t i = 0; i < loads_.blocks.size(); ++i) {
    (loads_.blocks[i].view >= 0 && InBuffer(i) ? decode : alone).push_back(i);
  }
  ForEachBlock(workers_, decode.size(), [&](size_t j) {
    LoadBlock(decode[j], [&] { return loader_.DecodePlanned(loads_, decode[j]); });
  });
  ForEachBlock(loader_.context_.io_workers, alone.size(), [&](size_t j) {
    const BlockLoads::Block& b = loads_.blocks[alone[j]];
    LoadBlock(alone[j], [&] { return loader_.DecodeBlock(b.chunk, b.block); });
  });
}

}  // namespace b2ndfs::store
