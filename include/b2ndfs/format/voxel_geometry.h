// format/voxel_geometry: the voxel size, origin, units and axis names that a
// container's variable-length metalayers (python-blosc2's `vlmeta`
// attributes) give, for the imaging headers (README.md, "Headers, axes and
// voxel geometry").
//
// Accepted vlmetalayers, each one msgpack value, lists in NumPy's axis order
// (slowest first, as `a.shape`), one entry per axis:
//   spacing            numbers > 0 (a single number: every axis)
//   origin             finite numbers: the position of item [0, ..., 0]
//   units              strings (a single string: every axis)
//   axis_names         strings; `_ARRAY_DIMENSIONS` (xarray's) when absent
// A list may be python-blosc2's packed tuple ["__tuple__", v0, v1, ...].
// A value of another form (wrong length, not a number, NaN, a spacing of 0)
// is ignored, and `notes` says why in words (meta.json's "notes").
// Pure functions; the input is the vlmetalayers' DECOMPRESSED contents.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "b2ndfs/format/frame.h"

namespace b2ndfs::format {

struct VoxelGeometry {
  std::vector<double> spacing;  // empty, or one per axis
  std::vector<double> origin;   // empty, or one per axis
  std::vector<std::string> units;
  std::vector<std::string> axis_names;
  std::vector<std::string> notes;  // vlmetalayers ignored, and why

  bool empty() const {
    return spacing.empty() && origin.empty() && units.empty() && axis_names.empty();
  }
};

// The names of the vlmetalayers DecodeVoxelGeometry reads (so that a caller
// decompresses only those).
bool IsVoxelGeometryKey(const std::string& vlmetalayer_name);

// Decodes the geometry of an `ndim`-axis array from `vlmeta` (other names are
// skipped). A 0-D array has no geometry.
VoxelGeometry DecodeVoxelGeometry(const std::vector<NamedBytes>& vlmeta, size_t ndim);

}  // namespace b2ndfs::format
