// Serving reads: a byte range of a box -> sub-boxes of the array -> the
// blocks they touch, taken from the cache or decompressed (in parallel on the
// workers), and copied out piece by piece; and read-ahead.
#include "box_reader.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "b2ndfs/store/pin_budget.h"
#include "b2ndfs/store/worker_pool.h"
#include "b2ndfs/util/checked_math.h"
#include "b2ndfs/util/log.h"
#include "cache_keys.h"

namespace b2ndfs::store {

using geometry::ArrayLayout;
using geometry::BlockRef;
using geometry::Box;

namespace {

// One block's share of a read: its region lands in sub-box `tag` of the
// read; coordinates in ReadScratch::coords.
using Piece = geometry::BlockPiece;

// A block the read touches: pieces [first_piece, end_piece) are its, and
// `load` indexes the batch's BlockLoads when it was not cached.
struct BlockWork {
  int64_t chunk;
  int64_t block;
  size_t first_piece;
  size_t end_piece;
  cache::Value value;
  int64_t load;
};

// A thread's planning buffers, kept from read to read: a read of cached
// blocks then allocates nothing per block or piece.
struct ReadScratch {
  std::vector<Piece> pieces;
  std::vector<int64_t> coords;
  std::vector<BlockWork> blocks;
  std::vector<uint8_t*> sub_dst;  // where each sub-box's bytes start
  bool in_use = false;
};

// Bigger plans are not kept for the next read of the thread: what a thread
// keeps stays under ~400 KiB (for 3-D arrays), enough for a 1 MiB read of
// 16 KiB blocks.
constexpr size_t kMaxKeptPieces = 2048;

// This thread's ReadScratch for the duration of one read (a fresh one if a
// read on this thread is already using it). Cleared on the way out, so
// that no block stays pinned by a thread between reads.
class ScratchLease {
 public:
  ScratchLease() : scratch_(Thread().in_use ? own_ : Thread()) { scratch_.in_use = true; }
  ~ScratchLease() {
    if (scratch_.pieces.capacity() > kMaxKeptPieces) {
      scratch_ = ReadScratch{};
    } else {
      scratch_.pieces.clear();
      scratch_.coords.clear();
      scratch_.blocks.clear();
      scratch_.sub_dst.clear();
    }
    scratch_.in_use = false;
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  ReadScratch& get() { return scratch_; }

 private:
  static ReadScratch& Thread() {
    thread_local ReadScratch scratch;
    return scratch;
  }
  ReadScratch own_;
  ReadScratch& scratch_;
};

// How many NestedReadScopes are alive on this thread.
thread_local int nested_read_depth = 0;

// `bytes` of blocks held by a reader, for the guard's lifetime: granted by
// the mount's PinBudget (when it has one; a nested read draws on the
// admission of the read it is part of) and shown in the stats.
class Pin {
 public:
  Pin(PinBudget* pins, size_t bytes)
      : pins_(NestedReadScope::active() ? nullptr : pins), bytes_(bytes) {
    if (pins_ != nullptr) pins_->Acquire(bytes_);
    GlobalReadStats().pinned_bytes += static_cast<int64_t>(bytes_);
  }
  ~Pin() {
    GlobalReadStats().pinned_bytes -= static_cast<int64_t>(bytes_);
    if (pins_ != nullptr) pins_->Release(bytes_);
  }
  Pin(const Pin&) = delete;
  Pin& operator=(const Pin&) = delete;

 private:
  PinBudget* const pins_;
  const size_t bytes_;
};

}  // namespace

NestedReadScope::NestedReadScope() { ++nested_read_depth; }
NestedReadScope::~NestedReadScope() { --nested_read_depth; }
bool NestedReadScope::active() { return nested_read_depth > 0; }

// A warm reader's read: every block it touches is cached. Each piece is
// copied in the order listed, one block held at a time: no grouping, no
// batches (which cost as much per block as the copy of a small piece). The
// index slots of the next blocks are prefetched a few pieces ahead, so the
// lookups' cache misses overlap instead of queueing behind each copy. At the
// first block not cached it gives up and ReadBox plans the whole read
// (re-copying what was copied here, the same bytes; blocks looked up here
// count a second cache hit then).
// Nothing here waits: the block held is kept alive by the read's own cache
// handle (at most one block per reading thread outside the cache's budget,
// should it be evicted meanwhile), so the warm path does not pin through the
// mount's PinBudget, whose FIFO line would put it behind cold reads, and
// bumps no shared counter but the cache's hits, once.
bool BoxReader::CopyIfCached(const std::vector<Box>& boxes, std::span<const Piece> pieces,
                             std::span<const int64_t> coords,
                             std::span<uint8_t* const> sub_dst) const {
  const ArrayLayout& layout = layout_;
  const int64_t itemsize = layout.itemsize();
  const int n = layout.ndim();
  cache::BlockCache& cache = *context_.cache;
  constexpr size_t kPrefetchAhead = 8;
  auto key_of = [&](const Piece& p) { return BlockKey(cache_id_, p.chunk_index, p.block_index); };
  for (size_t i = 0; i < std::min(kPrefetchAhead, pieces.size()); ++i) {
    cache.Prefetch(key_of(pieces[i]));
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i + kPrefetchAhead < pieces.size()) cache.Prefetch(key_of(pieces[i + kPrefetchAhead]));
    const Piece& p = pieces[i];
    // Hits are counted once the read is served here: after a miss, ReadBox
    // looks every block up again and counts there.
    const cache::Value block = cache.TryGet(key_of(p), cache::BlockCache::Count::kNo);
    if (!block) return false;
    const int64_t* c = coords.data() + p.coords;
    geometry::CopyRegion(block->data(), geometry::BoxRef(c, c + n, n), sub_dst[p.tag], boxes[p.tag],
                         geometry::BoxRef(c + 2 * n, c + 3 * n, n), itemsize);
  }
  cache.CountHits(pieces.size());
  return true;
}

BoxReader::BoxReader(StoreContext& context, uint64_t cache_id, const ReadPolicy& policy,
                     const ArrayLayout& layout, const BlockLoader& loader)
    : context_(context), cache_id_(cache_id), policy_(policy), layout_(layout), loader_(loader) {}

Status BoxReader::ReadBox(const Box& box, int64_t item_begin, int64_t item_end,
                          uint8_t* out) const {
  const ArrayLayout& layout = layout_;
  const int64_t itemsize = layout.itemsize();
  const int n = layout.ndim();
  const std::vector<Box> boxes = geometry::LinearRangeToBoxes(box, item_begin, item_end);
  ScratchLease lease;
  ReadScratch& s = lease.get();
  uint8_t* dst = out;
  int64_t planned_items = 0;
  for (size_t k = 0; k < boxes.size(); ++k) {
    s.sub_dst.push_back(dst);
    planned_items += layout.AppendBlockPieces(boxes[k], k, s.pieces, s.coords);
    dst += boxes[k].NumItems() * itemsize;
  }
  // The reply buffer is not zeroed: every byte of it must come from a piece
  // (pieces never overlap), or memory that was never written would be sent.
  if (planned_items != item_end - item_begin) {
    return Status(EIO, "internal error: the read plan covers " + std::to_string(planned_items) +
                           " of " + std::to_string(item_end - item_begin) + " items");
  }
  if (CopyIfCached(boxes, s.pieces, s.coords, s.sub_dst)) return Status::Ok();
  // A block cut by the sub-boxes' borders has pieces in several of them:
  // group them, so that each block is looked up (or loaded) once.
  auto by_block = [](const Piece& a, const Piece& b) {
    return a.chunk_index != b.chunk_index ? a.chunk_index < b.chunk_index
                                          : a.block_index < b.block_index;
  };
  if (!std::is_sorted(s.pieces.begin(), s.pieces.end(), by_block)) {
    std::sort(s.pieces.begin(), s.pieces.end(), by_block);
  }
  for (size_t i = 0; i < s.pieces.size();) {
    size_t j = i + 1;
    while (j < s.pieces.size() && s.pieces[j].chunk_index == s.pieces[i].chunk_index &&
           s.pieces[j].block_index == s.pieces[i].block_index) {
      ++j;
    }
    s.blocks.push_back(
        BlockWork{s.pieces[i].chunk_index, s.pieces[i].block_index, i, j, nullptr, -1});
    i = j;
  }

  // Fetch in batches that fit the pinning budget, copy, release, repeat: a
  // read never holds more than max_pinned_bytes of blocks at once, plus the
  // compressed bytes it reads for them (pinned with them).
  const int64_t regular_block_items = layout.regular() ? layout.BlockItems(0, 0) : 0;
  for (size_t begin = 0; begin < s.blocks.size();) {
    size_t end = begin;
    size_t pinned = 0;
    while (end < s.blocks.size() && (end == begin || pinned < context_.max_pinned_bytes)) {
      const BlockWork& w = s.blocks[end];
      const int64_t items =
          layout.regular() ? regular_block_items : layout.BlockItems(w.chunk, w.block);
      pinned += static_cast<size_t>(items * itemsize);
      ++end;
    }
    const std::span<BlockWork> batch(s.blocks.data() + begin, end - begin);
    // One cache lookup per block; the missing ones are planned together
    // (reading only chunk heads, which the cache keeps) and loaded after the
    // pins are granted: no reader waits for pins while it holds some.
    BlockLoads loads;
    for (BlockWork& w : batch) {
      w.value = context_.cache->TryGet(BlockKey(cache_id_, w.chunk, w.block));
      if (w.value) continue;
      w.load = static_cast<int64_t>(loads.blocks.size());
      loads.blocks.push_back(BlockLoads::Block{w.chunk, w.block});
    }
    if (!loads.blocks.empty()) loader_.Plan(loads, context_.workers);
    pinned += static_cast<size_t>(loads.buffer_bytes);
    const Pin pin(context_.pins, pinned);
    if (!loads.blocks.empty()) {
      loader_.Run(loads, context_.workers);
      for (BlockWork& w : batch) {
        if (w.load < 0) continue;
        BlockLoads::Block& b = loads.blocks[static_cast<size_t>(w.load)];
        B2NDFS_RETURN_IF_ERROR(b.status);
        w.value = std::move(b.value);
      }
    }
    for (BlockWork& w : batch) {
      for (size_t i = w.first_piece; i < w.end_piece; ++i) {
        const Piece& p = s.pieces[i];
        const int64_t* c = s.coords.data() + p.coords;
        geometry::CopyRegion(w.value->data(), geometry::BoxRef(c, c + n, n), s.sub_dst[p.tag],
                             boxes[p.tag], geometry::BoxRef(c + 2 * n, c + 3 * n, n), itemsize);
      }
      w.value.reset();
    }
    begin = end;
  }
  return Status::Ok();
}

Status BoxReader::ReadBytes(const Box& box, int64_t offset, size_t length, uint8_t* out) const {
  if (length == 0) return Status::Ok();
  const int64_t itemsize = layout_.itemsize();
  const int64_t end = offset + static_cast<int64_t>(length);
  const int64_t first_item = offset / itemsize;
  const int64_t end_item = CeilDiv(end, itemsize);
  const int64_t head_skip = offset - first_item * itemsize;
  const int64_t tail_extra = end_item * itemsize - end;
  if (head_skip == 0 && tail_extra == 0) return ReadBox(box, first_item, end_item, out);
  // Partial items at either end: read whole items into a bounce buffer for
  // the first and last item only, the middle straight into `out`.
  std::vector<uint8_t> item(static_cast<size_t>(itemsize));
  int64_t cursor = first_item;
  uint8_t* dst = out;
  size_t remaining = length;
  if (head_skip != 0) {
    B2NDFS_RETURN_IF_ERROR(ReadBox(box, cursor, cursor + 1, item.data()));
    const size_t n = std::min(remaining, static_cast<size_t>(itemsize - head_skip));
    std::memcpy(dst, item.data() + head_skip, n);
    dst += n;
    remaining -= n;
    ++cursor;
  }
  const int64_t whole = static_cast<int64_t>(remaining) / itemsize;
  if (whole > 0) {
    B2NDFS_RETURN_IF_ERROR(ReadBox(box, cursor, cursor + whole, dst));
    dst += whole * itemsize;
    remaining -= static_cast<size_t>(whole * itemsize);
    cursor += whole;
  }
  if (remaining > 0) {
    B2NDFS_RETURN_IF_ERROR(ReadBox(box, cursor, cursor + 1, item.data()));
    std::memcpy(dst, item.data(), remaining);
  }
  return Status::Ok();
}

void BoxReader::Prefetch(const Box& box, int64_t body_offset, int64_t length,
                         std::shared_ptr<const void> owner) const {
  // A network source's read-ahead waits for its bytes on the I/O workers
  // and hands the decoding to the decoders once they land (BlockLoader::Run);
  // a local one's runs whole on the decoders (its reads are syscalls).
  WorkerPool* const queue =
      loader_.network() && context_.io_workers != nullptr ? context_.io_workers : context_.workers;
  WorkerPool* const decoders = queue == context_.workers ? nullptr : context_.workers;
  if (queue == nullptr || length <= 0) return;
  const int64_t itemsize = layout_.itemsize();
  const int64_t body_size = box.NumItems() * itemsize;
  if (body_offset >= body_size || length <= 0) return;
  const int64_t first = body_offset / itemsize;
  const int64_t last = CeilDiv(std::min(body_offset + length, body_size), itemsize);
  GlobalReadStats().prefetch_requests++;
  auto cached = [&](const std::pair<int64_t, int64_t>& b) {
    return context_.cache->Contains(BlockKey(cache_id_, b.first, b.second));
  };
  // A sequential reader of cached blocks lands here on every read: when the
  // blocks of the range's first, middle and last items are cached, take the
  // range as cached rather than list and look up every block (a warm read
  // would spend ~10% of its instructions on that). A wrong guess only costs
  // a later read its decompression.
  const int n = box.ndim();
  std::vector<int64_t> coords(static_cast<size_t>(n));
  auto block_of_item = [&](int64_t item) {
    for (int a = n - 1; a >= 0; --a) {  // C-order unravel inside the box
      const int64_t extent = box.stop[a] - box.start[a];
      coords[a] = box.start[a] + item % extent;
      item /= extent;
    }
    return layout_.BlockOf(coords);
  };
  if (cached(block_of_item(first)) && cached(block_of_item(first + (last - first) / 2)) &&
      cached(block_of_item(last - 1))) {
    return;
  }
  std::vector<std::pair<int64_t, int64_t>> wanted;
  for (const Box& sub : geometry::LinearRangeToBoxes(box, first, last)) {
    layout_.ForEachBlockIn(sub, [&](const BlockRef& ref, const Box&) {
      wanted.emplace_back(ref.chunk_index, ref.block_index);
    });
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  // Blocks some read (or earlier read-ahead) is loading are not asked for
  // again: a task would only wait for them.
  wanted.erase(std::remove_if(wanted.begin(), wanted.end(),
                              [&](const std::pair<int64_t, int64_t>& b) {
                                return context_.cache->ContainsOrLoading(
                                           BlockKey(cache_id_, b.first, b.second)) ||
                                       loader_.Fetching(b.first, b.second);
                              }),
               wanted.end());
  const size_t max_queued = 4 * static_cast<size_t>(queue->size()) + 16;
  // Neighbouring blocks, policy_.prefetch_task_bytes of them per task,
  // loaded as one plan: their bytes come in few large reads. What a task
  // holds is bounded by its blocks' compressed bytes (plus the plan's
  // waste), and at most queue->size() tasks run at once.
  const int64_t task_bytes = policy_.prefetch_task_bytes;
  for (size_t from = 0, to = 0; from < wanted.size(); from = to) {
    int64_t bytes = 0;
    // A task also ends where a chunk ends, once it has a quarter of its
    // bytes: the next chunk's blocks are elsewhere in the source (their own
    // request anyway), and another task decodes them in parallel.
    while (to < wanted.size() &&
           (to == from || (bytes < task_bytes &&
                           (wanted[to].first == wanted[to - 1].first || bytes < task_bytes / 4)))) {
      bytes += layout_.BlockItems(wanted[to].first, wanted[to].second) * itemsize;
      ++to;
    }
    std::vector<std::pair<int64_t, int64_t>> group(wanted.begin() + static_cast<ptrdiff_t>(from),
                                                   wanted.begin() + static_cast<ptrdiff_t>(to));
    // `this` lives as long as `owner`.
    const bool queued = queue->TrySubmit(
        [this, owner, decoders, group = std::move(group)] {
          try {
            BlockLoads loads;
            for (const auto& [chunk, block] : group) {
              if (!context_.cache->ContainsOrLoading(BlockKey(cache_id_, chunk, block)) &&
                  !loader_.Fetching(chunk, block)) {
                loads.blocks.push_back(BlockLoads::Block{chunk, block});
              }
            }
            if (loads.blocks.empty()) return;
            loader_.Plan(loads, nullptr);
            loader_.Run(loads, decoders);
            uint64_t loaded = 0;
            for (const BlockLoads::Block& b : loads.blocks) loaded += b.status.ok() && b.value;
            GlobalReadStats().readahead_blocks_loaded += loaded;
          } catch (...) {
            // Read-ahead is best effort; the real read reports errors.
          }
        },
        max_queued);
    if (!queued) break;
    GlobalReadStats().readahead_blocks_queued += to - from;
  }
}

bool BoxReader::Cached(const Box& box) const {
  if (context_.cache == nullptr) return false;
  bool all = true;
  layout_.ForEachBlockIn(box, [&](const BlockRef& ref, const Box&) {
    all = all && context_.cache->Contains(BlockKey(cache_id_, ref.chunk_index, ref.block_index));
  });
  return all;
}

}  // namespace b2ndfs::store
