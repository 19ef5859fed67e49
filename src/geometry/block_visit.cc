// geometry: the blocks a box touches, and the pieces of them a read copies
// (geometry.h, ArrayLayout::ForEachBlockIn and AppendBlockPieces).

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "b2ndfs/geometry/geometry.h"
#include "b2ndfs/util/checked_math.h"
#include "c_order.h"

namespace b2ndfs::geometry {

// ForEachBlockIn with the callback inlined: a read planner visits hundreds of
// blocks per request, and a std::function call per block (with a callback
// that cannot be optimised with the loop) cost about as much as the visit.
template <typename Fn>
void ArrayLayout::VisitBlocksIn(const Box& box, Fn&& fn) const {
  if (box.ndim() != ndim()) return;
  // Callers promise a box inside the array; clamping keeps a violated promise
  // from turning into out-of-grid chunk indices.
  const Box clipped = Intersect(box, Box::FromShape(shape_));
  if (clipped.empty()) return;

  BlockRef ref;
  Box region;

  if (!regular_) {
    const int64_t lo = clipped.start[0];
    const int64_t hi = clipped.stop[0];
    const int64_t nchunks = static_cast<int64_t>(chunk_start_.size()) - 1;
    // Last chunk starting at or before `lo`; empty chunks sharing that start
    // come earlier and are skipped by construction.
    int64_t c =
        std::upper_bound(chunk_start_.begin(), chunk_start_.end(), lo) - chunk_start_.begin() - 1;
    ref.block_box.start.resize(1);
    ref.block_box.stop.resize(1);
    region.start.resize(1);
    region.stop.resize(1);
    for (; c < nchunks && chunk_start_[c] < hi; ++c) {
      const int64_t s = chunk_start_[c];
      const int64_t e = chunk_start_[c + 1];
      if (s == e) continue;
      const int64_t bn = block_nitems_[c];
      const int64_t first = (std::max(lo, s) - s) / bn;
      const int64_t last = (std::min(hi, e) - 1 - s) / bn;
      ref.chunk_index = c;
      for (int64_t j = first; j <= last; ++j) {
        ref.block_index = j;
        ref.block_box.start[0] = s + j * bn;
        ref.block_box.stop[0] = std::min(e, ref.block_box.start[0] + bn);
        region.start[0] = std::max(lo, ref.block_box.start[0]);
        region.stop[0] = std::min(hi, ref.block_box.stop[0]);
        fn(ref, region);
      }
    }
    return;
  }

  const int n = ndim();
  if (n == 0) {
    fn(ref, region);  // the single item lives in chunk 0, block 0
    return;
  }

  // Odometers over the touched chunk range and, per chunk, the touched block
  // range: the cost is proportional to the blocks reported, never to the
  // whole grid.
  const Shape grid = ChunkGridShape();
  Shape block_grid(n);
  Shape chunk_lo(n), chunk_hi(n), chunk_at(n);
  for (int i = 0; i < n; ++i) {
    block_grid[i] = CeilDiv(chunkshape_[i], blockshape_[i]);
    chunk_lo[i] = clipped.start[i] / chunkshape_[i];
    chunk_hi[i] = (clipped.stop[i] - 1) / chunkshape_[i];
  }
  Shape origin(n), sub_start(n), sub_stop(n);
  Shape block_lo(n), block_hi(n), block_at(n);
  ref.block_box.start.resize(n);
  ref.block_box.stop.resize(n);
  region.start.resize(n);
  region.stop.resize(n);

  chunk_at = chunk_lo;
  while (true) {
    ref.chunk_index = COrderOffset(chunk_at, grid);
    for (int i = 0; i < n; ++i) {
      origin[i] = chunk_at[i] * chunkshape_[i];
      // box ∩ trimmed chunk box; blocks outside it hold only padding here.
      sub_start[i] = std::max(clipped.start[i], origin[i]);
      sub_stop[i] =
          std::min(clipped.stop[i], origin[i] + std::min(chunkshape_[i], shape_[i] - origin[i]));
      block_lo[i] = (sub_start[i] - origin[i]) / blockshape_[i];
      block_hi[i] = (sub_stop[i] - 1 - origin[i]) / blockshape_[i];
    }
    block_at = block_lo;
    while (true) {
      ref.block_index = COrderOffset(block_at, block_grid);
      for (int i = 0; i < n; ++i) {
        ref.block_box.start[i] = origin[i] + block_at[i] * blockshape_[i];
        ref.block_box.stop[i] = ref.block_box.start[i] + blockshape_[i];
        region.start[i] = std::max(sub_start[i], ref.block_box.start[i]);
        region.stop[i] = std::min(sub_stop[i], ref.block_box.stop[i]);
      }
      fn(ref, region);
      int a = n - 1;
      for (; a >= 0; --a) {
        if (++block_at[a] <= block_hi[a]) break;
        block_at[a] = block_lo[a];
      }
      if (a < 0) break;
    }
    int a = n - 1;
    for (; a >= 0; --a) {
      if (++chunk_at[a] <= chunk_hi[a]) break;
      chunk_at[a] = chunk_lo[a];
    }
    if (a < 0) break;
  }
}

void ArrayLayout::ForEachBlockIn(
    const Box& box, const std::function<void(const BlockRef&, const Box& region)>& fn) const {
  VisitBlocksIn(box, fn);
}

std::pair<int64_t, int64_t> ArrayLayout::BlockOf(std::span<const int64_t> coords) const {
  if (!regular_) {
    // The last chunk starting at or before the item: empty chunks never hold it.
    const int64_t c = std::upper_bound(chunk_start_.begin(), chunk_start_.end(), coords[0]) -
                      chunk_start_.begin() - 1;
    return {c, (coords[0] - chunk_start_[c]) / block_nitems_[c]};
  }
  int64_t chunk = 0, block = 0;
  for (size_t i = 0; i < shape_.size(); ++i) {
    const int64_t in_chunk = coords[i] % chunkshape_[i];
    chunk = chunk * CeilDiv(shape_[i], chunkshape_[i]) + coords[i] / chunkshape_[i];
    block = block * CeilDiv(chunkshape_[i], blockshape_[i]) + in_chunk / blockshape_[i];
  }
  return {chunk, block};
}

int64_t ArrayLayout::AppendBlockPieces(const Box& box, size_t tag, std::vector<BlockPiece>& pieces,
                                       std::vector<int64_t>& coords) const {
  const size_t n = static_cast<size_t>(ndim());
  int64_t items = 0;
  VisitBlocksIn(box, [&](const BlockRef& ref, const Box& region) {
    pieces.push_back(BlockPiece{ref.chunk_index, ref.block_index, coords.size(), tag});
    // push_back, not resize: resize is an out-of-line call that zero-fills.
    for (const std::vector<int64_t>* v :
         {&ref.block_box.start, &ref.block_box.stop, &region.start, &region.stop}) {
      for (size_t i = 0; i < n; ++i) coords.push_back((*v)[i]);
    }
    int64_t region_items = 1;
    for (size_t i = 0; i < n; ++i) region_items *= region.stop[i] - region.start[i];
    items += region_items;
  });
  return items;
}

}  // namespace b2ndfs::geometry
