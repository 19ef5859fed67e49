// Unit tests of format/meta_json: msgpack -> JSON goldens, base64, quoting
// (the meta.json documents: meta_json_document_test.cc).
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

#include "json_check.h"

namespace {

using b2ndfs::format::Base64Encode;
using b2ndfs::format::MsgpackToJson;
using b2ndfs::format::testing::Bytes;
using b2ndfs::format::testing::Pack;
using b2ndfs::format::testing::ParseJson;

std::string Json(const Bytes& bytes) {
  std::optional<std::string> text = MsgpackToJson(bytes);
  REQUIRE(text);
  return *text;
}

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

}  // namespace
