#include "b2ndfs/format/ndmeta.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string_view>
#include <utility>

#include "b2ndfs/format/dtype.h"
#include "b2ndfs/util/checked_math.h"
#include "msgpack_util.h"

namespace b2ndfs::format {
namespace {

using internal::AsInt64;
using internal::TypeName;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

std::string JoinShape(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

class MetaDecoder {
 public:
  explicit MetaDecoder(std::string layer) : layer_(std::move(layer)) {}

  Status Error(const std::string& message) const {
    return InvalidData(layer_ + " metalayer: " + message);
  }

  Result<int64_t> Int(const msgpack::object& object, const std::string& what, int64_t min,
                      int64_t max) const {
    if (object.type != msgpack::type::POSITIVE_INTEGER &&
        object.type != msgpack::type::NEGATIVE_INTEGER) {
      return Error(what + " should be an integer but is " + TypeName(object));
    }
    std::optional<int64_t> value = AsInt64(object);
    if (!value) return Error(what + " is " + std::to_string(object.via.u64) + ", too large");
    if (*value < min || *value > max) {
      return Error(what + " is " + std::to_string(*value) + ", outside " + std::to_string(min) +
                   ".." + std::to_string(max));
    }
    return *value;
  }

  // An array of exactly `ndim` integers in [min, max].
  Result<std::vector<int64_t>> IntArray(const msgpack::object& object, const std::string& what,
                                        int ndim, int64_t min, int64_t max) const {
    if (object.type != msgpack::type::ARRAY) {
      return Error(what + " should be an array but is " + TypeName(object));
    }
    if (object.via.array.size != static_cast<uint32_t>(ndim)) {
      return Error(what + " has " + std::to_string(object.via.array.size) +
                   " entries but ndim is " + std::to_string(ndim));
    }
    std::vector<int64_t> values;
    values.reserve(static_cast<size_t>(ndim));
    for (int i = 0; i < ndim; ++i) {
      B2NDFS_ASSIGN_OR_RETURN(
          int64_t v, Int(object.via.array.ptr[i], what + "[" + std::to_string(i) + "]", min, max));
      values.push_back(v);
    }
    return values;
  }

 private:
  std::string layer_;
};

// Shared by both layers: `entries` is the msgpack array; the dtype entries
// (b2nd only) are passed apart, since early layouts put them elsewhere.
Result<NdMeta> DecodeEntries(const MetaDecoder& d, const msgpack::object_array& entries, bool b2nd,
                             const msgpack::object* dtype_format_entry,
                             const msgpack::object* dtype_entry) {
  NdMeta meta;
  meta.format = b2nd ? "b2nd" : "caterva";
  B2NDFS_ASSIGN_OR_RETURN(int64_t version, d.Int(entries.ptr[0], "version", 0, 127));
  B2NDFS_ASSIGN_OR_RETURN(int64_t ndim, d.Int(entries.ptr[1], "ndim", 0, kMaxNdim));
  meta.version = static_cast<int>(version);
  meta.ndim = static_cast<int>(ndim);
  const int nd = meta.ndim;
  const int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  B2NDFS_ASSIGN_OR_RETURN(meta.shape, d.IntArray(entries.ptr[2], "shape", nd, 0, kInt64Max));
  // Chunk and block extents are int32 in the b2nd format. 0 is let through
  // here and checked below (tolerated on empty axes only).
  const std::string chunk_name = entries.size == 4 ? "partshape" : "chunkshape";
  B2NDFS_ASSIGN_OR_RETURN(meta.chunkshape,
                          d.IntArray(entries.ptr[3], chunk_name, nd, 0, kInt32Max));
  if (entries.size >= 5) {
    B2NDFS_ASSIGN_OR_RETURN(meta.blockshape,
                            d.IntArray(entries.ptr[4], "blockshape", nd, 0, kInt32Max));
    meta.has_blockshape = true;
  } else {
    meta.blockshape = meta.chunkshape;
    meta.has_blockshape = false;
  }
  for (int i = 0; i < nd; ++i) {
    const std::string axis = "[" + std::to_string(i) + "]";
    // An empty axis has no chunks; some writers leave its extents at 0.
    if (meta.shape[i] == 0) {
      if (meta.chunkshape[i] == 0) meta.chunkshape[i] = 1;
      if (meta.blockshape[i] == 0) meta.blockshape[i] = 1;
    }
    if (meta.chunkshape[i] == 0) return d.Error(chunk_name + axis + " is 0 (must be > 0)");
    if (meta.blockshape[i] == 0) return d.Error("blockshape" + axis + " is 0 (must be > 0)");
    if (meta.blockshape[i] > meta.chunkshape[i]) {
      return d.Error("blockshape" + axis + " " + std::to_string(meta.blockshape[i]) +
                     " is larger than chunkshape" + axis + " " +
                     std::to_string(meta.chunkshape[i]));
    }
  }
  std::optional<int64_t> items = CheckedProduct(meta.shape);
  if (!items) return d.Error("shape " + JoinShape(meta.shape) + " has more than 2^63 items");
  std::optional<int64_t> chunk_items = CheckedProduct(meta.chunkshape);
  if (!chunk_items) {
    return d.Error("chunkshape " + JoinShape(meta.chunkshape) + " has more than 2^63 items");
  }
  if (b2nd && dtype_format_entry != nullptr) {
    B2NDFS_ASSIGN_OR_RETURN(int64_t dtype_format,
                            d.Int(*dtype_format_entry, "dtype_format", 0, 127));
    meta.dtype_format = static_cast<int>(dtype_format);
  }
  if (b2nd && dtype_entry != nullptr) {
    const msgpack::object& dtype = *dtype_entry;
    if (dtype.type != msgpack::type::STR) {
      return d.Error("dtype should be a string but is " + TypeName(dtype));
    }
    if (dtype.via.str.size > kMaxDtypeLength) {
      return d.Error("dtype is " + std::to_string(dtype.via.str.size) + " bytes long, more than " +
                     std::to_string(kMaxDtypeLength));
    }
    std::string text(dtype.via.str.ptr, dtype.via.str.size);
    if (!IsPrintableAscii(text)) return d.Error("dtype holds non-printable or non-ASCII bytes");
    if (std::optional<int64_t> itemsize = DtypeItemSize(text)) {
      if (!CheckedMul(*items, *itemsize)) {
        return d.Error("shape " + JoinShape(meta.shape) + " of " + std::to_string(*itemsize) +
                       "-byte items (dtype " + text + ") exceeds 2^63 bytes");
      }
      if (!CheckedMul(*chunk_items, *itemsize)) {
        return d.Error("chunkshape " + JoinShape(meta.chunkshape) + " of " +
                       std::to_string(*itemsize) + "-byte items exceeds 2^63 bytes");
      }
    }
    meta.dtype = std::move(text);
  }
  return meta;
}

// c-blosc2 writes each shape array's header as 0x90 + ndim, a msgpack
// fixarray only up to 15 entries: at 16 (B2ND_MAX_DIM) the byte is 0xa0, a
// zero-length str, and c-blosc2 reads it back by position. When the bytes
// have exactly that layout (shape int64s, chunk and block int32s), returns a
// copy with the three headers rewritten as array16, so that the msgpack
// decoder and its checks apply; nullopt otherwise.
std::optional<std::vector<uint8_t>> RepairWideFixarrays(std::span<const uint8_t> bytes) {
  if (bytes.size() < 4 || bytes[2] < 16 || bytes[2] > kMaxNdim) return std::nullopt;
  const size_t nd = bytes[2];
  const auto header = static_cast<uint8_t>(0x90 + nd);
  std::vector<uint8_t> out(bytes.begin(), bytes.begin() + 3);
  size_t pos = 3;
  for (const auto& [marker, width] : {std::pair<uint8_t, size_t>{0xd3, 8}, {0xd2, 4}, {0xd2, 4}}) {
    if (pos >= bytes.size() || bytes[pos] != header) return std::nullopt;
    out.insert(out.end(), {0xdc, 0x00, static_cast<uint8_t>(nd)});
    ++pos;
    for (size_t i = 0; i < nd; ++i, pos += 1 + width) {
      if (pos + 1 + width > bytes.size() || bytes[pos] != marker) return std::nullopt;
    }
    out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(pos - nd * (1 + width)),
               bytes.begin() + static_cast<std::ptrdiff_t>(pos));
  }
  out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(pos), bytes.end());
  return out;
}

Result<NdMeta> Decode(std::span<const uint8_t> bytes, bool b2nd) {
  const std::string layer = b2nd ? "b2nd" : "caterva";
  MetaDecoder d(layer);
  if (bytes.empty()) return d.Error("is empty");
  std::optional<std::vector<uint8_t>> repaired = RepairWideFixarrays(bytes);
  if (repaired) bytes = *repaired;
  // Depth 2 would do (the entry array and the shape arrays inside it); 3 lets
  // a misplaced array inside a shape be reported by name.
  auto unpacked = internal::UnpackBounded(bytes, 0, 3, layer + " metalayer");
  if (!unpacked.ok()) return unpacked.status();
  // Bytes after the object (unpacked->end < bytes.size()) are ignored, like
  // c-blosc2 does: writers sized the buffer themselves.
  const msgpack::object& top = unpacked->get();
  if (top.type != msgpack::type::ARRAY) {
    return d.Error("should be a msgpack array but is " + TypeName(top));
  }
  const uint32_t n = top.via.array.size;
  const bool size_ok = b2nd ? (n >= 5 && n <= 7) : (n == 5 || n == 4);
  if (!size_ok) {
    return d.Error("has " + std::to_string(n) + " entries, expected " +
                   (b2nd ? "7 (version, ndim, shape, chunkshape, blockshape, dtype_format, dtype)"
                         : "5 (version, ndim, shape, chunkshape, blockshape) or 4"));
  }
  const msgpack::object* entries = top.via.array.ptr;
  const msgpack::object* dtype_format = nullptr;
  const msgpack::object* dtype = nullptr;
  std::optional<internal::Unpacked> trailing;  // keeps `dtype` alive
  std::string note;
  if (b2nd && n == 7) {
    dtype_format = &entries[5];
    dtype = &entries[6];
  } else if (b2nd && n == 6) {
    // c-blosc2 reads the dtype by position, whatever the count says: after
    // blockshape, if bytes remain, a dtype_format byte and a str32 dtype.
    if (entries[5].type == msgpack::type::STR) {
      dtype = &entries[5];
      note =
          "the b2nd metalayer has 6 entries, the 6th being the dtype (no dtype_format), the "
          "layout of c-blosc2's first b2nd dtype support (February 2023); read by position. "
          "c-blosc2 3.3.5 cannot open this layout itself";
    } else {
      dtype_format = &entries[5];
      if (unpacked->end < bytes.size()) {
        auto next = internal::UnpackBounded(bytes, unpacked->end, 1, "b2nd metalayer's dtype");
        if (next.ok() && next->get().type == msgpack::type::STR) {
          trailing = std::move(next).value();
          dtype = &trailing->get();
        }
      }
      note = dtype != nullptr
                 ? "the b2nd metalayer's array header says 6 entries but a 7th (the dtype) "
                   "follows it; read by position, as c-blosc2 does"
                 : "the b2nd metalayer has 6 entries ending with dtype_format and no dtype; "
                   "c-blosc2 3.3.5 cannot open it, b2ndfs shows it without a dtype";
    }
  }
  auto meta = DecodeEntries(d, top.via.array, b2nd, dtype_format, dtype);
  if (meta.ok() && repaired) {
    meta->notes.push_back("ndim " + std::to_string(meta->ndim) +
                          ": the metalayer's shape arrays carry the header c-blosc2 writes "
                          "(0x90 + ndim, not a msgpack array past 15 entries); read by position "
                          "as c-blosc2 does");
  }
  if (meta.ok() && !note.empty()) meta->notes.push_back(std::move(note));
  return meta;
}

}  // namespace

Result<NdMeta> DecodeB2ndMetalayer(std::span<const uint8_t> bytes) { return Decode(bytes, true); }

Result<NdMeta> DecodeCatervaMetalayer(std::span<const uint8_t> bytes) {
  return Decode(bytes, false);
}

}  // namespace b2ndfs::format
