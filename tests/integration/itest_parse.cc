// The integration checks' parsers of what a mount shows: JSON (meta.json,
// .zarray, ...) and .npy headers, declared in itest_common.h.
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "itest_common.h"

namespace b2ndfs::itest {

// ---------------------------------------------------------------------------
// JSON

const Json* Json::Find(std::string_view key) const {
  if (type != Type::kObject) return nullptr;
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::optional<int64_t> Json::Int() const {
  if (type != Type::kNumber) return std::nullopt;
  if (text.find_first_of(".eE") != std::string::npos) return std::nullopt;
  return std::stoll(text);
}

std::optional<Shape> Json::IntArray() const {
  if (type != Type::kArray) return std::nullopt;
  Shape out;
  for (const Json& item : items) {
    auto v = item.Int();
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

namespace {

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}

  bool Parse(Json* out, std::string* error) {
    SkipSpace();
    if (!Value(out, 0)) {
      *error = "JSON syntax error at byte " + std::to_string(pos_) + ": " + why_;
      return false;
    }
    SkipSpace();
    if (pos_ != s_.size()) {
      *error = "trailing characters at byte " + std::to_string(pos_);
      return false;
    }
    return true;
  }

 private:
  bool Error(const char* why) {
    why_ = why;
    return false;
  }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return Error("bad literal");
    pos_ += word.size();
    return true;
  }
  bool Value(Json* out, int depth) {
    if (depth > 64) return Error("nested too deeply");
    if (pos_ >= s_.size()) return Error("unexpected end");
    const char c = s_[pos_];
    if (c == '{') return Object(out, depth);
    if (c == '[') return Array(out, depth);
    if (c == '"') {
      out->type = Json::Type::kString;
      return String(&out->text);
    }
    if (c == 't' || c == 'f') {
      out->type = Json::Type::kBool;
      out->boolean = c == 't';
      return Literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      out->type = Json::Type::kNull;
      return Literal("null");
    }
    return Number(out);
  }
  bool Digits() {
    const size_t begin = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    return pos_ > begin;
  }
  bool Number(Json* out) {
    const size_t begin = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (!Digits()) {
      return Error("bad value");
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!Digits()) return Error("bad fraction");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!Digits()) return Error("bad exponent");
    }
    out->type = Json::Type::kNumber;
    out->text = std::string(s_.substr(begin, pos_ - begin));
    out->number = std::strtod(out->text.c_str(), nullptr);
    return true;
  }
  bool Hex4(uint32_t* v) {
    if (pos_ + 4 > s_.size()) return Error("short \\u escape");
    *v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      *v <<= 4;
      if (h >= '0' && h <= '9') {
        *v |= h - '0';
      } else if (h >= 'a' && h <= 'f') {
        *v |= h - 'a' + 10;
      } else if (h >= 'A' && h <= 'F') {
        *v |= h - 'A' + 10;
      } else {
        return Error("bad \\u escape");
      }
    }
    return true;
  }
  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  bool String(std::string* out) {
    ++pos_;  // '"'
    out->clear();
    while (true) {
      if (pos_ >= s_.size()) return Error("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[pos_++]);
      if (c == '"') return true;
      if (c < 0x20) return Error("control character in string");
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        continue;
      }
      if (pos_ >= s_.size()) return Error("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out->push_back(e);
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00) {
            uint32_t low = 0;
            if (s_.substr(pos_, 2) != "\\u") return Error("lone surrogate");
            pos_ += 2;
            if (!Hex4(&low) || low < 0xDC00 || low > 0xDFFF) {
              return Error("bad surrogate pair");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          return Error("bad escape");
      }
    }
  }
  bool Array(Json* out, int depth) {
    ++pos_;
    out->type = Json::Type::kArray;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      out->items.emplace_back();
      if (!Value(&out->items.back(), depth + 1)) return false;
      SkipSpace();
      if (pos_ >= s_.size()) return Error("unterminated array");
      const char c = s_[pos_++];
      if (c == ']') return true;
      if (c != ',') return Error("expected , or ]");
    }
  }
  bool Object(Json* out, int depth) {
    ++pos_;
    out->type = Json::Type::kObject;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return Error("expected key");
      std::string key;
      if (!String(&key)) return false;
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Error("expected :");
      ++pos_;
      SkipSpace();
      Json value;
      if (!Value(&value, depth + 1)) return false;
      out->members.emplace_back(std::move(key), std::move(value));
      SkipSpace();
      if (pos_ >= s_.size()) return Error("unterminated object");
      const char c = s_[pos_++];
      if (c == '}') return true;
      if (c != ',') return Error("expected , or }");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  const char* why_ = "";
};

}  // namespace

std::optional<Json> ParseJson(std::string_view text, std::string* error) {
  Json out;
  JsonParser parser(text);
  if (!parser.Parse(&out, error)) return std::nullopt;
  return out;
}

// ---------------------------------------------------------------------------
// .npy

std::optional<NpyHeader> ParseNpyHeader(const uint8_t* data, size_t size, std::string* error) {
  static const uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(data, kMagic, 6) != 0) {
    *error = "no \\x93NUMPY magic";
    return std::nullopt;
  }
  NpyHeader h;
  h.major = data[6];
  size_t prefix = 0;
  size_t len = 0;
  if (h.major == 1) {
    prefix = 10;
    len = data[8] | (data[9] << 8);
  } else if (h.major == 2 || h.major == 3) {
    prefix = 12;
    if (size < 12) {
      *error = "short v2 header";
      return std::nullopt;
    }
    len = static_cast<size_t>(data[8]) | (static_cast<size_t>(data[9]) << 8) |
          (static_cast<size_t>(data[10]) << 16) | (static_cast<size_t>(data[11]) << 24);
  } else {
    *error = "unknown .npy version " + std::to_string(h.major);
    return std::nullopt;
  }
  h.total_length = prefix + len;
  if (h.total_length > size) {
    *error = "header length " + std::to_string(h.total_length) + " runs past the bytes read";
    return std::nullopt;
  }
  if (h.total_length % 16 != 0) {
    *error = "header not 16-byte aligned (" + std::to_string(h.total_length) + " bytes)";
    return std::nullopt;
  }
  if (data[h.total_length - 1] != '\n') {
    *error = "header does not end with a newline";
    return std::nullopt;
  }
  h.dict.assign(reinterpret_cast<const char*>(data) + prefix, len - 1);
  while (!h.dict.empty() && h.dict.back() == ' ') h.dict.pop_back();
  if (h.dict.find('\n') != std::string::npos) {
    *error = "newline inside the header dict";
    return std::nullopt;
  }
  return h;
}

std::string NpyShapeTuple(const Shape& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

bool CheckNpyDict(const std::string& dict, const Shape& shape, std::string* error) {
  if (dict.empty() || dict.front() != '{' || dict.back() != '}') {
    *error = "header dict is not {...}: " + dict;
    return false;
  }
  if (dict.find("'descr': ") == std::string::npos) {
    *error = "no 'descr' in " + dict;
    return false;
  }
  if (dict.find("'fortran_order': False") == std::string::npos) {
    *error = "no 'fortran_order': False in " + dict;
    return false;
  }
  const std::string want = "'shape': " + NpyShapeTuple(shape);
  if (dict.find(want) == std::string::npos) {
    *error = "no " + want + " in " + dict;
    return false;
  }
  return true;
}

}  // namespace b2ndfs::itest
