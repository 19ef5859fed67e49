#include "b2ndfs/format/dtype.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "b2ndfs/util/checked_math.h"

namespace b2ndfs::format {

bool IsPrintableAscii(std::string_view text) {
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

namespace {

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
