#include "b2ndfs/format/ndmeta.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
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

// A tiny parser for the Python literals NumPy prints for structured dtypes
// (str(dtype)): lists, tuples, dicts, quoted strings, integers, None, True
// and False, e.g. "[('a', '<i4'), (('title', 'b'), [('x', '<f8')], (2, 3))]"
// or "{'names': ['a'], 'formats': ['<i4'], 'offsets': [4], 'itemsize': 8}".
struct PyValue {
  enum class Kind { kString, kInt, kList, kTuple, kDict, kNone, kBool } kind = Kind::kInt;
  std::string text;
  int64_t number = 0;
  std::vector<PyValue> items;  // list/tuple items; dict: key, value, key, ...
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

  bool Word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  std::optional<PyValue> Parse(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    SkipSpace();
    if (pos_ >= text_.size()) return std::nullopt;
    const char c = text_[pos_];
    if (c == '\'' || c == '"') return ParseString(c);
    if (c == '[') return ParseSequence(']', PyValue::Kind::kList, depth);
    if (c == '(') return ParseSequence(')', PyValue::Kind::kTuple, depth);
    if (c == '{') return ParseSequence('}', PyValue::Kind::kDict, depth);
    if (c == '-' || (c >= '0' && c <= '9')) return ParseInt();
    PyValue value;
    if (Word("None")) {
      value.kind = PyValue::Kind::kNone;
      return value;
    }
    value.kind = PyValue::Kind::kBool;
    if (Word("True")) {
      value.number = 1;
      return value;
    }
    if (Word("False")) return value;
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

  // Lists, tuples and dicts; a dict's items alternate key, value.
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
      if (kind == PyValue::Kind::kDict) {
        if (pos_ >= text_.size() || text_[pos_] != ':') return std::nullopt;
        ++pos_;
        std::optional<PyValue> val = Parse(depth + 1);
        if (!val) return std::nullopt;
        value.items.push_back(std::move(*val));
        SkipSpace();
      }
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

std::string PythonQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

// A simple type string as .npy wants it: NumPy names ("float32") become
// their type string; nullopt for object dtypes (their bytes are pointers).
std::optional<std::string> NpyTypestr(std::string_view typestr) {
  if (std::optional<std::string_view> named = NamedTypestr(typestr)) typestr = *named;
  const size_t kind = typestr.find_first_not_of("<>|=");
  if (kind == std::string_view::npos || typestr[kind] == 'O') return std::nullopt;
  return std::string(typestr);
}

// A dtype resolved to its item size and the `descr` literal of an .npy
// header (numpy.lib.format.descr_to_dtype's input: a type string, or a list
// of (name, type[, shape]) tuples with ('', '|Vn') padding entries).
struct Descr {
  int64_t itemsize = 0;
  std::string literal;
  std::string shape;    // a field's sub-array shape literal, "" if none
  bool object = false;  // holds Python objects (pointers): no file meaning
};

constexpr int kMaxStructDepth = 16;

std::optional<Descr> ResolveType(const PyValue& type, int depth);

std::string Padding(int64_t bytes) { return "('', '|V" + std::to_string(bytes) + "')"; }

std::optional<std::string> NameLiteral(const PyValue& name, const PyValue* title) {
  if (name.kind != PyValue::Kind::kString) return std::nullopt;
  if (title == nullptr || title->kind == PyValue::Kind::kNone) return PythonQuote(name.text);
  if (title->kind != PyValue::Kind::kString) return std::nullopt;
  return "(" + PythonQuote(title->text) + ", " + PythonQuote(name.text) + ")";
}

std::string FieldLiteral(const std::string& name, const Descr& type) {
  std::string out = "(" + name + ", " + type.literal;
  if (!type.shape.empty()) out += ", " + type.shape;
  return out + ")";
}

// A sub-array shape (an int or a tuple of ints >= 0): its item count and
// literal.
std::optional<std::pair<int64_t, std::string>> SubShape(const PyValue& shape) {
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
  int64_t count = 1;
  std::string literal = "(";
  for (size_t i = 0; i < extents.size(); ++i) {
    if (extents[i] < 0) return std::nullopt;
    std::optional<int64_t> c = CheckedMul(count, extents[i]);
    if (!c) return std::nullopt;
    count = *c;
    literal += (i > 0 ? ", " : "") + std::to_string(extents[i]);
  }
  literal += extents.size() == 1 ? ",)" : ")";
  return std::make_pair(count, literal);
}

std::optional<Descr> WithShape(Descr base, const PyValue& shape) {
  auto sub = SubShape(shape);
  if (!sub) return std::nullopt;
  std::optional<int64_t> size = CheckedMul(base.itemsize, sub->first);
  if (!size || !base.shape.empty()) return std::nullopt;
  base.itemsize = *size;
  base.shape = sub->second;
  return base;
}

// [(name, type[, shape]), ...]: fields packed in order.
std::optional<Descr> ResolveList(const PyValue& list, int depth) {
  if (list.items.empty()) return std::nullopt;
  Descr out;
  out.literal = "[";
  for (const PyValue& field : list.items) {
    if (field.kind != PyValue::Kind::kTuple || field.items.size() < 2 || field.items.size() > 3) {
      return std::nullopt;
    }
    const PyValue& name = field.items[0];
    std::optional<std::string> name_literal;
    if (name.kind == PyValue::Kind::kTuple && name.items.size() == 2) {
      name_literal = NameLiteral(name.items[1], &name.items[0]);
    } else {
      name_literal = NameLiteral(name, nullptr);
    }
    if (!name_literal) return std::nullopt;
    std::optional<Descr> type = ResolveType(field.items[1], depth + 1);
    if (!type) return std::nullopt;
    if (field.items.size() == 3) type = WithShape(std::move(*type), field.items[2]);
    if (!type) return std::nullopt;
    std::optional<int64_t> sum = CheckedAdd(out.itemsize, type->itemsize);
    if (!sum) return std::nullopt;
    out.itemsize = *sum;
    out.object = out.object || type->object;
    if (out.literal.size() > 1) out.literal += ", ";
    out.literal += FieldLiteral(*name_literal, *type);
  }
  out.literal += "]";
  return out;
}

const PyValue* DictGet(const PyValue& dict, std::string_view key) {
  for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    if (dict.items[i].kind == PyValue::Kind::kString && dict.items[i].text == key) {
      return &dict.items[i + 1];
    }
  }
  return nullptr;
}

// {'names', 'formats', 'offsets', 'titles', 'itemsize', 'aligned'}: fields
// at explicit offsets. .npy can only describe fields in increasing offset
// order without overlaps (NumPy's dtype.descr refuses the others).
std::optional<Descr> ResolveDict(const PyValue& dict, int depth) {
  for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const PyValue& key = dict.items[i];
    static constexpr std::string_view kKeys[] = {"names",  "formats",  "offsets",
                                                 "titles", "itemsize", "aligned"};
    if (key.kind != PyValue::Kind::kString ||
        std::find(std::begin(kKeys), std::end(kKeys), key.text) == std::end(kKeys)) {
      return std::nullopt;
    }
  }
  const PyValue* names = DictGet(dict, "names");
  const PyValue* formats = DictGet(dict, "formats");
  const PyValue* offsets = DictGet(dict, "offsets");
  const PyValue* titles = DictGet(dict, "titles");
  const PyValue* itemsize = DictGet(dict, "itemsize");
  if (names == nullptr || formats == nullptr || names->kind != PyValue::Kind::kList ||
      formats->kind != PyValue::Kind::kList || names->items.size() != formats->items.size() ||
      names->items.empty()) {
    return std::nullopt;
  }
  const size_t n = names->items.size();
  if (offsets != nullptr && (offsets->kind != PyValue::Kind::kList || offsets->items.size() != n)) {
    return std::nullopt;
  }
  if (titles != nullptr && (titles->kind != PyValue::Kind::kList || titles->items.size() != n)) {
    return std::nullopt;
  }
  Descr out;
  out.literal = "[";
  int64_t cursor = 0;
  for (size_t i = 0; i < n; ++i) {
    std::optional<std::string> name =
        NameLiteral(names->items[i], titles != nullptr ? &titles->items[i] : nullptr);
    if (!name) return std::nullopt;
    const PyValue& format = formats->items[i];
    std::optional<Descr> type;
    if (format.kind == PyValue::Kind::kTuple && format.items.size() == 2) {
      type = ResolveType(format.items[0], depth + 1);
      if (type) type = WithShape(std::move(*type), format.items[1]);
    } else {
      type = ResolveType(format, depth + 1);
    }
    if (!type) return std::nullopt;
    int64_t offset = cursor;
    if (offsets != nullptr) {
      if (offsets->items[i].kind != PyValue::Kind::kInt) return std::nullopt;
      offset = offsets->items[i].number;
    }
    if (offset < cursor) return std::nullopt;  // overlapping or out of order
    out.object = out.object || type->object;
    if (out.literal.size() > 1) out.literal += ", ";
    if (offset > cursor) out.literal += Padding(offset - cursor) + ", ";
    out.literal += FieldLiteral(*name, *type);
    std::optional<int64_t> end = CheckedAdd(offset, type->itemsize);
    if (!end) return std::nullopt;
    cursor = *end;
  }
  out.itemsize = cursor;
  if (itemsize != nullptr) {
    if (itemsize->kind != PyValue::Kind::kInt || itemsize->number < cursor) return std::nullopt;
    if (itemsize->number > cursor) out.literal += ", " + Padding(itemsize->number - cursor);
    out.itemsize = itemsize->number;
  }
  out.literal += "]";
  return out;
}

std::optional<Descr> ResolveType(const PyValue& type, int depth) {
  if (depth > kMaxStructDepth) return std::nullopt;
  switch (type.kind) {
    case PyValue::Kind::kString: {
      std::optional<int64_t> size = SimpleItemSize(type.text);
      if (!size) return std::nullopt;
      std::optional<std::string> typestr = NpyTypestr(type.text);
      if (!typestr) return Descr{*size, "'|V" + std::to_string(*size) + "'", "", true};
      return Descr{*size, PythonQuote(*typestr), "", false};
    }
    case PyValue::Kind::kList:
      return ResolveList(type, depth);
    case PyValue::Kind::kDict:
      return ResolveDict(type, depth);
    default:
      return std::nullopt;
  }
}

// Any dtype string: a simple type string or NumPy name, or a structured
// dtype as str(dtype) prints it.
std::optional<Descr> ResolveDtype(const std::string& dtype) {
  if (dtype.empty() || dtype.size() > kMaxDtypeLength) return std::nullopt;
  if (dtype[0] == '[' || dtype[0] == '{') {
    std::optional<PyValue> value = PyLiteralParser(dtype).ParseAll();
    if (!value) return std::nullopt;
    std::optional<Descr> descr = ResolveType(*value, 0);
    if (!descr || descr->itemsize <= 0) return std::nullopt;
    return descr;
  }
  std::optional<int64_t> size = SimpleItemSize(dtype);
  if (!size) return std::nullopt;
  std::optional<std::string> typestr = NpyTypestr(dtype);
  if (!typestr) return Descr{*size, "'|V" + std::to_string(*size) + "'", "", true};
  return Descr{*size, PythonQuote(*typestr), "", false};
}

}  // namespace

Result<NdMeta> DecodeB2ndMetalayer(std::span<const uint8_t> bytes) { return Decode(bytes, true); }

Result<NdMeta> DecodeCatervaMetalayer(std::span<const uint8_t> bytes) {
  return Decode(bytes, false);
}

std::optional<int64_t> DtypeItemSize(const std::string& dtype) {
  std::optional<Descr> descr = ResolveDtype(dtype);
  if (!descr) return std::nullopt;
  return descr->itemsize;
}

std::string NpyDescr(const std::optional<std::string>& dtype, int64_t itemsize) {
  const std::string fallback = "'|V" + std::to_string(itemsize) + "'";
  if (!dtype || !IsPrintableAscii(*dtype)) return fallback;
  std::optional<Descr> descr = ResolveDtype(*dtype);
  if (!descr || descr->itemsize != itemsize || descr->object) return fallback;
  return descr->literal;
}

DtypeCheck CheckDtype(const std::optional<std::string>& dtype, int64_t itemsize) {
  DtypeCheck check;
  check.npy_descr = NpyDescr(dtype, itemsize);
  if (!dtype) return check;
  const std::string served = "data, chunks/ and slices/ serve the chunks' " +
                             std::to_string(itemsize) + "-byte items; data.npy uses " +
                             check.npy_descr;
  std::optional<Descr> descr = IsPrintableAscii(*dtype) ? ResolveDtype(*dtype) : std::nullopt;
  std::optional<int64_t> size;
  if (descr) size = descr->itemsize;
  if (!size) {
    check.note = "dtype '" + *dtype + "' is not understood by b2ndfs: " + served +
                 "; files that need a real dtype are absent";
  } else if (*size != itemsize) {
    check.note = "dtype '" + *dtype + "' has " + std::to_string(*size) +
                 "-byte items but the chunks hold " + std::to_string(itemsize) +
                 "-byte items (c-blosc2 reads by the chunks' typesize): " + served +
                 "; files that need a real dtype are absent";
  } else if (descr->object) {
    check.note =
        "dtype '" + *dtype + "' holds Python objects (pointers, meaningless in a file): " + served;
  }
  return check;
}

}  // namespace b2ndfs::format
