// Unit tests of format/meta_json: msgpack -> JSON goldens, base64, quoting,
// and the meta.json document checked with a small strict JSON parser.
#include "b2ndfs/format/meta_json.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <msgpack.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using b2ndfs::format::Base64Encode;
using b2ndfs::format::JsonQuote;
using b2ndfs::format::MsgpackToJson;
using Bytes = std::vector<uint8_t>;

template <typename Fn>
Bytes Pack(Fn&& fn) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  fn(packer);
  return Bytes(buffer.data(), buffer.data() + buffer.size());
}

std::string Json(const Bytes& bytes) {
  std::optional<std::string> text = MsgpackToJson(bytes);
  REQUIRE(text);
  return *text;
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

std::optional<Value> ParseJson(const std::string& text) { return Parser(text).ParseDocument(); }

// ---- tests ------------------------------------------------------------------

TEST_CASE("Base64Encode matches RFC 4648 test vectors") {
  const auto b64 = [](const std::string& s) { return Base64Encode(Bytes(s.begin(), s.end())); };
  CHECK(b64("") == "");
  CHECK(b64("f") == "Zg==");
  CHECK(b64("fo") == "Zm8=");
  CHECK(b64("foo") == "Zm9v");
  CHECK(b64("foob") == "Zm9vYg==");
  CHECK(b64("fooba") == "Zm9vYmE=");
  CHECK(b64("foobar") == "Zm9vYmFy");
  CHECK(Base64Encode(Bytes{0xff, 0xfe, 0xfd}) == "//79");
}

TEST_CASE("JsonQuote escapes and keeps UTF-8 safe") {
  CHECK(JsonQuote("plain") == "\"plain\"");
  CHECK(JsonQuote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(JsonQuote("\n\t\r\b\f") == "\"\\n\\t\\r\\b\\f\"");
  CHECK(JsonQuote(std::string("\x01\x1f\x7f", 3)) == "\"\\u0001\\u001f\\u007f\"");
  CHECK(JsonQuote(std::string("nul\0x", 5)) == "\"nul\\u0000x\"");
  CHECK(JsonQuote("\xc3\xa9t\xc3\xa9") == "\"\xc3\xa9t\xc3\xa9\"");            // été
  CHECK(JsonQuote("\xe2\x82\xac") == "\"\xe2\x82\xac\"");                      // €
  CHECK(JsonQuote("\xf0\x9f\x98\x80") == "\"\xf0\x9f\x98\x80\"");              // emoji
  CHECK(JsonQuote("\xff") == "\"\\ufffd\"");                                   // invalid byte
  CHECK(JsonQuote("a\xc3") == "\"a\\ufffd\"");                                 // truncated
  CHECK(JsonQuote("\xc0\xaf") == "\"\\ufffd\\ufffd\"");                        // overlong
  CHECK(JsonQuote("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");             // surrogate
  CHECK(JsonQuote("\xf4\x90\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // > U+10FFFF
  CHECK(JsonQuote("\xe2\x82x") == "\"\\ufffd\\ufffdx\"");
}

TEST_CASE("MsgpackToJson goldens") {
  CHECK(Json({0xc0}) == "null");
  CHECK(Json({0xc2}) == "false");
  CHECK(Json({0xc3}) == "true");
  CHECK(Json({0x00}) == "0");
  CHECK(Json({0x7f}) == "127");
  CHECK(Json({0xff}) == "-1");
  CHECK(Json({0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) == "18446744073709551615");
  CHECK(Json({0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}) == "-9223372036854775808");
  CHECK(Json(Pack([](auto& p) { p.pack_double(1.5); })) == "1.5");
  CHECK(Json(Pack([](auto& p) { p.pack_double(0.1); })) == "0.1");
  CHECK(Json(Pack([](auto& p) { p.pack_float(0.1f); })) == "0.1");
  // msgpack-cxx packs integral doubles as integers: raw float64 -2.0 here.
  CHECK(Json({0xcb, 0xc0, 0, 0, 0, 0, 0, 0, 0}) == "-2");
  CHECK(Json({0xca, 0x3f, 0xc0, 0, 0}) == "1.5");  // float32
  CHECK(Json(Pack([](auto& p) { p.pack_double(1e300); })) == "1e+300");
  // What JSON cannot hold is a one-key '$' object (documented in meta_json.h).
  CHECK(Json(Pack([](auto& p) { p.pack_double(std::nan("")); })) == "{\"$float\": \"NaN\"}");
  CHECK(Json(Pack([](auto& p) { p.pack_double(std::numeric_limits<double>::infinity()); })) ==
        "{\"$float\": \"Infinity\"}");
  CHECK(Json(Pack([](auto& p) { p.pack_float(-std::numeric_limits<float>::infinity()); })) ==
        "{\"$float\": \"-Infinity\"}");
  CHECK(Json({0xa3, 'N', 'a', 'N'}) == "\"NaN\"");  // the string stays a string
  CHECK(Json({0xa0}) == "\"\"");
  CHECK(Json({0xa3, 'a', '"', 'b'}) == "\"a\\\"b\"");
  CHECK(Json({0xa2, 0xc3, 0x28}) == "{\"$str\":\"wyg=\"}");        // not UTF-8: its bytes
  CHECK(Json({0xa2, 0xc3, 0xa9}) == std::string("\"\xc3\xa9\""));  // UTF-8 kept as is
  CHECK(Json({0xc4, 0x03, 'f', 'o', 'o'}) == "{\"$bin\":\"Zm9v\"}");
  CHECK(Json({0xa3, 'Z', 'm', '9'}) == "\"Zm9\"");  // a str is never taken for bin
  CHECK(Json({0xc4, 0x00}) == "{\"$bin\":\"\"}");
  CHECK(Json({0x90}) == "[]");
  CHECK(Json({0x80}) == "{}");
  CHECK(Json({0x93, 0x01, 0xa1, 'x', 0xc0}) == "[1,\"x\",null]");
  CHECK(Json({0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0x92, 0xc3, 0xc2}) ==
        "{\"a\":1,\"b\":[true,false]}");
  // Keys that are not strings: the pairs, in order, keys as values.
  CHECK(Json({0x84, 0x01, 0xa1, 'i', 0xc3, 0xa1, 'b', 0xc0, 0xa1, 'n', 0x92, 0x01, 0x02, 0xa1,
              'a'}) == "{\"$map\":[[1,\"i\"],[true,\"b\"],[null,\"n\"],[[1,2],\"a\"]]}");
  // "1" and 1 stay apart; repeated keys and keys starting with '$' are kept.
  CHECK(Json({0x82, 0xa1, '1', 0x02, 0x01, 0x03}) == "{\"$map\":[[\"1\",2],[1,3]]}");
  CHECK(Json({0x82, 0xa1, 'k', 0x02, 0xa1, 'k', 0x03}) == "{\"$map\":[[\"k\",2],[\"k\",3]]}");
  CHECK(Json({0x81, 0xa4, '$', 'b', 'i', 'n', 0x01}) == "{\"$map\":[[\"$bin\",1]]}");
  CHECK(Json({0x81, 0xa2, 'a', '$', 0x01}) == "{\"a$\":1}");
  CHECK(Json({0x81, 0xa1, 'q', 0x81, 0xa2, '"', 'k', 0x90}) == "{\"q\":{\"\\\"k\":[]}}");
  // ext: fixext1 type 5 and ext8 of 3 bytes type -1.
  CHECK(Json({0xd4, 0x05, 0x41}) == "{\"$ext\":5,\"data\":\"QQ==\"}");
  // Type -1 of a size no timestamp has: no "timestamp".
  CHECK(Json({0xc7, 0x03, 0xff, 'f', 'o', 'o'}) == "{\"$ext\":-1,\"data\":\"Zm9v\"}");
  // msgpack timestamps: 32-bit seconds, 64-bit (ns << 34 | s), 96-bit.
  CHECK(Json({0xd6, 0xff, 0x65, 0x93, 0x7d, 0x25}) ==
        "{\"$ext\":-1,\"data\":\"ZZN9JQ==\",\"timestamp\":\"2024-01-02T03:04:05.000000000Z\"}");
  CHECK(Json({0xd7, 0xff, 0x00, 0x00, 0x00, 0x18, 0x65, 0x93, 0x7d, 0x25}) ==
        "{\"$ext\":-1,\"data\":\"AAAAGGWTfSU=\",\"timestamp\":\"2024-01-02T03:04:05.000000006Z\"}");
  CHECK(Json({0xc7, 0x0c, 0xff, 0x00, 0x00, 0x00, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
              0xff}) ==
        "{\"$ext\":-1,\"data\":\"AAAAAf//////////"
        "\",\"timestamp\":\"1969-12-31T23:59:59.000000001Z\"}");
  // Nanoseconds over 999999999: not a timestamp, the bytes still shown.
  CHECK(Json({0xd7, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00}) ==
        "{\"$ext\":-1,\"data\":\"/////wAAAAA=\"}");
}

TEST_CASE("MsgpackToJson rejects what is not exactly one object") {
  CHECK_FALSE(MsgpackToJson(Bytes{}));
  CHECK_FALSE(MsgpackToJson(Bytes{0x01, 0x02}));      // two objects
  CHECK_FALSE(MsgpackToJson(Bytes{0x92, 0x01}));      // truncated
  CHECK_FALSE(MsgpackToJson(Bytes{0xc1}));            // reserved byte
  CHECK_FALSE(MsgpackToJson(Bytes{0xa5, 'a', 'b'}));  // str runs out
  // Sizes claiming 4 GiB or 4 Gi elements never allocate.
  CHECK_FALSE(MsgpackToJson(Bytes{0xc6, 0xff, 0xff, 0xff, 0xff, 0x00}));
  CHECK_FALSE(MsgpackToJson(Bytes{0xdd, 0xff, 0xff, 0xff, 0xff, 0x00}));
  CHECK_FALSE(MsgpackToJson(Bytes{0xdf, 0xff, 0xff, 0xff, 0xff, 0x00}));
  CHECK_FALSE(MsgpackToJson(Bytes{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}));
  // Nesting: 64 levels are fine, 65 are not.
  Bytes deep64(64, 0x91);
  deep64.push_back(0xc0);
  CHECK(Json(deep64) == std::string(64, '[') + "null" + std::string(64, ']'));
  Bytes deep65(65, 0x91);
  deep65.push_back(0xc0);
  CHECK_FALSE(MsgpackToJson(deep65));
  Bytes deep_maps;
  for (int i = 0; i < 65; ++i) {
    deep_maps.push_back(0x81);
    deep_maps.push_back(0x00);
  }
  deep_maps.push_back(0xc0);
  CHECK_FALSE(MsgpackToJson(deep_maps));
}

TEST_CASE("MsgpackToJson output is valid JSON under random input") {
  std::mt19937 rng(777);
  // {"a": [1, 1.5, bin ff00, float32 NaN], 1: ext, "é": {nil: true}, [[], {}]: "z"}
  const Bytes seed = {0x84, 0xa1, 'a',  0x94, 0x01, 0xcb, 0x3f, 0xf8, 0,    0,    0,    0,    0,
                      0,    0xc4, 0x02, 0xff, 0x00, 0xca, 0x7f, 0xc0, 0x00, 0x00, 0x01, 0xd4, 0x05,
                      0x41, 0xa2, 0xc3, 0xa9, 0x81, 0xc0, 0xc3, 0x92, 0x90, 0x80, 0xa1, 'z'};
  REQUIRE(ParseJson(Json(seed)));
  int converted = 0;
  for (int iteration = 0; iteration < 5000; ++iteration) {
    Bytes bytes = seed;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0) bytes.resize(rng() % bytes.size());
    std::optional<std::string> text = MsgpackToJson(bytes);
    if (!text) continue;
    ++converted;
    INFO(*text);
    REQUIRE(ParseJson(*text));
  }
  CHECK(converted > 0);
}

b2ndfs::format::NdMeta ExampleNdMeta() {
  b2ndfs::format::NdMeta meta;
  meta.format = "b2nd";
  meta.version = 0;
  meta.ndim = 2;
  meta.shape = {400, 3};
  meta.chunkshape = {110, 3};
  meta.blockshape = {57, 3};
  meta.dtype_format = 0;
  meta.dtype = "|u1";
  return meta;
}

TEST_CASE("meta.json of a b2nd array") {
  b2ndfs::format::FrameInfo frame;
  frame.codec = 5;
  frame.clevel = 5;
  frame.filters = {0, 0, 0, 0, 3, 1};
  frame.filters_meta = {0, 0, 0, 0, 7, 0};
  frame.metalayers.push_back({"b2nd", {}});
  frame.metalayers.push_back({"other", {}});
  const b2ndfs::format::NdMeta ndmeta = ExampleNdMeta();

  b2ndfs::format::MetaJsonInput in;
  in.format = "b2nd";
  in.version = 0;
  in.shape = {400, 3};
  in.chunkshape = {110, 3};
  in.blockshape = {57, 3};
  in.dtype = "|u1";
  in.dtype_format = 0;
  in.itemsize = 1;
  in.nbytes = 1200;
  in.cbytes = 360;
  in.nchunks = 4;
  in.frame = &frame;
  in.ndmeta = &ndmeta;
  in.vlmeta.push_back({"attrs", Pack([](auto& p) {
                         p.pack_map(2);
                         p.pack(std::string("unit"));
                         p.pack(
                             std::string("\xc2\xb0"
                                         "C"));
                         p.pack(std::string("scale"));
                         p.pack(std::vector<double>{0.5, 2.0});
                       })});
  in.vlmeta.push_back({"raw", Bytes{0xc1, 0x00, 0xff}});  // not msgpack
  in.files.push_back({"data", {400, 3}, 1200});
  in.files.push_back({"data.npy", {400, 3}, 1328});
  in.files.push_back({"chunks", {110, 3}, 330});
  in.files.push_back({"slices/0", {3}, 3});
  in.files.push_back({"slices/1", {400}, 400});

  const std::string text = b2ndfs::format::RenderMetaJson(in);
  REQUIRE(!text.empty());
  CHECK(text.back() == '\n');
  CHECK(text == b2ndfs::format::RenderMetaJson(in));  // deterministic
  INFO(text);
  std::optional<Value> doc = ParseJson(text);
  REQUIRE(doc);
  REQUIRE(doc->kind == Value::Kind::kObject);
  const std::vector<std::string> expected_keys = {
      "format",       "version",  "ndim",       "shape",  "chunkshape", "blockshape", "dtype",
      "dtype_format", "itemsize", "nbytes",     "cbytes", "cratio",     "nchunks",    "codec",
      "clevel",       "filters",  "metalayers", "vlmeta", "files"};
  CHECK(doc->keys == expected_keys);
  const Value& d = *doc;
  CHECK(d["format"].text == "b2nd");
  CHECK(d["version"].Int() == 0);
  CHECK(d["ndim"].Int() == 2);
  CHECK(d["shape"].Ints() == std::vector<int64_t>{400, 3});
  CHECK(d["chunkshape"].Ints() == std::vector<int64_t>{110, 3});
  CHECK(d["blockshape"].Ints() == std::vector<int64_t>{57, 3});
  CHECK(d["dtype"].text == "|u1");
  CHECK(d["dtype_format"].Int() == 0);
  CHECK(d["itemsize"].Int() == 1);
  CHECK(d["nbytes"].Int() == 1200);
  CHECK(d["cbytes"].Int() == 360);
  CHECK(d["cratio"].number == "3.333");
  CHECK(d["nchunks"].Int() == 4);
  CHECK(d["codec"].text == "zstd");
  CHECK(d["clevel"].Int() == 5);
  REQUIRE(d["filters"].items.size() == 2);
  CHECK(d["filters"].items[0]["name"].text == "delta");
  CHECK(d["filters"].items[0]["meta"].Int() == 7);
  CHECK(d["filters"].items[1]["name"].text == "shuffle");
  const Value& metalayers = d["metalayers"];
  REQUIRE(metalayers["names"].items.size() == 2);
  CHECK(metalayers["names"].items[0].text == "b2nd");
  CHECK(metalayers["names"].items[1].text == "other");
  const Value& b2nd = metalayers["b2nd"];
  CHECK(b2nd["shape"].Ints() == std::vector<int64_t>{400, 3});
  CHECK(b2nd["chunkshape"].Ints() == std::vector<int64_t>{110, 3});
  CHECK(b2nd["blockshape"].Ints() == std::vector<int64_t>{57, 3});
  CHECK(b2nd["dtype"].text == "|u1");
  const Value& vlmeta = d["vlmeta"];
  CHECK(vlmeta["attrs"]["unit"].text ==
        "\xc2\xb0"
        "C");
  REQUIRE(vlmeta["attrs"]["scale"].items.size() == 2);
  CHECK(vlmeta["attrs"]["scale"].items[0].number == "0.5");
  CHECK(vlmeta["attrs"]["scale"].items[1].number == "2");
  CHECK(vlmeta["raw"]["base64"].text == "wQD/");
  const Value& files = d["files"];
  CHECK(files.keys ==
        std::vector<std::string>{"data", "data.npy", "chunks", "slices/0", "slices/1"});
  CHECK(files["data"]["shape"].Ints() == std::vector<int64_t>{400, 3});
  CHECK(files["data"]["size"].Int() == 1200);
  CHECK(files["slices/1"]["size"].Int() == 400);
  // Layout: 2-space indentation and arrays of numbers on one line.
  CHECK(text.rfind("{\n  \"format\": \"b2nd\",\n  \"version\": 0,\n  \"ndim\": 2,\n  \"shape\": "
                   "[400, 3],\n",
                   0) == 0);
  CHECK(text.find("\"vlmeta\": {\n    \"attrs\": {\n      \"unit\": \"\xc2\xb0"
                  "C\",\n      "
                  "\"scale\": [0.5, 2]\n    },\n") != std::string::npos);
}

TEST_CASE("meta.json without frame, metalayer, or data") {
  b2ndfs::format::MetaJsonInput in;
  in.format = "schunk";
  in.version = 2;
  in.shape = {0};
  in.chunkshape = {1};
  in.blockshape = {1};
  in.itemsize = 8;
  const std::string text = b2ndfs::format::RenderMetaJson(in);
  std::optional<Value> doc = ParseJson(text);
  REQUIRE(doc);
  const Value& d = *doc;
  CHECK(d["dtype"].kind == Value::Kind::kNull);
  CHECK(d["dtype_format"].kind == Value::Kind::kNull);
  CHECK(d["cratio"].kind == Value::Kind::kNull);  // cbytes 0
  CHECK(d["codec"].kind == Value::Kind::kNull);
  CHECK(d["clevel"].kind == Value::Kind::kNull);
  CHECK(d["filters"].items.empty());
  CHECK(d["metalayers"]["names"].items.empty());
  CHECK_FALSE(d["metalayers"].Has("b2nd"));
  CHECK(d["vlmeta"].keys.empty());
  CHECK(d["files"].keys.empty());
  CHECK(text.find("\"filters\": [],") != std::string::npos);
  CHECK(text.find("\"vlmeta\": {},") != std::string::npos);
}

TEST_CASE("meta.json stays valid with hostile names and values") {
  b2ndfs::format::FrameInfo frame;
  frame.codec = 6;
  frame.udcodec = 244;
  frame.filters = {200, 0, 0, 0, 0, 0};
  frame.metalayers.push_back({std::string("a\"\n\xff\x00z", 6), {}});
  b2ndfs::format::NdMeta caterva;
  caterva.format = "caterva";
  caterva.ndim = 1;
  caterva.shape = {5};
  caterva.chunkshape = {5};
  caterva.blockshape = {5};
  caterva.has_blockshape = false;
  b2ndfs::format::MetaJsonInput in;
  in.format = "caterva";
  in.shape = {5};
  in.chunkshape = {5};
  in.blockshape = {5};
  in.dtype = std::string("\x01\"\\");
  in.frame = &frame;
  in.ndmeta = &caterva;
  // Deep and wide vlmeta values, and one that is too deep for JSON conversion.
  Bytes wide = Pack([](auto& p) {
    p.pack_array(3000);
    for (int i = 0; i < 3000; ++i) {
      p.pack_map(1);
      p.pack(i);
      p.pack_array(1);
      p.pack_nil();
    }
  });
  Bytes deep(65, 0x91);
  deep.push_back(0xc0);
  in.vlmeta.push_back({"\t", wide});
  in.vlmeta.push_back({"deep", deep});
  in.vlmeta.push_back({"empty", {}});
  in.files.push_back({"slices/\"0\"", {}, 0});
  const std::string text = b2ndfs::format::RenderMetaJson(in);
  std::optional<Value> doc = ParseJson(text);
  REQUIRE(doc);
  const Value& d = *doc;
  CHECK(d["codec"].text == "user-registered:244");
  CHECK(d["filters"].items[0]["name"].text == "user-registered:200");
  CHECK(d["metalayers"]["names"].items[0].text == std::string("a\"\n\xef\xbf\xbd\0z", 8));
  CHECK_FALSE(d["metalayers"]["caterva"].Has("blockshape"));
  CHECK(d["dtype"].text == "\x01\"\\");
  CHECK(d["vlmeta"]["\t"].items.size() == 3000);
  // Integer keys: {"$map": [[2999, [null]]]}.
  CHECK(d["vlmeta"]["\t"].items[2999]["$map"].items[0].items[0].number == "2999");
  CHECK(d["vlmeta"]["\t"].items[2999]["$map"].items[0].items[1].items.size() == 1);
  CHECK(d["vlmeta"]["deep"]["base64"].text == Base64Encode(deep));
  CHECK(d["vlmeta"]["empty"]["base64"].text.empty());
  CHECK(d["files"]["slices/\"0\""]["size"].Int() == 0);
}

TEST_CASE("RenderErrorJson") {
  const std::string text = b2ndfs::format::RenderErrorJson("chunk 3: \"bad\"\n");
  CHECK(text == "{\n  \"error\": \"chunk 3: \\\"bad\\\"\\n\"\n}\n");
  std::optional<Value> doc = ParseJson(text);
  REQUIRE(doc);
  CHECK((*doc)["error"].text == "chunk 3: \"bad\"\n");
}

TEST_CASE("codec and filter names are c-blosc2's") {
  using b2ndfs::CodecName;
  using b2ndfs::FilterName;
  CHECK(CodecName(0, 0) == "blosclz");
  CHECK(CodecName(1, 1) == "lz4");
  CHECK(CodecName(2, 2) == "lz4hc");
  CHECK(CodecName(3, 3) == "snappy");  // Blosc1's; gone from c-blosc2
  CHECK(CodecName(4, 4) == "zlib");
  CHECK(CodecName(5, 5) == "zstd");
  // Codec 6: the id is the udcodec byte, named like any other.
  CHECK(CodecName(6, 5) == "zstd");
  CHECK(CodecName(6, 32) == "ndlz");
  CHECK(CodecName(6, 33) == "zfp_acc");
  CHECK(CodecName(6, 34) == "zfp_prec");
  CHECK(CodecName(6, 35) == "zfp_rate");
  CHECK(CodecName(6, 36) == "openhtj2k");
  CHECK(CodecName(6, 37) == "grok");
  CHECK(CodecName(6, 38) == "openzl");
  CHECK(CodecName(6, 39) == "j2k");
  CHECK(CodecName(6, 40) == "htj2k");
  CHECK(CodecName(6, 41) == "id:41");
  CHECK(CodecName(6, 159) == "id:159");
  CHECK(CodecName(6, 160) == "user-registered:160");
  CHECK(CodecName(6, 255) == "user-registered:255");
  CHECK(CodecName(6, 6) == "id:6");
  // Only codec 6 looks at udcodec (c-blosc2 writes the compcode there).
  CHECK(CodecName(5, 37) == "zstd");
  CHECK(CodecName(15, 0) == "id:15");
  CHECK(FilterName(0) == "none");
  CHECK(FilterName(1) == "shuffle");
  CHECK(FilterName(2) == "bitshuffle");
  CHECK(FilterName(3) == "delta");
  CHECK(FilterName(4) == "trunc_prec");
  CHECK(FilterName(32) == "ndcell");
  CHECK(FilterName(33) == "ndmean");
  CHECK(FilterName(34) == "bytedelta_buggy");
  CHECK(FilterName(35) == "bytedelta");
  CHECK(FilterName(36) == "int_trunc");
  CHECK(FilterName(5) == "id:5");
  CHECK(FilterName(37) == "id:37");
  CHECK(FilterName(159) == "id:159");
  CHECK(FilterName(160) == "user-registered:160");
  CHECK(FilterName(255) == "user-registered:255");
}

TEST_CASE("meta.json names what the container needs and b2ndfs never loads") {
  b2ndfs::format::FrameInfo frame;
  frame.codec = 6;
  frame.udcodec = 37;
  frame.clevel = 5;
  frame.filters = {0, 0, 0, 0, 0, 1};
  b2ndfs::format::MetaJsonInput in;
  in.format = "b2nd";
  in.shape = {4};
  in.chunkshape = {4};
  in.blockshape = {4};
  in.itemsize = 4;
  in.frame = &frame;
  const std::string plain = b2ndfs::format::RenderMetaJson(in);
  std::optional<Value> doc = ParseJson(plain);
  REQUIRE(doc);
  CHECK_FALSE(doc->Has("unsupported"));
  CHECK((*doc)["codec"].text == "grok");

  const std::string words =
      "codec grok (id 37) needs the external plugin blosc2_grok, which b2ndfs never loads; \"q\"";
  in.unsupported = words;
  const std::string text = b2ndfs::format::RenderMetaJson(in);
  doc = ParseJson(text);
  REQUIRE(doc);
  const Value& d = *doc;
  CHECK(d["unsupported"].kind == Value::Kind::kString);
  CHECK(d["unsupported"].text == words);
  // Right after "filters", and the rest of the document unchanged.
  size_t filters = 0, unsupported = 0;
  for (size_t i = 0; i < d.keys.size(); ++i) {
    if (d.keys[i] == "filters") filters = i;
    if (d.keys[i] == "unsupported") unsupported = i;
  }
  CHECK(unsupported == filters + 1);
  CHECK(d["metalayers"]["names"].items.empty());
  CHECK(text.find("\"unsupported\": \"codec grok (id 37) needs the external plugin blosc2_grok, "
                  "which b2ndfs never loads; \\\"q\\\"\",\n  \"metalayers\"") != std::string::npos);
  std::string without = text;
  const size_t at = without.find("  \"unsupported\"");
  without.erase(at, without.find('\n', at) + 1 - at);
  CHECK(without == plain);
}

}  // namespace
