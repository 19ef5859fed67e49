// geometry/c_order (private to geometry): the offset of coordinates in a
// C-order array, shared by the grids (geometry.cc) and the block visits
// (block_visit.cc).
#pragma once

#include <cstdint>
#include <span>

namespace b2ndfs::geometry {

// Offset of `coords` (relative to the box origin) in a C-order array of
// `shape`.
inline int64_t COrderOffset(std::span<const int64_t> rel, std::span<const int64_t> shape) {
  int64_t offset = 0;
  for (size_t i = 0; i < shape.size(); ++i) offset = offset * shape[i] + rel[i];
  return offset;
}

}  // namespace b2ndfs::geometry
