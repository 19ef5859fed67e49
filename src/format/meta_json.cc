#include "b2ndfs/format/meta_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <new>
#include <set>
#include <string_view>
#include <utility>

#include "msgpack_util.h"

namespace b2ndfs::format {
namespace {

constexpr size_t kMaxMsgpackDepth = 64;
constexpr size_t kMaxJsonText = size_t{16} << 20;
// vlmeta values are pretty-printed when that stays small; bigger ones are
// written on one line (indentation would multiply the size of deep, wide
// values), and contents over kMaxJsonText are left out.
constexpr size_t kMaxPrettyVlmeta = size_t{1} << 20;

// ---- strings ----------------------------------------------------------------

// Length of the well-formed UTF-8 sequence at text[i] (1..4), or 0 if the
// bytes there are not one (overlong forms, surrogates and code points above
// U+10FFFF are not well-formed).
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b = byte(i);
  if (b < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xbf;  // range of the second byte
  if (b >= 0xc2 && b <= 0xdf) {
    n = 2;
  } else if (b >= 0xe0 && b <= 0xef) {
    n = 3;
    if (b == 0xe0) lo = 0xa0;
    if (b == 0xed) hi = 0x9f;
  } else if (b >= 0xf0 && b <= 0xf4) {
    n = 4;
    if (b == 0xf0) lo = 0x90;
    if (b == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  return n;
}

bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const size_t n = Utf8SequenceLength(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void AppendQuoted(std::string_view text, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<uint8_t>(text[i]);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          *out += "\\u00";
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xf]);
        } else if (c < 0x80) {
          out->push_back(static_cast<char>(c));
        } else {
          const size_t n = Utf8SequenceLength(text, i);
          if (n == 0) {
            *out += "\\ufffd";  // not UTF-8: replacement character
          } else {
            out->append(text.substr(i, n));
            i += n;
            continue;
          }
        }
    }
    ++i;
  }
  out->push_back('"');
}

void AppendBase64(std::span<const uint8_t> bytes, std::string* out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = uint32_t{bytes[i]} << 16 | uint32_t{bytes[i + 1]} << 8 | bytes[i + 2];
    out->push_back(kAlphabet[v >> 18]);
    out->push_back(kAlphabet[(v >> 12) & 63]);
    out->push_back(kAlphabet[(v >> 6) & 63]);
    out->push_back(kAlphabet[v & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{bytes[i]} << 16;
    if (rest == 2) v |= uint32_t{bytes[i + 1]} << 8;
    out->push_back(kAlphabet[v >> 18]);
    out->push_back(kAlphabet[(v >> 12) & 63]);
    out->push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out->push_back('=');
  }
}

// JSON has no NaN or infinities: they become {"$float": "NaN"} etc.
void AppendDouble(double value, bool single_precision, std::string* out) {
  if (std::isnan(value)) {
    *out += "{\"$float\": \"NaN\"}";
    return;
  }
  if (std::isinf(value)) {
    *out += value > 0 ? "{\"$float\": \"Infinity\"}" : "{\"$float\": \"-Infinity\"}";
    return;
  }
  char buf[64];
  // Shortest text that reads back to the same value; a float32 is printed as
  // a float32 (0.1f -> 0.1, not 0.100000001490116).
  const std::to_chars_result r =
      single_precision ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(value))
                       : std::to_chars(buf, buf + sizeof buf, value);
  out->append(buf, r.ptr);
}

// ---- msgpack -> JSON text -----------------------------------------------------

enum class Layout { kCompact, kPretty };

void NewLine(int indent, std::string* out) {
  out->push_back('\n');
  out->append(static_cast<size_t>(indent), ' ');
}

bool IsScalar(const msgpack::object& o) {
  return o.type != msgpack::type::ARRAY && o.type != msgpack::type::MAP &&
         o.type != msgpack::type::EXT;
}

// The msgpack timestamp extension (type -1: 4, 8 or 12 bytes) as RFC 3339
// UTC text with nanoseconds, or nullopt when the payload is not one.
std::optional<std::string> TimestampText(std::span<const uint8_t> d) {
  const auto be = [&d](size_t at, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = v << 8 | d[at + i];
    return v;
  };
  int64_t seconds = 0;
  uint32_t nanos = 0;
  if (d.size() == 4) {
    seconds = static_cast<int64_t>(be(0, 4));
  } else if (d.size() == 8) {
    const uint64_t v = be(0, 8);
    nanos = static_cast<uint32_t>(v >> 34);
    seconds = static_cast<int64_t>(v & ((uint64_t{1} << 34) - 1));
  } else if (d.size() == 12) {
    nanos = static_cast<uint32_t>(be(0, 4));
    seconds = static_cast<int64_t>(be(4, 8));
  } else {
    return std::nullopt;
  }
  if (nanos > 999999999) return std::nullopt;
  // Years 0..9999 only (RFC 3339's four digits).
  constexpr int64_t kMin = -62167219200, kMax = 253402300799;
  if (seconds < kMin || seconds > kMax) return std::nullopt;
  int64_t days = seconds / 86400;
  int64_t rem = seconds % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t doe = days - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%09uZ",
                static_cast<long long>(year), static_cast<long long>(month),
                static_cast<long long>(day), static_cast<long long>(rem / 3600),
                static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60), nanos);
  return std::string(buf);
}

// A map is a JSON object only when that loses nothing: every key a unique,
// well-formed UTF-8 string not starting with '$' (the escape keys below).
bool MapIsPlainObject(const msgpack::object_map& m) {
  std::set<std::string_view> seen;
  for (uint32_t i = 0; i < m.size; ++i) {
    const msgpack::object& key = m.ptr[i].key;
    if (key.type != msgpack::type::STR) return false;
    const std::string_view text(key.via.str.ptr, key.via.str.size);
    if ((!text.empty() && text[0] == '$') || !IsValidUtf8(text)) return false;
    if (!seen.insert(text).second) return false;
  }
  return true;
}

class MsgpackWriter {
 public:
  MsgpackWriter(Layout layout, size_t limit) : layout_(layout), limit_(limit) {}

  // False when the value nests too deep or the text passes the limit.
  // `depth` counts the arrays and maps around `o`.
  bool Write(const msgpack::object& o, int indent, size_t depth, std::string* out) {
    if (out->size() > limit_) return false;
    switch (o.type) {
      case msgpack::type::NIL:
        *out += "null";
        return true;
      case msgpack::type::BOOLEAN:
        *out += o.via.boolean ? "true" : "false";
        return true;
      case msgpack::type::POSITIVE_INTEGER:
        *out += std::to_string(o.via.u64);
        return true;
      case msgpack::type::NEGATIVE_INTEGER:
        *out += std::to_string(o.via.i64);
        return true;
      case msgpack::type::FLOAT32:
        AppendDouble(o.via.f64, true, out);
        return true;
      case msgpack::type::FLOAT64:
        AppendDouble(o.via.f64, false, out);
        return true;
      case msgpack::type::STR: {
        const std::string_view text(o.via.str.ptr, o.via.str.size);
        if (IsValidUtf8(text)) {
          AppendQuoted(text, out);
        } else {
          *out += Key("$str");
          AppendBase64({reinterpret_cast<const uint8_t*>(text.data()), text.size()}, out);
          *out += "\"}";
        }
        return out->size() <= limit_;
      }
      case msgpack::type::BIN:
        *out += Key("$bin");
        AppendBase64({reinterpret_cast<const uint8_t*>(o.via.bin.ptr), o.via.bin.size}, out);
        *out += "\"}";
        return out->size() <= limit_;
      case msgpack::type::EXT: {
        const std::span<const uint8_t> data(reinterpret_cast<const uint8_t*>(o.via.ext.data()),
                                            o.via.ext.size);
        const bool pretty = layout_ == Layout::kPretty;
        *out += pretty ? "{\"$ext\": " : "{\"$ext\":";
        *out += std::to_string(static_cast<int>(o.via.ext.type()));
        *out += pretty ? ", \"data\": \"" : ",\"data\":\"";
        AppendBase64(data, out);
        out->push_back('"');
        if (o.via.ext.type() == -1) {
          if (std::optional<std::string> ts = TimestampText(data)) {
            *out += pretty ? ", \"timestamp\": \"" : ",\"timestamp\":\"";
            *out += *ts;
            out->push_back('"');
          }
        }
        out->push_back('}');
        return out->size() <= limit_;
      }
      case msgpack::type::ARRAY:
        return WriteArray(o.via.array, indent, depth, out);
      case msgpack::type::MAP:
        return WriteMap(o.via.map, indent, depth, out);
    }
    return false;
  }

 private:
  // The opening of a one-key escape object whose value is a string.
  std::string Key(std::string_view key) const {
    return "{\"" + std::string(key) + (layout_ == Layout::kPretty ? "\": \"" : "\":\"");
  }

  bool WriteArray(const msgpack::object_array& a, int indent, size_t depth, std::string* out) {
    if (depth >= kMaxMsgpackDepth) return false;
    if (a.size == 0) {
      *out += "[]";
      return true;
    }
    bool scalars = true;
    for (uint32_t i = 0; i < a.size && scalars; ++i) scalars = IsScalar(a.ptr[i]);
    const bool lines = layout_ == Layout::kPretty && !scalars;
    out->push_back('[');
    for (uint32_t i = 0; i < a.size; ++i) {
      if (i > 0) *out += layout_ == Layout::kPretty && !lines ? ", " : ",";
      if (lines) NewLine(indent + 2, out);
      if (!Write(a.ptr[i], indent + 2, depth + 1, out)) return false;
    }
    if (lines) NewLine(indent, out);
    out->push_back(']');
    return true;
  }

  bool WriteMap(const msgpack::object_map& m, int indent, size_t depth, std::string* out) {
    if (depth >= kMaxMsgpackDepth) return false;
    if (m.size == 0) {
      *out += "{}";
      return true;
    }
    const bool pretty = layout_ == Layout::kPretty;
    if (!MapIsPlainObject(m)) return WritePairs(m, indent, depth, out);
    out->push_back('{');
    for (uint32_t i = 0; i < m.size; ++i) {
      if (i > 0) out->push_back(',');
      if (pretty) NewLine(indent + 2, out);
      const msgpack::object& key = m.ptr[i].key;
      AppendQuoted(std::string_view(key.via.str.ptr, key.via.str.size), out);
      *out += pretty ? ": " : ":";
      if (!Write(m.ptr[i].val, indent + 2, depth + 1, out)) return false;
    }
    if (pretty) NewLine(indent, out);
    out->push_back('}');
    return true;
  }

  // {"$map": [[key, value], ...]}: keys of any type, in order, duplicates kept.
  bool WritePairs(const msgpack::object_map& m, int indent, size_t depth, std::string* out) {
    const bool pretty = layout_ == Layout::kPretty;
    *out += pretty ? "{\"$map\": [" : "{\"$map\":[";
    for (uint32_t i = 0; i < m.size; ++i) {
      if (i > 0) out->push_back(',');
      if (pretty) NewLine(indent + 2, out);
      out->push_back('[');
      if (!Write(m.ptr[i].key, indent + 2, depth + 1, out)) return false;
      *out += pretty ? ", " : ",";
      if (!Write(m.ptr[i].val, indent + 2, depth + 1, out)) return false;
      out->push_back(']');
    }
    if (pretty) NewLine(indent, out);
    *out += "]}";
    return true;
  }

  Layout layout_;
  size_t limit_;
};

// One msgpack object filling `bytes`, written as JSON; nullopt otherwise.
std::optional<std::string> MsgpackText(std::span<const uint8_t> bytes, Layout layout, int indent,
                                       size_t limit) {
  if (bytes.empty()) return std::nullopt;
  try {
    auto unpacked = internal::UnpackBounded(bytes, 0, kMaxMsgpackDepth, "msgpack value");
    if (!unpacked.ok() || unpacked->end != bytes.size()) return std::nullopt;
    std::string out;
    MsgpackWriter writer(layout, limit);
    if (!writer.Write(unpacked->get(), indent, 0, &out) || out.size() > limit) {
      return std::nullopt;
    }
    return out;
  } catch (const std::exception&) {  // bad_alloc included: fall back to base64
    return std::nullopt;
  }
}

// ---- the meta.json document -------------------------------------------------

// A small JSON tree for the document itself (its values are few and small).
struct Json {
  enum class Kind { kNull, kBool, kInt, kDouble, kString, kArray, kObject, kRaw };
  Kind kind = Kind::kNull;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::string text;  // kString, or pre-rendered JSON for kRaw
  std::vector<std::string> keys;
  std::vector<Json> items;

  static Json Null() { return Json(); }
  static Json Bool(bool b) {
    Json j;
    j.kind = Kind::kBool;
    j.boolean = b;
    return j;
  }
  static Json Int(int64_t i) {
    Json j;
    j.kind = Kind::kInt;
    j.integer = i;
    return j;
  }
  static Json Double(double d) {
    Json j;
    j.kind = Kind::kDouble;
    j.number = d;
    return j;
  }
  static Json String(std::string s) {
    Json j;
    j.kind = Kind::kString;
    j.text = std::move(s);
    return j;
  }
  static Json Raw(std::string s) {
    Json j;
    j.kind = Kind::kRaw;
    j.text = std::move(s);
    return j;
  }
  static Json Array() {
    Json j;
    j.kind = Kind::kArray;
    return j;
  }
  static Json Object() {
    Json j;
    j.kind = Kind::kObject;
    return j;
  }
  static Json Ints(const std::vector<int64_t>& values) {
    Json j = Array();
    for (int64_t v : values) j.items.push_back(Int(v));
    return j;
  }
  Json& Add(std::string key, Json value) {
    keys.push_back(std::move(key));
    items.push_back(std::move(value));
    return *this;
  }
  bool IsContainer() const { return kind == Kind::kArray || kind == Kind::kObject; }
};

void WritePretty(const Json& v, int indent, std::string* out) {
  switch (v.kind) {
    case Json::Kind::kNull:
      *out += "null";
      return;
    case Json::Kind::kBool:
      *out += v.boolean ? "true" : "false";
      return;
    case Json::Kind::kInt:
      *out += std::to_string(v.integer);
      return;
    case Json::Kind::kDouble:
      AppendDouble(v.number, false, out);
      return;
    case Json::Kind::kString:
      AppendQuoted(v.text, out);
      return;
    case Json::Kind::kRaw:
      *out += v.text;
      return;
    case Json::Kind::kArray: {
      if (v.items.empty()) {
        *out += "[]";
        return;
      }
      bool scalars = true;
      for (const Json& item : v.items) scalars = scalars && !item.IsContainer();
      out->push_back('[');
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i > 0) *out += scalars ? ", " : ",";
        if (!scalars) NewLine(indent + 2, out);
        WritePretty(v.items[i], indent + 2, out);
      }
      if (!scalars) NewLine(indent, out);
      out->push_back(']');
      return;
    }
    case Json::Kind::kObject: {
      if (v.items.empty()) {
        *out += "{}";
        return;
      }
      out->push_back('{');
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i > 0) out->push_back(',');
        NewLine(indent + 2, out);
        AppendQuoted(v.keys[i], out);
        *out += ": ";
        WritePretty(v.items[i], indent + 2, out);
      }
      NewLine(indent, out);
      out->push_back('}');
      return;
    }
  }
}

std::string RenderDocument(const Json& root) {
  std::string out;
  WritePretty(root, 0, &out);
  out.push_back('\n');
  return out;
}

Json NdMetaJson(const NdMeta& meta) {
  Json j = Json::Object();
  j.Add("version", Json::Int(meta.version));
  j.Add("ndim", Json::Int(meta.ndim));
  j.Add("shape", Json::Ints(meta.shape));
  j.Add("chunkshape", Json::Ints(meta.chunkshape));
  if (meta.has_blockshape) j.Add("blockshape", Json::Ints(meta.blockshape));
  if (meta.dtype_format) j.Add("dtype_format", Json::Int(*meta.dtype_format));
  if (meta.dtype) j.Add("dtype", Json::String(*meta.dtype));
  return j;
}

// The vlmeta object sits at indent 4 of the document ("vlmeta": {"name": ...}).
Json VlmetaValue(const NamedBytes& layer) {
  const std::span<const uint8_t> content(layer.content);
  if (content.size() > kMaxJsonText) {
    Json j = Json::Object();
    j.Add("size", Json::Int(static_cast<int64_t>(content.size())));
    j.Add("omitted", Json::Bool(true));
    return j;
  }
  if (auto pretty = MsgpackText(content, Layout::kPretty, 4, kMaxPrettyVlmeta)) {
    return Json::Raw(std::move(*pretty));
  }
  if (auto compact = MsgpackText(content, Layout::kCompact, 0, kMaxJsonText)) {
    return Json::Raw(std::move(*compact));
  }
  Json j = Json::Object();
  j.Add("base64", Json::String(Base64Encode(content)));
  return j;
}

}  // namespace

std::string RenderMetaJson(const MetaJsonInput& input) {
  Json root = Json::Object();
  root.Add("format", Json::String(input.format));
  root.Add("version", Json::Int(input.version));
  root.Add("ndim", Json::Int(static_cast<int64_t>(input.shape.size())));
  root.Add("shape", Json::Ints(input.shape));
  root.Add("chunkshape", Json::Ints(input.chunkshape));
  root.Add("blockshape", Json::Ints(input.blockshape));
  root.Add("dtype", input.dtype ? Json::String(*input.dtype) : Json::Null());
  root.Add("dtype_format", input.dtype_format ? Json::Int(*input.dtype_format) : Json::Null());
  root.Add("itemsize", Json::Int(input.itemsize));
  root.Add("nbytes", Json::Int(input.nbytes));
  root.Add("cbytes", Json::Int(input.cbytes));
  if (input.cbytes > 0) {
    const double ratio = static_cast<double>(input.nbytes) / static_cast<double>(input.cbytes);
    root.Add("cratio", Json::Double(std::round(ratio * 1000.0) / 1000.0));
  } else {
    root.Add("cratio", Json::Null());
  }
  root.Add("nchunks", Json::Int(input.nchunks));

  const FrameInfo* frame = input.frame;
  root.Add("codec", frame ? Json::String(CodecName(frame->codec, frame->udcodec)) : Json::Null());
  root.Add("clevel", frame ? Json::Int(frame->clevel) : Json::Null());
  Json filters = Json::Array();
  if (frame) {
    for (size_t i = 0; i < frame->filters.size(); ++i) {
      if (frame->filters[i] == 0) continue;  // BLOSC_NOFILTER
      Json f = Json::Object();
      f.Add("name", Json::String(FilterName(frame->filters[i])));
      f.Add("meta", Json::Int(frame->filters_meta[i]));
      filters.items.push_back(std::move(f));
    }
  }
  root.Add("filters", std::move(filters));
  if (input.unsupported) root.Add("unsupported", Json::String(*input.unsupported));
  std::vector<std::string> notes;
  if (input.ndmeta) notes = input.ndmeta->notes;
  if (std::optional<std::string> note = CheckDtype(input.dtype, input.itemsize).note) {
    notes.push_back(std::move(*note));
  }
  if (!notes.empty()) {
    Json list = Json::Array();
    for (std::string& n : notes) list.items.push_back(Json::String(std::move(n)));
    root.Add("notes", std::move(list));
  }

  Json metalayers = Json::Object();
  Json names = Json::Array();
  if (frame) {
    for (const NamedBytes& m : frame->metalayers) names.items.push_back(Json::String(m.name));
  }
  metalayers.Add("names", std::move(names));
  if (input.ndmeta) metalayers.Add(input.ndmeta->format, NdMetaJson(*input.ndmeta));
  root.Add("metalayers", std::move(metalayers));

  Json vlmeta = Json::Object();
  for (const NamedBytes& layer : input.vlmeta) vlmeta.Add(layer.name, VlmetaValue(layer));
  root.Add("vlmeta", std::move(vlmeta));

  Json files = Json::Object();
  for (const MetaJsonInput::FileKind& kind : input.files) {
    Json f = Json::Object();
    if (!kind.absent.empty()) {
      f.Add("absent", Json::String(kind.absent));
      files.Add(kind.name, std::move(f));
      continue;
    }
    f.Add("shape", Json::Ints(kind.shape));
    f.Add("size", Json::Int(kind.size));
    files.Add(kind.name, std::move(f));
  }
  root.Add("files", std::move(files));
  return RenderDocument(root);
}

std::string RenderErrorJson(const std::string& message) {
  Json root = Json::Object();
  root.Add("error", Json::String(message));
  return RenderDocument(root);
}

std::optional<std::string> MsgpackToJson(std::span<const uint8_t> bytes) {
  return MsgpackText(bytes, Layout::kCompact, 0, kMaxJsonText);
}

std::string Base64Encode(std::span<const uint8_t> bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  AppendBase64(bytes, &out);
  return out;
}

std::string JsonQuote(const std::string& text) {
  std::string out;
  AppendQuoted(text, &out);
  return out;
}

}  // namespace b2ndfs::format
