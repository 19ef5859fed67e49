// Planning a load of many blocks (BlockLoader::Plan): their compressed
// spans, found from the cached chunk heads, are grouped into few source
// reads (read_plan.h); block_run.cc runs the plan.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "b2ndfs/store/read_plan.h"
#include "b2ndfs/store/worker_pool.h"
#include "block_loader.h"
#include "cache_keys.h"

namespace b2ndfs::store {

using geometry::ArrayLayout;

namespace {

// Lists the chunks of the plan's blocks in loads.chunks; returns each
// block's index there.
std::vector<size_t> ListChunks(BlockLoads& loads) {
  std::map<int64_t, size_t> chunk_slot;
  std::vector<size_t> block_chunk(loads.blocks.size());
  for (size_t i = 0; i < loads.blocks.size(); ++i) {
    const int64_t chunk = loads.blocks[i].chunk;
    auto [it, inserted] = chunk_slot.try_emplace(chunk, loads.chunks.size());
    if (inserted) loads.chunks.push_back(BlockLoads::Chunk{chunk, {}, nullptr, {}, false});
    block_chunk[i] = it->second;
  }
  return block_chunk;
}

// One read per coalesced span, with a view per chunk whose blocks it
// serves: the chunk's head goes in front of the read's bytes.
void GroupReads(BlockLoads& loads, const std::vector<CoalescedRead>& coalesced,
                const std::vector<size_t>& span_block, const std::vector<size_t>& block_chunk) {
  for (const CoalescedRead& r : coalesced) {
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

}  // namespace

void BlockLoader::Plan(BlockLoads& loads, WorkerPool* workers) const {
  if (maker_ != nullptr) return;  // made in Run: nothing to read
  const std::vector<size_t> block_chunk = ListChunks(loads);
  FindHeads(loads, workers);
  MarkPlannable(loads);
  std::vector<size_t> span_block;
  const std::vector<SourceSpan> spans = BlockSpans(loads, block_chunk, &span_block);
  if (spans.empty()) return;
  GroupReads(loads, CoalesceSpans(spans, policy_.coalesce), span_block, block_chunk);
}

// The plan's chunks' heads that are cached; returns the chunks whose heads
// are not (those that can be had).
std::vector<size_t> BlockLoader::CachedHeads(BlockLoads& loads) const {
  std::vector<size_t> cold;
  for (size_t c = 0; c < loads.chunks.size(); ++c) {
    BlockLoads::Chunk& chunk = loads.chunks[c];
    if (chunk.head != nullptr) continue;
    auto ref = directory_.Locate(chunk.index);
    if (!ref.ok() || ref->kind != format::ChunkKind::kStored) continue;
    chunk.ref = *ref;
    chunk.head = context_.cache->TryGet(ChunkHeadKey(cache_id_, chunk.index));
    if (chunk.head == nullptr) cold.push_back(c);
  }
  return cold;
}

// Chunk heads: cached ones here, the others read together. A chunk whose
// head cannot be had is left to DecodeBlock, which says why.
void BlockLoader::FindHeads(BlockLoads& loads, WorkerPool* workers) const {
  const std::vector<size_t> cold = CachedHeads(loads);
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
    CachedHeads(loads);
  } else if (!cold.empty()) {
    // Local: in parallel on the workers (a cold disk serves several reads
    // at once better than one after the other); a network source's that
    // cannot batch them, on the I/O workers (never a decoder's wait).
    ForEachBlock(network_ ? context_.io_workers : workers, cold.size(), [&](size_t k) {
      BlockLoads::Chunk& chunk = loads.chunks[cold[k]];
      auto head = directory_.FetchHead(chunk.index);
      if (head.ok()) chunk.head = std::move(head).value();
    });
  }
}

// The chunks whose blocks can be decoded alone from their spans.
void BlockLoader::MarkPlannable(BlockLoads& loads) const {
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
}

// Each planned block's compressed span, as bytes of a source part; sets
// span_block[j] to the block of span j.
std::vector<SourceSpan> BlockLoader::BlockSpans(BlockLoads& loads,
                                                const std::vector<size_t>& block_chunk,
                                                std::vector<size_t>* span_block) const {
  const ArrayLayout& layout = layout_;
  const int64_t itemsize = layout.itemsize();
  std::vector<SourceSpan> spans;
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
    span_block->push_back(i);
  }
  return spans;
}

}  // namespace b2ndfs::store
