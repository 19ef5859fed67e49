// Serving reads: a byte range of a stream -> boxes of the array -> the
// blocks they touch, taken from the cache or decompressed (in parallel on the
// workers), and copied out piece by piece.
#include <algorithm>
#include <cstring>
#include <map>

#include "b2ndfs/store/pin_budget.h"
#include "b2ndfs/store/worker_pool.h"
#include "b2ndfs/util/checked_math.h"
#include "b2ndfs/util/log.h"
#include "container_internal.h"

namespace b2ndfs::store {

using geometry::ArrayLayout;
using geometry::BlockRef;
using geometry::Box;

Status Container::ReadBox(const Box& box, int64_t item_begin, int64_t item_end,
                          uint8_t* out) const {
  const ArrayLayout& layout = *layout_;
  const int64_t itemsize = layout.itemsize();
  struct Piece {
    Box region;
    uint8_t* dst;
    const Box* dst_box;
  };
  struct BlockWork {
    BlockRef ref;
    std::vector<Piece> pieces;
    cache::Value value;
    Status status;
  };
  const std::vector<Box> boxes = geometry::LinearRangeToBoxes(box, item_begin, item_end);
  std::vector<BlockWork> blocks;
  std::map<std::pair<int64_t, int64_t>, size_t> block_slot;  // (chunk, block) -> slot
  uint8_t* dst = out;
  int64_t planned_items = 0;
  for (const Box& sub : boxes) {
    layout.ForEachBlockIn(sub, [&](const BlockRef& ref, const Box& region) {
      auto [it, inserted] =
          block_slot.try_emplace({ref.chunk_index, ref.block_index}, blocks.size());
      if (inserted) blocks.push_back(BlockWork{ref, {}, nullptr, Status::Ok()});
      blocks[it->second].pieces.push_back(Piece{region, dst, &sub});
      planned_items += region.NumItems();
    });
    dst += sub.NumItems() * itemsize;
  }
  // The reply buffer is not zeroed: every byte of it must come from a piece
  // (pieces never overlap), or memory that was never written would be sent.
  if (planned_items != item_end - item_begin) {
    return Status(EIO, "internal error: the read plan covers " + std::to_string(planned_items) +
                           " of " + std::to_string(item_end - item_begin) + " items");
  }

  // Fetch in batches that fit the pinning budget, copy, release, repeat: a
  // read never holds more than max_pinned_bytes of blocks at once, plus the
  // compressed bytes it reads for them (pinned with them).
  WorkerPool* workers = context_->workers;
  size_t begin = 0;
  while (begin < blocks.size()) {
    size_t end = begin;
    size_t pinned = 0;
    while (end < blocks.size() && (end == begin || pinned < context_->max_pinned_bytes)) {
      const BlockRef& r = blocks[end].ref;
      pinned += static_cast<size_t>(layout.BlockItems(r.chunk_index, r.block_index) * itemsize);
      ++end;
    }
    // Plan the blocks missing now (reading only chunk heads, which the cache
    // keeps), then pin blocks and read buffers together: no reader waits for
    // pins while it holds some.
    BlockLoads loads;
    std::vector<int64_t> planned(end - begin, -1);  // batch slot -> loads.blocks
    for (size_t i = begin; i < end; ++i) {
      const BlockRef& r = blocks[i].ref;
      if (!context_->cache->Contains(
              cache::Key{cache_id_, r.chunk_index, r.block_index, cache::EntryKind::kBlock})) {
        planned[i - begin] = static_cast<int64_t>(loads.blocks.size());
        loads.blocks.push_back(BlockLoads::Block{r.chunk_index, r.block_index});
      }
    }
    if (!loads.blocks.empty()) PlanLoads(loads, workers);
    pinned += static_cast<size_t>(loads.buffer_bytes);
    if (context_->pins != nullptr) context_->pins->Acquire(pinned);
    GlobalReadStats().pinned_bytes += static_cast<int64_t>(pinned);
    struct Unpin {
      PinBudget* pins;
      size_t bytes;
      ~Unpin() {
        GlobalReadStats().pinned_bytes -= static_cast<int64_t>(bytes);
        if (pins != nullptr) pins->Release(bytes);
      }
    } unpin{context_->pins, pinned};
    if (!loads.blocks.empty()) RunPlan(loads, workers);
    // Blocks cached at planning time, unless evicted since then.
    std::vector<size_t> misses;
    for (size_t i = begin; i < end; ++i) {
      BlockWork& w = blocks[i];
      const int64_t p = planned[i - begin];
      if (p >= 0) {
        BlockLoads::Block& b = loads.blocks[static_cast<size_t>(p)];
        w.value = std::move(b.value);
        w.status = std::move(b.status);
        continue;
      }
      w.value = context_->cache->TryGet(
          cache::Key{cache_id_, w.ref.chunk_index, w.ref.block_index, cache::EntryKind::kBlock});
      if (!w.value) misses.push_back(i);
    }
    auto fetch_miss = [&](size_t k) {
      BlockWork& w = blocks[misses[k]];
      auto value = GetBlock(w.ref.chunk_index, w.ref.block_index);
      if (value.ok()) {
        w.value = std::move(value).value();
      } else {
        w.status = value.status();
      }
    };
    if (workers != nullptr && misses.size() > 1) {
      workers->ParallelFor(misses.size(), fetch_miss);
    } else {
      for (size_t k = 0; k < misses.size(); ++k) fetch_miss(k);
    }
    for (size_t i = begin; i < end; ++i) {
      BlockWork& w = blocks[i];
      if (!w.status.ok()) return w.status;
      for (const Piece& p : w.pieces) {
        geometry::CopyRegion(w.value->data(), w.ref.block_box, p.dst, *p.dst_box, p.region,
                             itemsize);
      }
      w.value.reset();
    }
    begin = end;
  }
  return Status::Ok();
}

Status Container::ReadBoxBytes(const Box& box, int64_t offset, size_t length, uint8_t* out) const {
  if (length == 0) return Status::Ok();
  const int64_t itemsize = layout_->itemsize();
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

Status Container::ReadArrayBox(const Box& box, uint8_t* out) const {
  if (!ok()) return InvalidData(error_);
  const auto& shape = layout_->shape();
  if (box.ndim() != static_cast<int>(shape.size())) return InvalidArgument("box has wrong ndim");
  for (int a = 0; a < box.ndim(); ++a) {
    if (box.start[a] < 0 || box.start[a] > box.stop[a] || box.stop[a] > shape[a]) {
      return InvalidArgument("box " + geometry::ToString(box) + " is outside the array");
    }
  }
  Status status = ReadBox(box, 0, box.NumItems(), out);
  if (!status.ok() && status.error_number() != ENOMEM) return Status(EIO, status.message());
  return status;
}

void Container::Prefetch(const ArrayStream& stream, int64_t offset, int64_t length) const {
  if (!ok() || context_->workers == nullptr || length <= 0) return;
  int64_t body_offset = offset - static_cast<int64_t>(stream.header.size());
  if (body_offset < 0) {
    length += body_offset;
    body_offset = 0;
  }
  const Box& box = stream.box;
  const int64_t itemsize = layout_->itemsize();
  const int64_t body_size = box.NumItems() * itemsize;
  if (body_offset >= body_size || length <= 0) return;
  const int64_t first = body_offset / itemsize;
  const int64_t last = CeilDiv(std::min(body_offset + length, body_size), itemsize);
  std::vector<std::pair<int64_t, int64_t>> wanted;
  for (const Box& sub : geometry::LinearRangeToBoxes(box, first, last)) {
    layout_->ForEachBlockIn(sub, [&](const BlockRef& ref, const Box&) {
      if (!wanted.empty() && wanted.back() == std::make_pair(ref.chunk_index, ref.block_index)) {
        return;
      }
      const cache::Key key{cache_id_, ref.chunk_index, ref.block_index, cache::EntryKind::kBlock};
      if (!context_->cache->Contains(key)) wanted.emplace_back(ref.chunk_index, ref.block_index);
    });
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  GlobalReadStats().prefetch_requests++;
  auto self = shared_from_this();
  const size_t max_queued = 4 * static_cast<size_t>(context_->workers->size()) + 16;
  // A few neighbouring blocks per task, loaded as one plan: their bytes come
  // in shared reads. What a task holds is bounded by its blocks' compressed
  // bytes (plus the plan's waste), and at most size() tasks run at once.
  for (size_t from = 0; from < wanted.size(); from += kPrefetchBlocksPerTask) {
    const size_t to = std::min(wanted.size(), from + kPrefetchBlocksPerTask);
    std::vector<std::pair<int64_t, int64_t>> group(wanted.begin() + static_cast<ptrdiff_t>(from),
                                                   wanted.begin() + static_cast<ptrdiff_t>(to));
    const bool queued = context_->workers->TrySubmit(
        [self, group = std::move(group)] {
          try {
            BlockLoads loads;
            for (const auto& [chunk, block] : group) {
              if (!self->context_->cache->Contains(
                      cache::Key{self->cache_id_, chunk, block, cache::EntryKind::kBlock})) {
                loads.blocks.push_back(BlockLoads::Block{chunk, block});
              }
            }
            if (loads.blocks.empty()) return;
            self->PlanLoads(loads, nullptr);
            self->RunPlan(loads, nullptr);
          } catch (...) {
            // Read-ahead is best effort; the real read reports errors.
          }
        },
        max_queued);
    if (!queued) break;
    GlobalReadStats().prefetched_blocks += to - from;
  }
}

int64_t Container::StreamSize(const ArrayStream& stream) const {
  const int64_t header = static_cast<int64_t>(stream.header.size());
  if (!ok()) return header;
  return header + stream.box.NumItems() * layout_->itemsize();
}

Result<size_t> Container::Read(const ArrayStream& stream, int64_t offset, size_t length,
                               uint8_t* out) const {
  GlobalReadStats().reads++;
  if (offset < 0) return InvalidArgument("negative offset");
  const int64_t size = StreamSize(stream);
  if (offset >= size || length == 0) return size_t{0};
  const size_t n =
      static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(length), size - offset));
  const int64_t header = static_cast<int64_t>(stream.header.size());
  size_t done = 0;
  if (offset < header) {
    done = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(n), header - offset));
    std::memcpy(out, stream.header.data() + offset, done);
  }
  Status status;
  if (done < n) {
    if (!ok()) return Status(EIO, name() + ": " + error_);
    try {
      status = ReadBoxBytes(stream.box, offset + static_cast<int64_t>(done) - header, n - done,
                            out + done);
    } catch (const std::bad_alloc&) {
      status = Status(ENOMEM, "out of memory");
    }
  }
  if (!status.ok()) {
    GlobalReadStats().read_errors++;
    // A source that changed under a reader is not a broken container: say
    // so once per generation, not once per message.
    const bool stale = status.error_number() == ESTALE;
    LogOnce(stale ? "stale:" + name() + std::to_string(cache_id_) : "read:" + name(),
            stale ? LogLevel::kInfo : LogLevel::kError, name() + ": " + status.message());
    // Whatever went wrong inside the container (a vanished chunk file, a
    // source rewritten under an open descriptor) is an I/O error of this
    // file, not a missing file.
    const int error_number = status.error_number() == ENOMEM ? ENOMEM : EIO;
    return Status(error_number, name() + ": " + status.message());
  }
  GlobalReadStats().bytes_served += n;
  return n;
}

}  // namespace b2ndfs::store
