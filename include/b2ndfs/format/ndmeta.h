// format/ndmeta: the `b2nd` and legacy `caterva` metalayers
// (README_B2ND_METALAYER.rst), decoded with msgpack-cxx from untrusted bytes
// and fully validated (NumPy dtype strings: format/dtype.h).
//
// b2nd:    [version, ndim, shape[ndim], chunkshape[ndim], blockshape[ndim],
//           dtype_format, dtype]          (7 entries)
// early b2nd, 6 entries (read by position, as c-blosc2's
//           b2nd_deserialize_meta does: it ignores the array's count):
//           a header saying 6 followed by dtype_format and a dtype str, or
//           [version, ndim, shape, chunkshape, blockshape, dtype] (the
//           layout of c-blosc2 PR #445, before PR #447 added dtype_format;
//           c-blosc2 3.3.5 itself fails on that one). Both are served, and
//           NdMeta::notes says which was read.
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

#include "b2ndfs/format/dtype.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::format {

constexpr int kMaxNdim = 127;  // the format stores ndim as a positive fixint

struct NdMeta {
  std::string format;  // "b2nd" or "caterva"
  int version = 0;
  int ndim = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> chunkshape;
  std::vector<int64_t> blockshape;  // == chunkshape when the metalayer has none
  bool has_blockshape = true;
  std::optional<int> dtype_format;   // b2nd only
  std::optional<std::string> dtype;  // b2nd only
  // What the decoder tolerated that a reader should know (an early 6-entry
  // metalayer, ...), in words; meta.json lists them under "notes".
  std::vector<std::string> notes;
};

// Decodes and validates: array lengths, integer types (any msgpack integer
// width) and ranges, version and ndim 0..127, shape >= 0, chunkshape and
// blockshape in 1..INT32_MAX, blockshape <= chunkshape, prod(shape),
// prod(chunkshape) in int64 (and, when the dtype's item size is known, also
// times that item size), dtype a printable-ASCII str of at most
// kMaxDtypeLength bytes, dtype_format 0..127.
// Tolerances: on an axis of length 0 a chunk/block extent of 0 is read as 1
// (such an array has no chunks); bytes after the msgpack object are ignored
// (c-blosc2 ignores them too). DecodeB2ndMetalayer also accepts a 5-entry
// array (no dtype: dtype and dtype_format stay empty), as c-blosc2's
// b2nd_deserialize_meta does for metalayers converted from caterva.
// DecodeCatervaMetalayer accepts 5 entries, or the oldest 4 ([version, ndim,
// shape, partshape]; has_blockshape = false, blockshape = chunkshape).
Result<NdMeta> DecodeB2ndMetalayer(std::span<const uint8_t> bytes);
Result<NdMeta> DecodeCatervaMetalayer(std::span<const uint8_t> bytes);

}  // namespace b2ndfs::format
