// Helpers shared by the meta_json unit tests (meta_json_test.cc,
// meta_json_document_test.cc): msgpack packing, and a small strict JSON
// parser (RFC 8259) that checks the documents the code renders.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <msgpack.hpp>
#include <optional>
#include <string>
#include <vector>

namespace b2ndfs::format::testing {

using Bytes = std::vector<uint8_t>;

template <typename Fn>
inline Bytes Pack(Fn&& fn) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  fn(packer);
  return Bytes(buffer.data(), buffer.data() + buffer.size());
}

// ---- a small strict JSON parser (RFC 8259), for checking documents ----------

struct Value {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool boolean = false;
  std::string number;  // as written
  std::string text;
  std::vector<Value> items;
  std::vector<std::string> keys;  // object keys, in order (values in items)

  const Value& operator[](const std::string& key) const {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == key) return items[i];
    }
    FAIL("no key " << key);
    return *this;
  }
  bool Has(const std::string& key) const {
    for (const auto& k : keys) {
      if (k == key) return true;
    }
    return false;
  }
  int64_t Int() const {
    REQUIRE(kind == Kind::kNumber);
    return std::stoll(number);
  }
  std::vector<int64_t> Ints() const {
    REQUIRE(kind == Kind::kArray);
    std::vector<int64_t> out;
    for (const auto& v : items) out.push_back(v.Int());
    return out;
  }
};

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  std::optional<Value> ParseDocument() {
    std::optional<Value> v = ParseValue(0);
    Space();
    if (!v || i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void Space() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) {
      ++i_;
    }
  }
  bool Literal(const char* word) {
    const std::string w(word);
    if (s_.compare(i_, w.size(), w) != 0) return false;
    i_ += w.size();
    return true;
  }
  std::optional<Value> ParseValue(int depth) {
    if (depth > 200) return std::nullopt;
    Space();
    if (i_ >= s_.size()) return std::nullopt;
    Value v;
    const char c = s_[i_];
    if (c == 'n') {
      if (!Literal("null")) return std::nullopt;
      return v;
    }
    if (c == 't' || c == 'f') {
      v.kind = Value::Kind::kBool;
      v.boolean = c == 't';
      if (!Literal(c == 't' ? "true" : "false")) return std::nullopt;
      return v;
    }
    if (c == '"') {
      v.kind = Value::Kind::kString;
      if (!String(&v.text)) return std::nullopt;
      return v;
    }
    if (c == '[') {
      v.kind = Value::Kind::kArray;
      ++i_;
      Space();
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return v;
      }
      while (true) {
        auto item = ParseValue(depth + 1);
        if (!item) return std::nullopt;
        v.items.push_back(std::move(*item));
        Space();
        if (i_ >= s_.size()) return std::nullopt;
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (s_[i_] == ']') {
          ++i_;
          return v;
        }
        return std::nullopt;
      }
    }
    if (c == '{') {
      v.kind = Value::Kind::kObject;
      ++i_;
      Space();
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return v;
      }
      while (true) {
        Space();
        std::string key;
        if (i_ >= s_.size() || s_[i_] != '"' || !String(&key)) return std::nullopt;
        Space();
        if (i_ >= s_.size() || s_[i_] != ':') return std::nullopt;
        ++i_;
        auto item = ParseValue(depth + 1);
        if (!item) return std::nullopt;
        v.keys.push_back(key);
        v.items.push_back(std::move(*item));
        Space();
        if (i_ >= s_.size()) return std::nullopt;
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (s_[i_] == '}') {
          ++i_;
          return v;
        }
        return std::nullopt;
      }
    }
    // Number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    v.kind = Value::Kind::kNumber;
    const size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !isdigit(static_cast<unsigned char>(s_[i_]))) return std::nullopt;
    if (s_[i_] == '0') {
      ++i_;
    } else {
      while (i_ < s_.size() && isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (i_ >= s_.size() || !isdigit(static_cast<unsigned char>(s_[i_]))) return std::nullopt;
      while (i_ < s_.size() && isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (i_ >= s_.size() || !isdigit(static_cast<unsigned char>(s_[i_]))) return std::nullopt;
      while (i_ < s_.size() && isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    v.number = s_.substr(start, i_ - start);
    return v;
  }
  // Decodes a string; rejects raw control characters and invalid escapes.
  bool String(std::string* out) {
    ++i_;
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (++i_ >= s_.size()) return false;
        const char e = s_[i_++];
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
            if (i_ + 4 > s_.size()) return false;
            const unsigned cp = static_cast<unsigned>(std::stoul(s_.substr(i_, 4), nullptr, 16));
            i_ += 4;
            // Enough for the tests: encode the BMP code point as UTF-8.
            if (cp < 0x80) {
              out->push_back(static_cast<char>(cp));
            } else if (cp < 0x800) {
              out->push_back(static_cast<char>(0xc0 | cp >> 6));
              out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
            } else {
              out->push_back(static_cast<char>(0xe0 | cp >> 12));
              out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
              out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
            }
            break;
          }
          default:
            return false;
        }
        continue;
      }
      out->push_back(static_cast<char>(c));
      ++i_;
    }
    return false;
  }

  const std::string& s_;
  size_t i_ = 0;
};

inline std::optional<Value> ParseJson(const std::string& text) {
  return Parser(text).ParseDocument();
}

}  // namespace b2ndfs::format::testing
