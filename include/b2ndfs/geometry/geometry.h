// geometry: N-d shapes, boxes, the chunk/block layout of an array, and the
// mapping between C-order byte streams of boxes and the blocks that hold them.
//
// Pure index math: no I/O, no threads, no allocation beyond small vectors.
// Every array has a layout of chunks, and each chunk a layout of blocks (the
// unit b2ndfs decompresses and caches). Two layouts exist:
//   * Regular (b2nd / caterva): an N-d grid of chunks of `chunkshape`; inside
//     each chunk an N-d grid of blocks of `blockshape` covering the chunk
//     rounded up to whole blocks ("extchunkshape"); chunk and block indices are
//     C-order linear indices in their grids. Block b of a chunk holds chunk
//     items [b * prod(blockshape), (b + 1) * prod(blockshape)) as a C-order
//     array of `blockshape` (untrimmed: padding beyond the array is present).
//   * Irregular1D (a plain super-chunk): 1-D, chunk i holds chunk_nitems[i]
//     items; its blocks are runs of block_nitems[i] items, the last one short.
// Errors: factories validate and return Status; other functions assume valid
// inputs (boxes inside the array), which callers guarantee.
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::geometry {

using Shape = std::vector<int64_t>;

// Half-open box [start, stop) per axis. A 0-D box (no axes) holds one item.
struct Box {
  std::vector<int64_t> start;
  std::vector<int64_t> stop;

  int ndim() const { return static_cast<int>(start.size()); }
  Shape shape() const;
  int64_t NumItems() const;  // product of extents (1 for 0-D)
  bool empty() const { return NumItems() == 0; }
  static Box FromShape(const Shape& shape);  // [0, shape)
  bool operator==(const Box&) const = default;
};

// Intersection of two boxes of equal ndim (may be empty).
Box Intersect(const Box& a, const Box& b);
std::string ToString(const Box& box);  // "[0:4, 2:3]"

// One block touched by a box: which chunk, which block inside it, and the box
// (array coordinates) that the decompressed block buffer covers, C-order.
struct BlockRef {
  int64_t chunk_index = 0;
  int64_t block_index = 0;
  Box block_box;  // for Regular: the full, untrimmed block (may pass the edge)
};

// One block's share of a box, as ForEachBlockIn reports it, kept flat for
// read planners that must not allocate per block: its block box and region
// are 4 * ndim coordinates of a shared array from index `coords` on (block
// start, block stop, region start, region stop).
struct BlockPiece {
  int64_t chunk_index = 0;
  int64_t block_index = 0;
  size_t coords = 0;
  size_t tag = 0;  // the caller's (which sub-box of a read, say)
};

class ArrayLayout {
 public:
  // Validates: ndim 0..127, shape >= 0, chunkshape and blockshape > 0 with
  // blockshape <= chunkshape on every axis, itemsize > 0, and that
  // prod(shape), prod(extchunkshape) and those times itemsize fit in int64.
  static Result<ArrayLayout> Regular(Shape shape, Shape chunkshape, Shape blockshape,
                                     int64_t itemsize);
  // chunk_nitems[i] >= 0, block_nitems[i] > 0, sums fit in int64 (also in bytes).
  static Result<ArrayLayout> Irregular1D(std::vector<int64_t> chunk_nitems,
                                         std::vector<int64_t> block_nitems, int64_t itemsize);

  bool regular() const { return regular_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  const Shape& shape() const { return shape_; }
  int64_t itemsize() const { return itemsize_; }
  int64_t NumItems() const;  // prod(shape)

  // Regular only (Irregular1D reports {max chunk length} / {max block length}).
  const Shape& chunkshape() const { return chunkshape_; }
  const Shape& blockshape() const { return blockshape_; }

  // Number of chunks along each axis (ceil(shape / chunkshape); 0 on an empty axis).
  Shape ChunkGridShape() const;
  int64_t NumChunks() const;
  std::vector<int64_t> ChunkCoords(int64_t chunk_index) const;
  // -1 if coords are outside the chunk grid.
  int64_t ChunkIndex(std::span<const int64_t> coords) const;
  // The array region of a chunk, trimmed at the array's edges.
  Box ChunkBox(int64_t chunk_index) const;
  // Items the decompressed chunk holds (Regular: prod(extchunkshape), padding included).
  int64_t ChunkStoredItems(int64_t chunk_index) const;
  int64_t BlocksInChunk(int64_t chunk_index) const;
  // Items in one decompressed block (Irregular1D: the last block may be shorter).
  int64_t BlockItems(int64_t chunk_index, int64_t block_index) const;
  // First item of the block, counted in the chunk's stored items.
  int64_t BlockFirstItem(int64_t chunk_index, int64_t block_index) const;

  // Calls fn(block, region) for every block whose stored data intersects `box`,
  // where region = box ∩ ChunkBox ∩ block_box is non-empty (padding is never
  // reported). Order: chunks in C order, blocks in C order inside each chunk.
  void ForEachBlockIn(const Box& box,
                      const std::function<void(const BlockRef&, const Box& region)>& fn) const;
  // The (chunk index, block index) of the block holding the item at `coords`
  // (inside the array): what ForEachBlockIn reports for that one item.
  std::pair<int64_t, int64_t> BlockOf(std::span<const int64_t> coords) const;
  // ForEachBlockIn's blocks appended to `pieces` (tagged `tag`), their
  // coordinates to `coords`, without a call per block; returns the items
  // their regions hold.
  int64_t AppendBlockPieces(const Box& box, size_t tag, std::vector<BlockPiece>& pieces,
                            std::vector<int64_t>& coords) const;

 private:
  template <typename Fn>
  void VisitBlocksIn(const Box& box, Fn&& fn) const;

  bool regular_ = true;
  Shape shape_, chunkshape_, blockshape_;
  int64_t itemsize_ = 1;
  // Irregular1D: chunk_start_[i] is the first item of chunk i; size nchunks + 1.
  std::vector<int64_t> chunk_start_;
  std::vector<int64_t> block_nitems_;
};

// Splits items [item_begin, item_end) of `box`'s C-order stream into at most
// 2 * ndim - 1 boxes (array coordinates) whose C-order streams, concatenated in
// the returned order, are exactly that range. Empty range: empty result.
std::vector<Box> LinearRangeToBoxes(const Box& box, int64_t item_begin, int64_t item_end);

// A box by reference: its start and stop coordinates live elsewhere (a Box,
// or a flat array a read planner fills without allocating per box).
struct BoxRef {
  const int64_t* start = nullptr;
  const int64_t* stop = nullptr;
  int ndim = 0;
  BoxRef(const Box& box)  // NOLINT(google-explicit-constructor): a view of it
      : start(box.start.data()), stop(box.stop.data()), ndim(box.ndim()) {}
  BoxRef(const int64_t* start_coords, const int64_t* stop_coords, int axes)
      : start(start_coords), stop(stop_coords), ndim(axes) {}
};

// Copies `region` from a C-order buffer covering `src_box` into a C-order buffer
// covering `dst_box` (region ⊆ both, all of one ndim). Merges contiguous
// trailing axes so that the inner loop is one memcpy per run.
void CopyRegion(const uint8_t* src, BoxRef src_box, uint8_t* dst, BoxRef dst_box, BoxRef region,
                int64_t itemsize);

}  // namespace b2ndfs::geometry
