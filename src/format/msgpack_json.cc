// msgpack -> JSON text, lossless (the mapping is documented in meta_json.h).
#include <exception>
#include <set>
#include <string_view>
#include <utility>

#include "json_text.h"
#include "msgpack_util.h"

namespace b2ndfs::format::internal {
namespace {

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

// Values never shown, whatever map holds them: the credentials
// python-blosc2 stores beside a remote reference (proxy.py's proxy-source
// "urlpath" triple ends with the C2Array's auth_token; lazyexpr.py's saved
// C2Array operands carry "auth_cookie"; README.md, "Variable-length data,
// carriers and caches").
constexpr std::string_view kRedacted = "\"(redacted)\"";

bool IsSecretKey(const msgpack::object& key) {
  if (key.type != msgpack::type::STR) return false;
  const std::string_view k(key.via.str.ptr, key.via.str.size);
  return k == "auth_token" || k == "auth_cookie";
}

bool HasKey(const msgpack::object_map& m, std::string_view name) {
  for (uint32_t i = 0; i < m.size; ++i) {
    const msgpack::object& k = m.ptr[i].key;
    if (k.type == msgpack::type::STR && std::string_view(k.via.str.ptr, k.via.str.size) == name) {
      return true;
    }
  }
  return false;
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
      if (!WriteValue(m, i, indent + 2, depth + 1, out)) return false;
    }
    if (pretty) NewLine(indent, out);
    out->push_back('}');
    return true;
  }

  // A map's i-th value, or what stands for it when it is a secret.
  bool WriteValue(const msgpack::object_map& m, uint32_t i, int indent, size_t depth,
                  std::string* out) {
    const msgpack::object& key = m.ptr[i].key;
    const msgpack::object& val = m.ptr[i].val;
    if (IsSecretKey(key) && val.type != msgpack::type::NIL) {
      *out += kRedacted;
      return true;
    }
    // proxy-source's "urlpath": (path, urlbase, auth_token).
    if (key.type == msgpack::type::STR &&
        std::string_view(key.via.str.ptr, key.via.str.size) == "urlpath" &&
        val.type == msgpack::type::ARRAY && val.via.array.size == 3 &&
        val.via.array.ptr[2].type != msgpack::type::NIL && HasKey(m, "local_abspath")) {
      const bool pretty = layout_ == Layout::kPretty;
      out->push_back('[');
      for (uint32_t j = 0; j < 2; ++j) {
        if (!Write(val.via.array.ptr[j], indent, depth + 1, out)) return false;
        *out += pretty ? ", " : ",";
      }
      *out += kRedacted;
      out->push_back(']');
      return true;
    }
    return Write(val, indent, depth, out);
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
      if (!WriteValue(m, i, indent + 2, depth + 1, out)) return false;
      out->push_back(']');
    }
    if (pretty) NewLine(indent, out);
    *out += "]}";
    return true;
  }

  Layout layout_;
  size_t limit_;
};

}  // namespace

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

}  // namespace b2ndfs::format::internal
