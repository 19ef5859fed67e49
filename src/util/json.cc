#include "b2ndfs/util/json.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>

#include "b2ndfs/util/text.h"

namespace b2ndfs::json {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  Parser(std::string_view text, Limits limits) : s_(text), limits_(limits) {}

  Result<Value> Document() {
    Value v;
    if (!ParseValue(0, &v)) return Error();
    Space();
    if (i_ != s_.size()) {
      why_ = "text after the value";
      return Error();
    }
    return v;
  }

 private:
  Status Error() const {
    return Status(EIO, "malformed JSON at byte " + std::to_string(i_) + ": " + why_);
  }
  bool Fail(const char* why) {
    why_ = why;
    return false;
  }

  void Space() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) {
      ++i_;
    }
  }

  bool Literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return Fail("not a JSON value");
    i_ += word.size();
    return true;
  }

  bool ParseValue(size_t depth, Value* v) {
    Space();
    v->begin = i_;
    if (i_ >= s_.size()) return Fail("a value expected");
    bool ok = false;
    switch (s_[i_]) {
      case '{':
        v->kind = Value::Kind::kObject;
        ok = Container(depth, '}', v);
        break;
      case '[':
        v->kind = Value::Kind::kArray;
        ok = Container(depth, ']', v);
        break;
      case '"':
        v->kind = Value::Kind::kString;
        ok = String(&v->text);
        break;
      case 't':
        v->kind = Value::Kind::kBool;
        v->boolean = true;
        ok = Literal("true");
        break;
      case 'f':
        v->kind = Value::Kind::kBool;
        ok = Literal("false");
        break;
      case 'n':
        ok = Literal("null");
        break;
      default:
        v->kind = Value::Kind::kNumber;
        ok = Number(&v->number);
    }
    v->end = i_;
    return ok;
  }

  // An object's members or an array's items, from the opening bracket.
  bool Container(size_t depth, char close, Value* v) {
    if (depth >= limits_.max_depth) return Fail("nested too deep");
    ++i_;
    Space();
    if (i_ < s_.size() && s_[i_] == close) {
      ++i_;
      return true;
    }
    for (;;) {
      Space();
      if (close == '}') {
        if (i_ >= s_.size() || s_[i_] != '"') return Fail("a member name expected");
        std::string key;
        if (!String(&key)) return false;
        v->keys.push_back(std::move(key));
        Space();
        if (i_ >= s_.size() || s_[i_] != ':') return Fail("':' expected");
        ++i_;
      }
      v->items.emplace_back();
      if (!ParseValue(depth + 1, &v->items.back())) return false;
      Space();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == close) {
        ++i_;
        return true;
      }
      return Fail(close == '}' ? "',' or '}' expected" : "',' or ']' expected");
    }
  }

  // The four hex digits of a \u escape at i_ (past the 'u').
  bool Hex4(uint32_t* cp) {
    if (s_.size() - i_ < 4) return Fail("a short \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = HexDigit(s_[i_ + static_cast<size_t>(k)]);
      if (h < 0) return Fail("a bad \\u escape");
      v = v * 16 + static_cast<uint32_t>(h);
    }
    i_ += 4;
    *cp = v;
    return true;
  }

  bool Escape(std::string* out) {
    if (i_ >= s_.size()) return Fail("an unterminated string");
    const char e = s_[i_++];
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out->push_back(e);
        return true;
      case 'b':
        out->push_back('\b');
        return true;
      case 'f':
        out->push_back('\f');
        return true;
      case 'n':
        out->push_back('\n');
        return true;
      case 'r':
        out->push_back('\r');
        return true;
      case 't':
        out->push_back('\t');
        return true;
      case 'u':
        break;
      default:
        --i_;
        return Fail("a bad escape");
    }
    uint32_t cp;
    if (!Hex4(&cp)) return false;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail("a lone low surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      uint32_t low;
      if (s_.substr(i_, 2) != "\\u") return Fail("a lone high surrogate");
      i_ += 2;
      if (!Hex4(&low)) return false;
      if (low < 0xDC00 || low > 0xDFFF) return Fail("a lone high surrogate");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    text::AppendUtf8(cp, out);
    return true;
  }

  // One UTF-8 sequence at i_ (its first byte >= 0x80), copied to `out`.
  bool Utf8(std::string* out) {
    const size_t n = text::Utf8SequenceLength(s_, i_);
    if (n == 0) return Fail("invalid UTF-8");
    out->append(s_.substr(i_, n));
    i_ += n;
    return true;
  }

  bool String(std::string* out) {
    ++i_;  // the opening quote
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c == '\\') {
        ++i_;
        if (!Escape(out)) return false;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        return Fail("a control character in a string");
      } else if (static_cast<unsigned char>(c) >= 0x80) {
        if (!Utf8(out)) return false;
      } else {
        out->push_back(c);
        ++i_;
      }
    }
    return Fail("an unterminated string");
  }

  bool Digits() {
    const size_t start = i_;
    while (i_ < s_.size() && IsDigit(s_[i_])) ++i_;
    return i_ > start;
  }

  bool Number(std::string* out) {
    const size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
      if (i_ < s_.size() && IsDigit(s_[i_])) return Fail("a number with a leading zero");
    } else if (!Digits()) {
      return Fail(start == i_ ? "not a JSON value" : "a digit expected");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!Digits()) return Fail("a digit expected");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!Digits()) return Fail("a digit expected");
    }
    out->assign(s_.substr(start, i_ - start));
    // strtod: std::from_chars for doubles is missing from GCC 12's library.
    if (std::isinf(std::strtod(out->c_str(), nullptr))) {
      i_ = start;
      return Fail("a number out of range");
    }
    return true;
  }

  std::string_view s_;
  Limits limits_;
  size_t i_ = 0;
  const char* why_ = "";
};

}  // namespace

const Value* Value::Find(std::string_view key) const {
  if (kind != Kind::kObject) return nullptr;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (keys[k] == key) return &items[k];
  }
  return nullptr;
}

std::optional<int64_t> Value::Int64() const {
  if (kind != Kind::kNumber || number.find_first_of(".eE") != std::string::npos) {
    return std::nullopt;
  }
  int64_t v = 0;
  const char* last = number.data() + number.size();
  const auto [ptr, ec] = std::from_chars(number.data(), last, v);
  if (ec != std::errc() || ptr != last) return std::nullopt;
  return v;
}

std::optional<double> Value::Double() const {
  if (kind != Kind::kNumber) return std::nullopt;
  return std::strtod(number.c_str(), nullptr);
}

Result<Value> Parse(std::string_view text, Limits limits) {
  try {
    return Parser(text, limits).Document();
  } catch (const std::bad_alloc&) {
    return Status(ENOMEM, "out of memory parsing JSON");
  }
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
          const size_t n = text::Utf8SequenceLength(text, i);
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

std::string Quote(std::string_view text) {
  std::string out;
  AppendQuoted(text, &out);
  return out;
}

}  // namespace b2ndfs::json
