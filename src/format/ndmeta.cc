#include "b2ndfs/format/ndmeta.h"

#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

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

bool IsPrintableAscii(std::string_view text) {
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// Shared by both layers: `entries` is the msgpack array.
Result<NdMeta> DecodeEntries(const MetaDecoder& d, const msgpack::object_array& entries,
                             bool b2nd) {
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
  if (b2nd && entries.size >= 7) {
    B2NDFS_ASSIGN_OR_RETURN(int64_t dtype_format, d.Int(entries.ptr[5], "dtype_format", 0, 127));
    meta.dtype_format = static_cast<int>(dtype_format);
    const msgpack::object& dtype = entries.ptr[6];
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

Result<NdMeta> Decode(std::span<const uint8_t> bytes, bool b2nd) {
  const std::string layer = b2nd ? "b2nd" : "caterva";
  MetaDecoder d(layer);
  if (bytes.empty()) return d.Error("is empty");
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
  const bool size_ok = b2nd ? (n == 7 || n == 5) : (n == 5 || n == 4);
  if (!size_ok) {
    return d.Error("has " + std::to_string(n) + " entries, expected " +
                   (b2nd ? "7 (version, ndim, shape, chunkshape, blockshape, dtype_format, dtype)"
                         : "5 (version, ndim, shape, chunkshape, blockshape) or 4"));
  }
  return DecodeEntries(d, top.via.array, b2nd);
}

// ---- NumPy dtype strings -------------------------------------------------

struct NamedDtype {
  std::string_view name;
  std::string_view typestr;
};

// NumPy type names that some writers store instead of type strings.
constexpr NamedDtype kNamedDtypes[] = {
    {"bool", "|b1"},      {"int8", "|i1"},        {"uint8", "|u1"},   {"int16", "<i2"},
    {"uint16", "<u2"},    {"int32", "<i4"},       {"uint32", "<u4"},  {"int64", "<i8"},
    {"uint64", "<u8"},    {"float16", "<f2"},     {"float32", "<f4"}, {"float64", "<f8"},
    {"complex64", "<c8"}, {"complex128", "<c16"}, {"?", "|b1"},
};

std::optional<std::string_view> NamedTypestr(std::string_view dtype) {
  for (const NamedDtype& named : kNamedDtypes) {
    if (named.name == dtype) return named.typestr;
  }
  return std::nullopt;
}

// Decimal digits as a positive number (at most 12 digits); nullopt otherwise.
std::optional<int64_t> ParseCount(std::string_view digits) {
  if (digits.empty() || digits.size() > 12) return std::nullopt;
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// A NumPy array-interface type string: [<>|=]? kind count, e.g. "<f8", "|S10",
// "<U3", "<M8[ns]". Item size in bytes (> 0) or nullopt.
std::optional<int64_t> SimpleItemSize(std::string_view dtype) {
  if (std::optional<std::string_view> typestr = NamedTypestr(dtype)) dtype = *typestr;
  if (!dtype.empty() &&
      (dtype[0] == '<' || dtype[0] == '>' || dtype[0] == '|' || dtype[0] == '=')) {
    dtype.remove_prefix(1);
  }
  if (dtype.empty()) return std::nullopt;
  const char kind = dtype[0];
  std::string_view rest = dtype.substr(1);
  switch (kind) {
    case '?':
      return rest.empty() || rest == "1" ? std::optional<int64_t>(1) : std::nullopt;
    case 'M':
    case 'm': {
      // datetime64 / timedelta64: always 8 bytes, optional "[unit]".
      const size_t bracket = rest.find('[');
      std::string_view count = rest.substr(0, bracket);
      if (bracket != std::string_view::npos) {
        std::string_view unit = rest.substr(bracket);
        if (unit.size() < 3 || unit.back() != ']') return std::nullopt;
        for (char c : unit.substr(1, unit.size() - 2)) {
          if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
            return std::nullopt;
          }
        }
      }
      if (!count.empty() && count != "8") return std::nullopt;
      return 8;
    }
    case 'O': {
      if (rest.empty()) return 8;
      std::optional<int64_t> n = ParseCount(rest);
      if (n && (*n == 4 || *n == 8)) return n;
      return std::nullopt;
    }
    case 'b':
    case 'i':
    case 'u':
    case 'f':
    case 'c':
    case 'S':
    case 'a':
    case 'V':
    case 'U': {
      std::optional<int64_t> n = ParseCount(rest);
      if (!n || *n <= 0) return std::nullopt;
      return kind == 'U' ? *n * 4 : *n;
    }
    default:
      return std::nullopt;
  }
}

// A tiny parser for the Python literals NumPy prints for structured dtypes:
// lists, tuples, quoted strings and integers, e.g.
// "[('a', '<i4'), (('title', 'b'), [('x', '<f8')], (2, 3))]".
struct PyValue {
  enum class Kind { kString, kInt, kList, kTuple } kind = Kind::kInt;
  std::string text;
  int64_t number = 0;
  std::vector<PyValue> items;
};

class PyLiteralParser {
 public:
  explicit PyLiteralParser(std::string_view text) : text_(text) {}

  std::optional<PyValue> ParseAll() {
    std::optional<PyValue> value = Parse(0);
    SkipSpace();
    if (!value || pos_ != text_.size()) return std::nullopt;
    return value;
  }

 private:
  static constexpr int kMaxDepth = 32;

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  std::optional<PyValue> Parse(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    SkipSpace();
    if (pos_ >= text_.size()) return std::nullopt;
    const char c = text_[pos_];
    if (c == '\'' || c == '"') return ParseString(c);
    if (c == '[') return ParseSequence(']', PyValue::Kind::kList, depth);
    if (c == '(') return ParseSequence(')', PyValue::Kind::kTuple, depth);
    if (c == '-' || (c >= '0' && c <= '9')) return ParseInt();
    return std::nullopt;
  }

  std::optional<PyValue> ParseString(char quote) {
    PyValue value;
    value.kind = PyValue::Kind::kString;
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') {
        if (++pos_ >= text_.size()) return std::nullopt;
      }
      value.text += text_[pos_++];
    }
    if (pos_ >= text_.size()) return std::nullopt;
    ++pos_;  // closing quote
    return value;
  }

  std::optional<PyValue> ParseInt() {
    PyValue value;
    value.kind = PyValue::Kind::kInt;
    const bool negative = text_[pos_] == '-';
    if (negative) ++pos_;
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    std::optional<int64_t> n = ParseCount(text_.substr(start, pos_ - start));
    if (!n) return std::nullopt;
    value.number = negative ? -*n : *n;
    return value;
  }

  std::optional<PyValue> ParseSequence(char close, PyValue::Kind kind, int depth) {
    PyValue value;
    value.kind = kind;
    ++pos_;
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size()) return std::nullopt;
      if (text_[pos_] == close) {
        ++pos_;
        return value;
      }
      std::optional<PyValue> item = Parse(depth + 1);
      if (!item) return std::nullopt;
      value.items.push_back(std::move(*item));
      SkipSpace();
      if (pos_ >= text_.size()) return std::nullopt;
      if (text_[pos_] == ',') {
        ++pos_;
      } else if (text_[pos_] != close) {
        return std::nullopt;
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::optional<int64_t> StructuredItemSize(const PyValue& descr, int depth);

// The size of one field's type: a type string or a nested descr list.
std::optional<int64_t> FieldTypeSize(const PyValue& type, int depth) {
  if (type.kind == PyValue::Kind::kString) return SimpleItemSize(type.text);
  if (type.kind == PyValue::Kind::kList) return StructuredItemSize(type, depth + 1);
  return std::nullopt;
}

std::optional<int64_t> StructuredItemSize(const PyValue& descr, int depth) {
  if (depth > 16 || descr.kind != PyValue::Kind::kList || descr.items.empty()) {
    return std::nullopt;
  }
  int64_t total = 0;
  for (const PyValue& field : descr.items) {
    if (field.kind != PyValue::Kind::kTuple || field.items.size() < 2 || field.items.size() > 3) {
      return std::nullopt;
    }
    const PyValue& name = field.items[0];
    const bool name_ok = name.kind == PyValue::Kind::kString ||
                         (name.kind == PyValue::Kind::kTuple && name.items.size() == 2 &&
                          name.items[1].kind == PyValue::Kind::kString);
    if (!name_ok) return std::nullopt;
    std::optional<int64_t> size = FieldTypeSize(field.items[1], depth);
    if (!size) return std::nullopt;
    if (field.items.size() == 3) {
      const PyValue& shape = field.items[2];
      std::vector<int64_t> extents;
      if (shape.kind == PyValue::Kind::kInt) {
        extents.push_back(shape.number);
      } else if (shape.kind == PyValue::Kind::kTuple) {
        for (const PyValue& e : shape.items) {
          if (e.kind != PyValue::Kind::kInt) return std::nullopt;
          extents.push_back(e.number);
        }
      } else {
        return std::nullopt;
      }
      for (int64_t e : extents) {
        if (e < 0) return std::nullopt;
        size = CheckedMul(*size, e);
        if (!size) return std::nullopt;
      }
    }
    std::optional<int64_t> sum = CheckedAdd(total, *size);
    if (!sum) return std::nullopt;
    total = *sum;
  }
  if (total <= 0) return std::nullopt;
  return total;
}

std::string PythonQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

}  // namespace

Result<NdMeta> DecodeB2ndMetalayer(std::span<const uint8_t> bytes) { return Decode(bytes, true); }

Result<NdMeta> DecodeCatervaMetalayer(std::span<const uint8_t> bytes) {
  return Decode(bytes, false);
}

std::optional<int64_t> DtypeItemSize(const std::string& dtype) {
  if (dtype.empty() || dtype.size() > kMaxDtypeLength) return std::nullopt;
  if (dtype[0] == '[') {
    std::optional<PyValue> descr = PyLiteralParser(dtype).ParseAll();
    if (!descr) return std::nullopt;
    return StructuredItemSize(*descr, 0);
  }
  return SimpleItemSize(dtype);
}

std::string NpyDescr(const std::optional<std::string>& dtype, int64_t itemsize) {
  const std::string fallback = "'|V" + std::to_string(itemsize) + "'";
  if (!dtype || dtype->empty() || dtype->size() > kMaxDtypeLength || !IsPrintableAscii(*dtype)) {
    return fallback;
  }
  if (DtypeItemSize(*dtype) != itemsize) return fallback;
  if ((*dtype)[0] == '[') return *dtype;  // already a Python literal, checked above
  std::string_view typestr = *dtype;
  if (std::optional<std::string_view> named = NamedTypestr(typestr)) typestr = *named;
  // Object arrays hold pointers: their bytes mean nothing in a file.
  const size_t kind = typestr.find_first_not_of("<>|=");
  if (kind == std::string_view::npos || typestr[kind] == 'O') return fallback;
  return PythonQuote(typestr);
}

}  // namespace b2ndfs::format
