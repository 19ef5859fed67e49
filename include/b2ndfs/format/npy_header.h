// format/npy_header: the NumPy .npy header b2ndfs puts before C-order items
// (data.npy, view/EXPR.npy, a CTable's valid/NAME.npy). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace b2ndfs::format {

// The .npy header (format 1.0, or 2.0 when the dictionary needs more than
// 1.0's 2-byte length) for a C-order array of `shape` whose dtype NumPy
// prints as `descr` (quoted: "'<f4'", or a list for structured dtypes).
std::string NpyHeader(const std::string& descr, const std::vector<int64_t>& shape);

}  // namespace b2ndfs::format
