// zarr_table: the pure parts of what xarray reads of tables and voxel
// geometry in the Zarr v2 groups (README.md, "Zarr groups and xarray",
// "Tables and coordinates in xarray"):
// - which members of a directory's group share a table's row dimension
//   (PlanTable): a CTable's columns whose first axis is the table's rows,
//   and a store group's leaves when its 1-D leaves (at least two) all have
//   one length (python-blosc2 writes no marker for a group that is a
//   table); a multi-dimensional leaf shares its first axis when it has that
//   length, its other axes keep NAME_dim_i;
// - .zattrs with given dimension names (PlanZattrsDims);
// - the coordinate variables of voxel geometry (PlanCoordinates): one
//   float64 1-D array per axis whose dimension has a name of its own,
//   origin + i * spacing, with the axis's units in its attributes.
// Ownership: plain values in and out. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "zarr_meta.h"

namespace b2ndfs::views {

enum class TableKind {
  kNone,        // a plain directory: every member keeps its own dimensions
  kStoreGroup,  // a python-blosc2 store's group (its leaves have no extension)
  kCTable,      // a CTable's directory or its _cols/
};

struct TableMember {
  std::string name;            // the variable
  std::vector<int64_t> shape;  // the array's
  bool names_axes = false;     // its vlmeta names its axes (_ARRAY_DIMENSIONS)
};

struct TablePlan {
  std::string row_dim;  // empty: no member shares a row dimension
  int64_t rows = -1;
  // One per member: its dimension names, or empty where it keeps its own
  // (NAME_dim_i, or the names its vlmeta gives).
  std::vector<std::vector<std::string>> dims;
};

// The row dimension's name: "row", else the first of "_row", "__row", ...
// that no member is called (a variable named like a dimension would become
// its coordinate).
std::string RowDimName(const std::vector<TableMember>& members);

// `ctable_rows`: for kCTable, the table's physical rows (the length of its
// _valid_rows); ignored otherwise.
TablePlan PlanTable(const std::vector<TableMember>& members, TableKind kind, int64_t ctable_rows);

// .zattrs as PlanZattrs makes it, with `dims` as "_ARRAY_DIMENSIONS" (unless
// the vlmeta has that member already).
ZattrsPlan PlanZattrsDims(const std::string& vlmeta, const std::vector<std::string>& dims);

// A coordinate variable: values origin + i * spacing for i in [0, n).
struct Coordinate {
  std::string name;  // the dimension's
  int64_t n = 0;
  double origin = 0;
  double spacing = 1;
  std::string units;  // empty: none
};

// The coordinates of an array of `shape` whose axes are named `dims` (one
// per axis; empty: the axes are unnamed, and get no coordinates) from its
// voxel geometry (each empty, or one per axis). An axis gets one when
// spacing or origin is given, its name is a usable file name (not empty, no
// '/', not starting with '.' or a digit), is not in `taken`, and is not
// another axis's too.
std::vector<Coordinate> PlanCoordinates(const std::vector<int64_t>& shape,
                                        const std::vector<std::string>& dims,
                                        const std::vector<double>& spacing,
                                        const std::vector<double>& origin,
                                        const std::vector<std::string>& units,
                                        const std::vector<std::string>& taken);

// The coordinate's .zarray (one chunk of the whole axis) and .zattrs.
std::string CoordinateZarray(const Coordinate& c);
std::string CoordinateZattrs(const Coordinate& c);
// Bytes [offset, offset + length) of its only chunk (little-endian float64);
// fewer only at its end. Its size is n * 8.
size_t CoordinateBytes(const Coordinate& c, int64_t offset, size_t length, uint8_t* out);

}  // namespace b2ndfs::views
