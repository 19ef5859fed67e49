// format/ndmeta: the `b2nd` and legacy `caterva` metalayers
// (README_B2ND_METALAYER.rst), decoded with msgpack-cxx from untrusted bytes
// and fully validated, plus NumPy dtype strings.
//
// b2nd:    [version, ndim, shape[ndim], chunkshape[ndim], blockshape[ndim],
//           dtype_format, dtype]          (7 entries)
// caterva: [version, ndim, shape, chunkshape, blockshape]  (5 entries)
// oldest caterva: [version, ndim, shape, partshape]        (4 entries; no
//           blocks: the whole chunk is one block)
// Never hand these bytes to c-blosc2's own decoder: it does no bounds checks.
// Errors: Status(EIO) with a message naming the offending entry.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::format {

constexpr int kMaxNdim = 127;        // the format stores ndim as a positive fixint
constexpr size_t kMaxDtypeLength = 64 * 1024;

struct NdMeta {
  std::string format;  // "b2nd" or "caterva"
  int version = 0;
  int ndim = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> chunkshape;
  std::vector<int64_t> blockshape;  // == chunkshape when the metalayer has none
  bool has_blockshape = true;
  std::optional<int> dtype_format;    // b2nd only
  std::optional<std::string> dtype;   // b2nd only
};

// Decodes and validates: array lengths, integer types and ranges, ndim <= 127,
// shape >= 0, chunkshape/blockshape > 0, blockshape <= chunkshape, products in
// int64, dtype a bounded printable string.
Result<NdMeta> DecodeB2ndMetalayer(std::span<const uint8_t> bytes);
Result<NdMeta> DecodeCatervaMetalayer(std::span<const uint8_t> bytes);

// Item size implied by a NumPy dtype string ("<f4" -> 4, "|S10" -> 10,
// "<U3" -> 12, "[('a', '<i4'), ('b', '<f8')]" -> 12), or nullopt when it
// cannot be worked out (the frame's typesize then rules).
std::optional<int64_t> DtypeItemSize(const std::string& dtype);

// The `descr` to write into a .npy header for this dtype: the dtype string
// quoted as a Python literal for simple dtypes, the list literal itself for
// structured ones; "'|V<itemsize>'" when there is no usable dtype.
std::string NpyDescr(const std::optional<std::string>& dtype, int64_t itemsize);

}  // namespace b2ndfs::format
