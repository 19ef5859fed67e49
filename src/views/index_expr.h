// views/index_expr: the names of view/EXPR, parsed as NumPy basic indexing.
//
// EXPR is one term per axis separated by commas: `i` (drops the axis),
// `start:stop` or `start:stop:step` (parts may be omitted or negative, as in
// NumPy; steps may be negative), and at most one `...`; missing trailing axes
// mean `:`. One trailing comma is accepted, as Python accepts `a[1,]`.
// Spaces and tabs are accepted where Python accepts them (around terms,
// commas, colons and `...`, between a sign and its number; `3, 4`), never
// inside a number or `...`. No `None`/newaxis, no fancy indexing. Parsing resolves the
// expression against a shape exactly as NumPy does (slices clamp, integers
// must be in range), so the selection's items are `a[EXPR]` in C order.
// Pure: no I/O, no state.
// Errors: Status ENOENT with the reason, for a malformed expression, an
// integer out of range, a zero step, or more terms than axes.
// Thread-safety: plain functions and values.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::views {

// What one array axis contributes: `count` indices start, start + step, ...
// (step is never 0). An integer index is count 1 with `drop` set.
struct AxisSelection {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
  bool drop = false;
  bool operator==(const AxisSelection&) const = default;
};

struct Hyperslab {
  std::vector<AxisSelection> axes;  // one per array axis

  // The shape NumPy gives a[EXPR]: the counts of the axes not dropped.
  std::vector<int64_t> ResultShape() const;
  int64_t NumItems() const;  // product of all counts
};

// Parses `text` (the name without ".npy") for an array of `shape`.
Result<Hyperslab> ParseIndexExpr(std::string_view text, const std::vector<int64_t>& shape);

}  // namespace b2ndfs::views
