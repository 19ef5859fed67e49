// geometry: index math of b2nd chunk/block layouts (see geometry.h).
//
// Nothing here trusts metadata beyond what the factories validated: once an
// ArrayLayout exists, every product and sum the other functions compute is
// known to fit in int64, so they use plain arithmetic.

#include "b2ndfs/geometry/geometry.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "b2ndfs/util/checked_math.h"
#include "c_order.h"

namespace b2ndfs::geometry {
namespace {

constexpr int kMaxNdim = 127;

// Product of a shape that may contain zeros: a zero anywhere makes the product
// 0 regardless of order, which CheckedProduct alone would not see if the
// overflow happened before the zero.
std::optional<int64_t> ShapeProduct(std::span<const int64_t> values) {
  for (int64_t v : values) {
    if (v == 0) return 0;
  }
  return CheckedProduct(values);
}

std::string AxisName(const char* what, size_t axis) {
  return std::string(what) + "[" + std::to_string(axis) + "]";
}

// Splits items [begin, end) of the sub-box made of axes [axis, ndim) of
// `box`, with axes before `axis` fixed at `fixed` (relative coordinates).
// A range that starts at 0 of the sub-box produces no leading pieces and one
// that ends at its end no trailing pieces, which is what bounds the output at
// 2 * ndim - 1 boxes.
void DecomposeRange(const Box& box, const Shape& inner_items, int axis, std::vector<int64_t>& fixed,
                    int64_t begin, int64_t end, std::vector<Box>& out) {
  const int ndim = box.ndim();
  auto emit = [&](int64_t lo, int64_t hi) {
    Box piece;
    piece.start.resize(ndim);
    piece.stop.resize(ndim);
    for (int i = 0; i < axis; ++i) {
      piece.start[i] = box.start[i] + fixed[i];
      piece.stop[i] = piece.start[i] + 1;
    }
    piece.start[axis] = box.start[axis] + lo;
    piece.stop[axis] = box.start[axis] + hi;
    for (int i = axis + 1; i < ndim; ++i) {
      piece.start[i] = box.start[i];
      piece.stop[i] = box.stop[i];
    }
    out.push_back(std::move(piece));
  };

  const int64_t inner = inner_items[axis];  // items per step along `axis`
  if (begin % inner == 0 && end % inner == 0) {
    emit(begin / inner, end / inner);
    return;
  }
  const int64_t first = begin / inner;
  const int64_t last = (end - 1) / inner;  // inclusive
  if (first == last) {
    fixed[axis] = first;
    DecomposeRange(box, inner_items, axis + 1, fixed, begin - first * inner, end - first * inner,
                   out);
    return;
  }
  int64_t mid_lo = first;
  if (begin % inner != 0) {
    fixed[axis] = first;
    DecomposeRange(box, inner_items, axis + 1, fixed, begin - first * inner, inner, out);
    ++mid_lo;
  }
  const int64_t mid_hi = (end % inner == 0) ? last + 1 : last;
  if (mid_lo < mid_hi) emit(mid_lo, mid_hi);
  if (end % inner != 0) {
    fixed[axis] = last;
    DecomposeRange(box, inner_items, axis + 1, fixed, 0, end - last * inner, out);
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Box

Shape Box::shape() const {
  Shape s(start.size());
  for (size_t i = 0; i < start.size(); ++i) s[i] = std::max<int64_t>(0, stop[i] - start[i]);
  return s;
}

int64_t Box::NumItems() const {
  int64_t n = 1;
  for (size_t i = 0; i < start.size(); ++i) {
    const int64_t extent = stop[i] - start[i];
    if (extent <= 0) return 0;
    n *= extent;
  }
  return n;
}

Box Box::FromShape(const Shape& shape) {
  Box box;
  box.start.assign(shape.size(), 0);
  box.stop = shape;
  return box;
}

Box Intersect(const Box& a, const Box& b) {
  Box r;
  const size_t n = a.start.size();
  r.start.resize(n);
  r.stop.resize(n);
  for (size_t i = 0; i < n; ++i) {
    r.start[i] = std::max(a.start[i], b.start[i]);
    // Clamped so an empty intersection still has non-negative extents.
    r.stop[i] = std::max(r.start[i], std::min(a.stop[i], b.stop[i]));
  }
  return r;
}

std::string ToString(const Box& box) {
  std::string s = "[";
  for (int i = 0; i < box.ndim(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(box.start[i]) + ":" + std::to_string(box.stop[i]);
  }
  s += "]";
  return s;
}

// ---------------------------------------------------------------------------
// ArrayLayout: factories

Result<ArrayLayout> ArrayLayout::Regular(Shape shape, Shape chunkshape, Shape blockshape,
                                         int64_t itemsize) {
  const size_t ndim = shape.size();
  if (ndim > static_cast<size_t>(kMaxNdim)) {
    return InvalidData("ndim is " + std::to_string(ndim) + "; must be at most " +
                       std::to_string(kMaxNdim));
  }
  if (chunkshape.size() != ndim || blockshape.size() != ndim) {
    return InvalidData("shape has " + std::to_string(ndim) + " axes but chunkshape has " +
                       std::to_string(chunkshape.size()) + " and blockshape " +
                       std::to_string(blockshape.size()));
  }
  if (itemsize <= 0) {
    return InvalidData("itemsize is " + std::to_string(itemsize) + "; must be positive");
  }
  Shape extchunkshape(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    if (shape[i] < 0) {
      return InvalidData(AxisName("shape", i) + " is " + std::to_string(shape[i]) +
                         "; must not be negative");
    }
    if (chunkshape[i] <= 0) {
      return InvalidData(AxisName("chunkshape", i) + " is " + std::to_string(chunkshape[i]) +
                         "; must be positive");
    }
    if (blockshape[i] <= 0) {
      return InvalidData(AxisName("blockshape", i) + " is " + std::to_string(blockshape[i]) +
                         "; must be positive");
    }
    if (blockshape[i] > chunkshape[i]) {
      return InvalidData(AxisName("blockshape", i) + " is " + std::to_string(blockshape[i]) +
                         ", larger than " + AxisName("chunkshape", i) + " " +
                         std::to_string(chunkshape[i]));
    }
    const auto ext = CheckedMul(CeilDiv(chunkshape[i], blockshape[i]), blockshape[i]);
    if (!ext) return InvalidData(AxisName("extchunkshape", i) + " overflows int64");
    extchunkshape[i] = *ext;
    // Block boxes are reported untrimmed in array coordinates, so the padded
    // extent of the last chunk must be representable too.
    if (shape[i] > 0) {
      const auto last_origin = CheckedMul(CeilDiv(shape[i], chunkshape[i]) - 1, chunkshape[i]);
      if (!last_origin || !CheckedAdd(*last_origin, *ext)) {
        return InvalidData(AxisName("shape", i) + " " + std::to_string(shape[i]) +
                           " padded to whole blocks overflows int64");
      }
    }
  }
  const auto nitems = ShapeProduct(shape);
  if (!nitems || !CheckedMul(*nitems, itemsize)) {
    return InvalidData("array size (product of shape times itemsize " + std::to_string(itemsize) +
                       ") overflows int64");
  }
  // The chunk grid and the block grid are at most as large as prod(shape) and
  // prod(extchunkshape) respectively, so checking those covers their counts.
  const auto chunk_items = ShapeProduct(extchunkshape);
  if (!chunk_items || !CheckedMul(*chunk_items, itemsize)) {
    return InvalidData("chunk size (product of extchunkshape times itemsize " +
                       std::to_string(itemsize) + ") overflows int64");
  }

  ArrayLayout layout;
  layout.regular_ = true;
  layout.shape_ = std::move(shape);
  layout.chunkshape_ = std::move(chunkshape);
  layout.blockshape_ = std::move(blockshape);
  layout.itemsize_ = itemsize;
  return layout;
}

Result<ArrayLayout> ArrayLayout::Irregular1D(std::vector<int64_t> chunk_nitems,
                                             std::vector<int64_t> block_nitems, int64_t itemsize) {
  if (chunk_nitems.size() != block_nitems.size()) {
    return InvalidData("chunk_nitems has " + std::to_string(chunk_nitems.size()) +
                       " entries but block_nitems has " + std::to_string(block_nitems.size()));
  }
  if (itemsize <= 0) {
    return InvalidData("itemsize is " + std::to_string(itemsize) + "; must be positive");
  }
  std::vector<int64_t> chunk_start(chunk_nitems.size() + 1, 0);
  int64_t max_chunk = 0;
  int64_t max_block = 0;
  for (size_t i = 0; i < chunk_nitems.size(); ++i) {
    if (chunk_nitems[i] < 0) {
      return InvalidData(AxisName("chunk_nitems", i) + " is " + std::to_string(chunk_nitems[i]) +
                         "; must not be negative");
    }
    if (block_nitems[i] <= 0) {
      return InvalidData(AxisName("block_nitems", i) + " is " + std::to_string(block_nitems[i]) +
                         "; must be positive");
    }
    const auto next = CheckedAdd(chunk_start[i], chunk_nitems[i]);
    if (!next || !CheckedMul(*next, itemsize)) {
      return InvalidData("total size up to chunk " + std::to_string(i) + " (itemsize " +
                         std::to_string(itemsize) + ") overflows int64");
    }
    chunk_start[i + 1] = *next;
    max_chunk = std::max(max_chunk, chunk_nitems[i]);
    max_block = std::max(max_block, block_nitems[i]);
  }

  ArrayLayout layout;
  layout.regular_ = false;
  layout.shape_ = {chunk_start.back()};
  layout.chunkshape_ = {max_chunk};
  layout.blockshape_ = {max_block};
  layout.itemsize_ = itemsize;
  layout.chunk_start_ = std::move(chunk_start);
  layout.block_nitems_ = std::move(block_nitems);
  return layout;
}

// ---------------------------------------------------------------------------
// ArrayLayout: grids

int64_t ArrayLayout::NumItems() const { return *ShapeProduct(shape_); }

Shape ArrayLayout::ChunkGridShape() const {
  if (!regular_) return {static_cast<int64_t>(chunk_start_.size()) - 1};
  Shape grid(shape_.size());
  for (size_t i = 0; i < shape_.size(); ++i) grid[i] = CeilDiv(shape_[i], chunkshape_[i]);
  return grid;
}

int64_t ArrayLayout::NumChunks() const {
  if (!regular_) return static_cast<int64_t>(chunk_start_.size()) - 1;
  return *ShapeProduct(ChunkGridShape());
}

std::vector<int64_t> ArrayLayout::ChunkCoords(int64_t chunk_index) const {
  if (!regular_) return {chunk_index};
  std::vector<int64_t> coords(shape_.size());
  for (size_t i = shape_.size(); i-- > 0;) {
    const int64_t n = CeilDiv(shape_[i], chunkshape_[i]);
    coords[i] = chunk_index % n;
    chunk_index /= n;
  }
  return coords;
}

int64_t ArrayLayout::ChunkIndex(std::span<const int64_t> coords) const {
  const Shape grid = ChunkGridShape();
  if (coords.size() != grid.size()) return -1;
  for (size_t i = 0; i < grid.size(); ++i) {
    if (coords[i] < 0 || coords[i] >= grid[i]) return -1;
  }
  return COrderOffset(coords, grid);
}

Box ArrayLayout::ChunkBox(int64_t chunk_index) const {
  Box box;
  if (!regular_) {
    box.start = {chunk_start_[chunk_index]};
    box.stop = {chunk_start_[chunk_index + 1]};
    return box;
  }
  box.start = ChunkCoords(chunk_index);
  box.stop.resize(shape_.size());
  for (size_t i = 0; i < shape_.size(); ++i) {
    box.start[i] *= chunkshape_[i];
    // Written as a difference: origin + chunkshape may exceed int64 even
    // though the trimmed stop cannot.
    box.stop[i] = box.start[i] + std::min(chunkshape_[i], shape_[i] - box.start[i]);
  }
  return box;
}

int64_t ArrayLayout::ChunkStoredItems(int64_t chunk_index) const {
  if (!regular_) return chunk_start_[chunk_index + 1] - chunk_start_[chunk_index];
  int64_t n = 1;
  for (size_t i = 0; i < shape_.size(); ++i) {
    n *= CeilDiv(chunkshape_[i], blockshape_[i]) * blockshape_[i];
  }
  return n;
}

int64_t ArrayLayout::BlocksInChunk(int64_t chunk_index) const {
  if (!regular_) {
    return CeilDiv(ChunkStoredItems(chunk_index), block_nitems_[chunk_index]);
  }
  int64_t n = 1;
  for (size_t i = 0; i < shape_.size(); ++i) n *= CeilDiv(chunkshape_[i], blockshape_[i]);
  return n;
}

int64_t ArrayLayout::BlockItems(int64_t chunk_index, int64_t block_index) const {
  if (!regular_) {
    const int64_t bn = block_nitems_[chunk_index];
    return std::min(bn, ChunkStoredItems(chunk_index) - block_index * bn);
  }
  return *ShapeProduct(blockshape_);
}

int64_t ArrayLayout::BlockFirstItem(int64_t chunk_index, int64_t block_index) const {
  if (!regular_) return block_index * block_nitems_[chunk_index];
  return block_index * *ShapeProduct(blockshape_);
}

// ---------------------------------------------------------------------------
// Streams of boxes

std::vector<Box> LinearRangeToBoxes(const Box& box, int64_t item_begin, int64_t item_end) {
  std::vector<Box> out;
  item_begin = std::max<int64_t>(item_begin, 0);
  item_end = std::min(item_end, box.NumItems());
  if (item_begin >= item_end) return out;
  const int ndim = box.ndim();
  if (ndim == 0) {
    out.push_back(box);
    return out;
  }
  const Shape extent = box.shape();
  // inner_items[i]: items in one step along axis i (product of later extents).
  Shape inner_items(ndim);
  inner_items[ndim - 1] = 1;
  for (int i = ndim - 1; i > 0; --i) inner_items[i - 1] = inner_items[i] * extent[i];
  std::vector<int64_t> fixed(ndim, 0);
  out.reserve(2 * ndim - 1);
  DecomposeRange(box, inner_items, 0, fixed, item_begin, item_end, out);
  return out;
}

}  // namespace b2ndfs::geometry
