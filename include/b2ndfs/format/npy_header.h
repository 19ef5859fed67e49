// format/npy_header: the NumPy .npy header b2ndfs puts before C-order bytes
// (data.npy, view/EXPR.npy, a CTable's valid/NAME.npy): the one writer of it.
// Format 1.0 (2.0 when the header is longer than 65535 bytes), padded with
// spaces and ended by '\n', to kNpyHeaderPage bytes when it fits in a page
// (as almost every header does) and the array is not empty (numpy.memmap
// cannot map a file that ends at a page boundary where its data begins), else
// to a multiple of 64 as NumPy pads.
// A page of its own: the kernel reads the header apart from the array's
// first block, so a damaged first block does not keep numpy from opening the
// file (README.md, "Errors"). NumPy reads headers of up to 10,000 bytes.
// Thread-safety: a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace b2ndfs::format {

constexpr size_t kNpyHeaderPage = 4096;

// `descr`: the dtype as a Python literal ("'<f4'", "[('a', '<i4')]").
std::string NpyHeader(const std::string& descr, const std::vector<int64_t>& shape);

}  // namespace b2ndfs::format
