// Loading many blocks at once: their compressed spans, found from the cached
// chunk heads, are grouped into few source reads (read_plan.h), and the
// blocks are decoded straight from the read buffers into their cache
// entries, in one round of parallel tasks. Each read fetches only the bytes
// no other plan has in flight (span_flights.h). A local read is made by the
// first task that needs it; a network source gets all of the plan's reads at
// once (ByteSource::ReadMany: a round trip for the lot) from the thread that
// runs the plan, and the workers decode once the bytes have landed: they
// never wait for the network. A read that serves blocks of several chunks is not copied
// apart: each chunk's head, rebased, sits in front of the read's bytes in the
// same buffer (codec::RebaseChunkHead).
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "b2ndfs/store/read_plan.h"
#include "b2ndfs/store/worker_pool.h"
#include "b2ndfs/util/single_flight.h"
#include "block_loader.h"
#include "cache_keys.h"
#include "once_flags.h"

namespace b2ndfs::store {

using geometry::ArrayLayout;

namespace {

void ForEach(WorkerPool* workers, size_t n, const std::function<void(size_t)>& fn) {
  if (workers != nullptr && n > 1) {
    workers->ParallelFor(n, fn);
  } else {
    for (size_t i = 0; i < n; ++i) fn(i);
  }
}

// A network plan's reads, all issued at once (Run): what each read claimed,
// how its own pieces landed, and what it fetched.
struct PlanBatch {
  explicit PlanBatch(size_t n) : claims(n), claimed(n, 0), landed(n), counts(n) {}
  std::vector<SpanFlights::Claim> claims;
  std::vector<char> claimed;
  std::vector<Status> landed;  // the first failure of a read's own pieces
  std::vector<SpanFlights::Counts> counts;
};

}  // namespace

void BlockLoader::Plan(BlockLoads& loads, WorkerPool* workers) const {
  if (maker_ != nullptr) return;  // made in Run: nothing to read
  const ArrayLayout& layout = layout_;
  const int64_t itemsize = layout.itemsize();
  std::map<int64_t, size_t> chunk_slot;
  std::vector<size_t> block_chunk(loads.blocks.size());
  for (size_t i = 0; i < loads.blocks.size(); ++i) {
    const int64_t chunk = loads.blocks[i].chunk;
    auto [it, inserted] = chunk_slot.try_emplace(chunk, loads.chunks.size());
    if (inserted) loads.chunks.push_back(BlockLoads::Chunk{chunk, {}, nullptr, {}, false});
    block_chunk[i] = it->second;
  }

  // Chunk heads: cached ones here, the others read together. A chunk whose
  // head cannot be had is left to DecodeBlock, which says why.
  std::vector<size_t> cold;
  auto find_cached_heads = [&] {
    cold.clear();
    for (size_t c = 0; c < loads.chunks.size(); ++c) {
      BlockLoads::Chunk& chunk = loads.chunks[c];
      if (chunk.head != nullptr) continue;
      auto ref = directory_.Locate(chunk.index);
      if (!ref.ok() || ref->kind != format::ChunkKind::kStored) continue;
      chunk.ref = *ref;
      chunk.head = context_.cache->TryGet(ChunkHeadKey(cache_id_, chunk.index));
      if (chunk.head == nullptr) cold.push_back(c);
    }
  };
  find_cached_heads();
  if (!cold.empty() && policy_.batch_heads) {
    // In one ReadMany, with other chunks' heads (each a request to S3, a
    // range of a few multi-range requests to a web server).
    std::vector<int64_t> wanted(loads.chunks.size());
    for (size_t c = 0; c < loads.chunks.size(); ++c) wanted[c] = loads.chunks[c].index;
    std::vector<int64_t> fetch;
    for (size_t c : cold) fetch.push_back(loads.chunks[c].index);
    const std::vector<int64_t> others = directory_.OtherHeadsToFetch(wanted);
    fetch.insert(fetch.end(), others.begin(), others.end());
    directory_.FetchHeads(fetch);
    find_cached_heads();
  } else if (!cold.empty()) {
    // Local: in parallel on the workers (a cold disk serves several reads
    // at once better than one after the other); a network source's that
    // cannot batch them, on the I/O workers (never a decoder's wait).
    ForEach(network_ ? context_.io_workers : workers, cold.size(), [&](size_t k) {
      BlockLoads::Chunk& chunk = loads.chunks[cold[k]];
      auto head = directory_.FetchHead(chunk.index);
      if (head.ok()) chunk.head = std::move(head).value();
    });
  }
  for (BlockLoads::Chunk& chunk : loads.chunks) {
    if (chunk.head == nullptr) continue;
    auto info = codec::InspectChunkHeader(*chunk.head);
    if (!info.ok()) continue;
    const codec::ChunkInfo& ci = *info;
    if (ci.needs_whole_chunk || ci.special || ci.memcpyed || ci.vl_blocks ||
        ci.nbytes != ExpectedChunkBytes(chunk.index)) {
      continue;
    }
    chunk.info = ci;
    chunk.planned = true;
  }

  // Each block's compressed span, as bytes of a source part.
  std::vector<SourceSpan> spans;
  std::vector<size_t> span_block;
  const bool sparse = source_.sparse();
  for (size_t i = 0; i < loads.blocks.size(); ++i) {
    BlockLoads::Block& b = loads.blocks[i];
    const BlockLoads::Chunk& chunk = loads.chunks[block_chunk[i]];
    if (!chunk.planned) continue;
    const int64_t block_bytes = layout.BlockItems(b.chunk, b.block) * itemsize;
    b.first_byte = layout.BlockFirstItem(b.chunk, b.block) * itemsize;
    b.stored = std::clamp<int64_t>(chunk.info.nbytes - b.first_byte, 0, block_bytes);
    if (b.stored == 0) continue;
    auto span = codec::SpanForRange(*chunk.head, chunk.info, b.first_byte, b.stored);
    if (!span.ok()) continue;
    b.span = *span;
    const int64_t base = chunk.ref.Base(sparse);
    spans.push_back(SourceSpan{chunk.ref.Part(sparse), base + b.span.begin, base + b.span.end});
    span_block.push_back(i);
  }
  if (spans.empty()) return;
  for (CoalescedRead& r : CoalesceSpans(spans, policy_.coalesce)) {
    const size_t read_index = loads.reads.size();
    BlockLoads::Read read;
    read.part = r.part;
    read.begin = r.begin;
    read.end = r.end;
    read.nblocks = r.members.size();
    for (size_t m : r.members) {
      const size_t i = span_block[m];
      read.blocks.push_back(i);
      BlockLoads::Block& b = loads.blocks[i];
      const size_t c = block_chunk[i];
      auto view = std::find_if(read.views.begin(), read.views.end(),
                               [&](size_t v) { return loads.views[v].chunk == c; });
      size_t v;
      if (view == read.views.end()) {
        v = loads.views.size();
        BlockLoads::View fresh;
        fresh.chunk = c;
        fresh.read = read_index;
        fresh.head_pos = read.heads_bytes;
        loads.views.push_back(fresh);
        read.views.push_back(v);
        read.heads_bytes += codec::ChunkHeadSize(loads.chunks[c].info);
      } else {
        v = *view;
      }
      BlockLoads::View& target = loads.views[v];
      target.span.begin = std::min(target.span.begin, b.span.begin);
      target.span.end = std::max(target.span.end, b.span.end);
      b.view = static_cast<int64_t>(v);
    }
    loads.buffer_bytes += read.heads_bytes + (read.end - read.begin);
    loads.reads.push_back(std::move(read));
  }
}

void BlockLoader::Run(BlockLoads& loads, WorkerPool* workers) const {
  if (maker_ != nullptr) {
    ForEach(workers, loads.blocks.size(), [&](size_t i) {
      BlockLoads::Block& b = loads.blocks[i];
      auto made = context_.cache->GetOrLoad(BlockKey(cache_id_, b.chunk, b.block),
                                            [&] { return maker_->Make(b.chunk, b.block); });
      if (made.ok()) {
        b.value = std::move(made).value();
      } else {
        b.status = made.status();
      }
    });
    return;
  }
  const bool sparse = source_.sparse();
  // Where block i's compressed bytes are in its part.
  auto part_span = [&](size_t i) {
    const BlockLoads::Block& b = loads.blocks[i];
    const BlockLoads::View& view = loads.views[static_cast<size_t>(b.view)];
    const int64_t base = loads.chunks[view.chunk].ref.Base(sparse);
    return std::make_pair(base + b.span.begin, base + b.span.end);
  };
  // Sizes read k's buffer and sets the bytes of the part its blocks still
  // need (block `first` needs them now); false if none are. Blocks another
  // reader loaded since the plan was made are not fetched again
  // (DecodePlanned loads such a block alone should it be evicted before its
  // turn).
  // The buffer holds the heads, then the fetched bytes only: no byte of it
  // that a decoder may see was left unwritten (see finish).
  auto prepare = [&](size_t k, size_t first) {
    BlockLoads::Read& read = loads.reads[k];
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i : read.blocks) {
      const BlockLoads::Block& b = loads.blocks[i];
      if (i != first && context_.cache->Contains(BlockKey(cache_id_, b.chunk, b.block))) {
        continue;
      }
      const auto [begin, end] = part_span(i);
      lo = std::min(lo, begin);
      hi = std::max(hi, end);
    }
    if (lo >= hi) return false;
    read.fetched_begin = lo;
    read.fetched_end = hi;
    read.buffer = std::make_shared<cache::Bytes>(static_cast<size_t>(read.heads_bytes + hi - lo));
    return true;
  };
  // Where read k's fetched bytes go, shared with other plans (SpanFlights).
  auto target = [&](size_t k) {
    BlockLoads::Read& read = loads.reads[k];
    return std::shared_ptr<uint8_t>(read.buffer, read.buffer->data() + read.heads_bytes);
  };
  auto read_source = [this](int64_t part, int64_t offset, int64_t n, uint8_t* out) {
    return source_.Read(part, offset, n, out);
  };
  // Read k's bytes are in (or read.status says why not): counts them and
  // rebases its chunk heads.
  auto finish = [&](size_t k, const SpanFlights::Counts& counts) {
    BlockLoads::Read& read = loads.reads[k];
    GlobalReadStats().bytes_fetched += static_cast<uint64_t>(counts.read);
    GlobalReadStats().bytes_shared += static_cast<uint64_t>(counts.shared);
    if (!read.status.ok()) return;
    if (read.nblocks > 1) {
      GlobalReadStats().coalesced_reads++;
      GlobalReadStats().coalesced_blocks += read.nblocks;
    }
    // The decoder guard: a decoder is handed the view's rebased head, then
    // bytes up to the end of the view's fetched bytes, and the head's cbytes
    // says so. A crafted block stream that claims more bytes than its span
    // then fails in c-blosc2 (it checks every length against cbytes) rather
    // than reading the buffer's unfetched tail (reused memory: another
    // container's bytes). Between the head and its bytes lie only the later
    // views' heads, each written (or zeroed) here.
    for (size_t v : read.views) {
      BlockLoads::View& view = loads.views[v];
      const BlockLoads::Chunk& chunk = loads.chunks[view.chunk];
      const int64_t base = chunk.ref.Base(sparse);
      const std::span<uint8_t> head(read.buffer->data() + view.head_pos,
                                    static_cast<size_t>(codec::ChunkHeadSize(chunk.info)));
      // The view's bytes that were fetched (blocks outside them are decoded
      // alone: Run's range check).
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
  };
  // A local source: read k by the first of its blocks' tasks.
  auto fetch = [&](size_t k, size_t first) {
    if (!prepare(k, first)) return;
    BlockLoads::Read& read = loads.reads[k];
    SpanFlights::Counts counts;
    read.status = flights_.Fetch(read.part, read.fetched_begin, read.fetched_end, target(k),
                                 read_source, &read.owned, &counts);
    finish(k, counts);
  };
  // A network source: every read of the plan at once (ReadMany), claimed
  // first (SpanFlights::Begin), so that other plans share what it fetches.
  PlanBatch batch(loads.reads.size());
  auto issue = [&] {
    std::vector<source::PartRead> pieces;
    std::vector<std::pair<size_t, size_t>> owner;  // (read, index in its claim's mine)
    std::vector<char> piece_landed;
    auto land = [&](size_t j, const Status& s) {
      if (piece_landed[j] != 0) return;
      piece_landed[j] = 1;
      const auto [k, m] = owner[j];
      flights_.Land(batch.claims[k], batch.claims[k].mine[m], s, &loads.reads[k].owned,
                    &batch.counts[k]);
      if (!s.ok() && batch.landed[k].ok()) batch.landed[k] = s;
    };
    // Every claimed piece lands, also when an exception cut the batch short
    // (other plans wait for it).
    auto fail_unlanded = [&](const Status& status) {
      for (size_t k = 0; k < loads.reads.size(); ++k) {
        if (batch.claimed[k] == 0) continue;
        for (const auto& f : batch.claims[k].mine) {
          if (f->landed()) continue;
          flights_.Land(batch.claims[k], f, status, &loads.reads[k].owned, &batch.counts[k]);
          if (batch.landed[k].ok()) batch.landed[k] = status;
        }
      }
    };
    try {
      for (size_t k = 0; k < loads.reads.size(); ++k) {
        const BlockLoads::Read& read = loads.reads[k];
        if (read.blocks.empty() || !prepare(k, SIZE_MAX)) continue;
        SpanFlights::Claim& claim = batch.claims[k];
        claim = flights_.Begin(read.part, read.fetched_begin, read.fetched_end, target(k));
        batch.claimed[k] = 1;
        for (size_t m = 0; m < claim.mine.size(); ++m) {
          const SpanFlights::Flight& f = *claim.mine[m];
          pieces.push_back(source::PartRead{read.part, f.begin,
                                            static_cast<size_t>(f.end - f.begin),
                                            claim.out.get() + (f.begin - claim.begin)});
          owner.emplace_back(k, m);
        }
      }
      piece_landed.assign(pieces.size(), 0);
      source_.ReadMany(pieces, land);
    } catch (...) {
      fail_unlanded(StatusOfCurrentException("source read"));
    }
  };
  // After issue(): read k's bytes, with those other plans were fetching.
  auto join = [&](size_t k) {
    BlockLoads::Read& read = loads.reads[k];
    if (!batch.claimed[k]) return;
    read.status = flights_.Join(batch.claims[k], batch.landed[k], read_source, &batch.counts[k]);
    finish(k, batch.counts[k]);
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
  } release{loads, flights_};
  std::unique_ptr<std::atomic<size_t>[]> unfinished(new std::atomic<size_t>[loads.reads.size()]);
  for (size_t k = 0; k < loads.reads.size(); ++k) {
    unfinished[k].store(loads.reads[k].blocks.size(), std::memory_order_relaxed);
  }
  // The plan fails with its first failed block (its reader gets that error
  // whatever the others do): blocks not begun yet are not loaded any more,
  // or a source that fails (each request with its retries) would be asked
  // again for every one of them, one after the other.
  std::atomic<bool> failed{false};
  std::mutex failure_mutex;
  Status first_failure;  // guarded by failure_mutex; set once `failed` is
  // Block i into the cache (single-flight per block) by `make`, and into
  // loads.blocks.
  auto load_block = [&](size_t i, const std::function<Result<cache::Value>()>& make) {
    BlockLoads::Block& b = loads.blocks[i];
    const cache::Key key = BlockKey(cache_id_, b.chunk, b.block);
    bool skipped = false;
    auto value = context_.cache->GetOrLoad(key, [&]() -> Result<cache::Value> {
      if (failed.load(std::memory_order_acquire)) {
        skipped = true;
        std::lock_guard<std::mutex> lock(failure_mutex);
        return first_failure;
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
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failed.load(std::memory_order_relaxed)) {
        first_failure = b.status;
        failed.store(true, std::memory_order_release);
      }
    }
    if (b.view >= 0) {
      const size_t k = loads.views[static_cast<size_t>(b.view)].read;
      if (unfinished[k].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        release.One(loads.reads[k]);
      }
    }
  };
  // Whether block i's bytes are in its read's buffer (else it is loaded
  // alone: a block another reader had loaded when the read was sized, and
  // that was evicted since).
  auto in_buffer = [&](size_t i) {
    const auto [begin, end] = part_span(i);
    const BlockLoads::Read& read = loads.reads[loads.views[loads.blocks[i].view].read];
    return begin >= read.fetched_begin && end <= read.fetched_end;
  };

  if (network_) {
    // A network source: this thread (a reader's, or an I/O worker's running
    // read-ahead) waits for the bytes, every read of the plan at once when
    // the source takes them together (one round trip for the lot); only then
    // are the blocks decoded, on the workers. A decoder that waited here
    // would stop every read's decoding (cached blocks' misses too) for a
    // round trip. Blocks loaded alone read the source: this thread (and the
    // I/O workers, when the mount has them) loads them, not the decoders.
    // Until the plan ends, read-ahead leaves its blocks alone.
    struct Fetching {
      const BlockLoader& loader;
      const BlockLoads& loads;
      size_t added = 0;
      void Add() {
        std::lock_guard<std::mutex> lock(loader.fetching_mutex_);
        for (const BlockLoads::Block& b : loads.blocks) {
          ++loader.fetching_[{b.chunk, b.block}];
          ++added;
        }
      }
      ~Fetching() {
        std::lock_guard<std::mutex> lock(loader.fetching_mutex_);
        for (size_t i = 0; i < added; ++i) {
          const BlockLoads::Block& b = loads.blocks[i];
          auto it = loader.fetching_.find({b.chunk, b.block});
          if (--it->second == 0) loader.fetching_.erase(it);
        }
      }
    } fetching{*this, loads};
    fetching.Add();
    const bool batched = policy_.batch_plan_reads && loads.reads.size() > 1;
    if (batched) issue();
    // The first failed read fails the plan (as a failed block does below):
    // no more reads are asked for, no block is loaded alone instead.
    for (size_t k = 0; k < loads.reads.size() && !failed.load(); ++k) {
      BlockLoads::Read& read = loads.reads[k];
      if (read.blocks.empty()) continue;
      if (batched) {
        join(k);
      } else {
        fetch(k, SIZE_MAX);
      }
      if (!read.status.ok()) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        first_failure = read.status;
        failed.store(true, std::memory_order_release);
      }
    }
    std::vector<size_t> decode, alone;
    for (size_t i = 0; i < loads.blocks.size(); ++i) {
      (loads.blocks[i].view >= 0 && in_buffer(i) ? decode : alone).push_back(i);
    }
    ForEach(workers, decode.size(), [&](size_t j) {
      load_block(decode[j], [&] { return DecodePlanned(loads, decode[j]); });
    });
    ForEach(context_.io_workers, alone.size(), [&](size_t j) {
      const BlockLoads::Block& b = loads.blocks[alone[j]];
      load_block(alone[j], [&] { return DecodeBlock(b.chunk, b.block); });
    });
    return;
  }

  // A local source: one round of tasks, one per block: the first block that
  // needs a read does it, the others of that read wait for it (OnceFlags).
  // Reads overlap with decoding, a read whose blocks another reader loaded
  // meanwhile is skipped, and the workers are woken once per plan rather
  // than twice (on a busy machine every wake-up can wait for a CPU).
  // Every read's first block is handed out first: the first tasks start as
  // many reads as there are threads, rather than several threads waiting for
  // one read while the next ones are not asked for yet.
  std::vector<size_t> order;
  order.reserve(loads.blocks.size());
  std::vector<bool> first(loads.blocks.size(), false);
  for (const BlockLoads::Read& read : loads.reads) {
    if (read.blocks.empty()) continue;
    order.push_back(read.blocks.front());
    first[read.blocks.front()] = true;
  }
  for (size_t i = 0; i < loads.blocks.size(); ++i) {
    if (!first[i]) order.push_back(i);
  }
  OnceFlags fetched(loads.reads.size());
  ForEach(workers, order.size(), [&](size_t j) {
    const size_t i = order[j];
    const BlockLoads::Block& b = loads.blocks[i];
    load_block(i, [&]() -> Result<cache::Value> {
      if (b.view < 0) return DecodeBlock(b.chunk, b.block);
      const size_t k = loads.views[static_cast<size_t>(b.view)].read;
      fetched.Call(k, fetch, k, i);
      if (!in_buffer(i)) return DecodeBlock(b.chunk, b.block);
      return DecodePlanned(loads, i);
    });
  });
}

bool BlockLoader::Fetching(int64_t chunk, int64_t block) const {
  std::lock_guard<std::mutex> lock(fetching_mutex_);
  return fetching_.count({chunk, block}) != 0;
}

Result<cache::Value> BlockLoader::DecodePlanned(const BlockLoads& loads, size_t index) const {
  const BlockLoads::Block& b = loads.blocks[index];
  const BlockLoads::View& view = loads.views[static_cast<size_t>(b.view)];
  const BlockLoads::Read& read = loads.reads[view.read];
  const BlockLoads::Chunk& chunk = loads.chunks[view.chunk];
  B2NDFS_RETURN_IF_ERROR(read.status);
  B2NDFS_RETURN_IF_ERROR(view.status);
  const int64_t block_bytes = layout_.BlockItems(b.chunk, b.block) * layout_.itemsize();
  auto block = std::make_shared<cache::Bytes>(static_cast<size_t>(block_bytes));
  // Only a short last chunk stores less than the block: the rest is never
  // copied out (as in DecodeBlock).
  if (b.stored < block_bytes) std::memset(block->data() + b.stored, 0, block_bytes - b.stored);
  // The rebased head, the later views' heads, and the view's fetched bytes
  // (finish in Run): nothing else.
  const std::span<const uint8_t> bytes(read.buffer->data() + view.head_pos,
                                       static_cast<size_t>(view.cbytes));
  B2NDFS_ASSIGN_OR_RETURN(codec::DecompressorPool * pool, DecompressorsFor(chunk.info));
  {
    auto lease = pool->Acquire();
    B2NDFS_RETURN_IF_ERROR(lease->DecompressRange(
        bytes, b.first_byte, std::span<uint8_t>(block->data(), static_cast<size_t>(b.stored))));
  }
  GlobalReadStats().blocks_decompressed++;
  GlobalReadStats().bytes_decompressed += block->size();
  return cache::Value(std::move(block));
}

}  // namespace b2ndfs::store
