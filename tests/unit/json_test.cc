// util/json: the strict reader, against the RFC's grammar, escapes, UTF-8,
// limits and the byte spans it reports.
#include "b2ndfs/util/json.h"

#include <catch2/catch.hpp>
#include <string>

using b2ndfs::json::Parse;
using b2ndfs::json::Quote;
using b2ndfs::json::Value;
using Kind = b2ndfs::json::Value::Kind;

TEST_CASE("json parses every kind of value") {
  auto v = Parse(R"( {"a": [1, -2.5e3, true, false, null], "b": {"c": "d"}, "e": ""} )");
  REQUIRE(v.ok());
  REQUIRE(v->kind == Kind::kObject);
  CHECK(v->keys == std::vector<std::string>{"a", "b", "e"});
  const Value* a = v->Find("a");
  REQUIRE(a != nullptr);
  REQUIRE(a->is_array());
  REQUIRE(a->items.size() == 5);
  CHECK(a->items[0].Int64() == 1);
  CHECK(a->items[1].number == "-2.5e3");
  CHECK(a->items[1].Double() == -2500.0);
  CHECK_FALSE(a->items[1].Int64());
  CHECK(a->items[2].kind == Kind::kBool);
  CHECK(a->items[2].boolean);
  CHECK_FALSE(a->items[3].boolean);
  CHECK(a->items[4].is_null());
  CHECK(v->Find("b")->Find("c")->text == "d");
  CHECK(v->Find("e")->is_string());
  CHECK(v->Find("zz") == nullptr);
  CHECK(a->Find("a") == nullptr);  // not an object
  CHECK(Parse("3")->Int64() == 3);
  CHECK(Parse("\"x\"")->text == "x");
  CHECK(Parse("[]")->items.empty());
  CHECK(Parse("{}")->keys.empty());
}

TEST_CASE("json reports each value's span in the text") {
  const std::string text = "{ \"k\" : [1, {\"x\": \"}\"}] , \"n\":null}";
  auto v = Parse(text);
  REQUIRE(v.ok());
  CHECK(v->begin == 0);
  CHECK(v->end == text.size());
  const Value* k = v->Find("k");
  CHECK(text.substr(k->begin, k->end - k->begin) == "[1, {\"x\": \"}\"}]");
  const Value* n = v->Find("n");
  CHECK(text.substr(n->begin, n->end - n->begin) == "null");
}

TEST_CASE("json decodes escapes, \\u escapes and surrogate pairs into UTF-8") {
  auto v = Parse(R"("a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\u20AC\ud83d\ude00\u0000")");
  REQUIRE(v.ok());
  CHECK(v->text == std::string("a\"b\\c/d\b\f\n\r\tA\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\0", 23));
  // Raw UTF-8 is kept as it is.
  CHECK(Parse("\"\xC3\xA9\xF0\x9F\x98\x80\"")->text == "\xC3\xA9\xF0\x9F\x98\x80");
}

TEST_CASE("json numbers: the RFC's grammar, Int64 in range only") {
  CHECK(Parse("0")->Int64() == 0);
  CHECK(Parse("-0")->Int64() == 0);
  CHECK(Parse("9223372036854775807")->Int64() == INT64_MAX);
  CHECK(Parse("-9223372036854775808")->Int64() == INT64_MIN);
  CHECK_FALSE(Parse("9223372036854775808")->Int64());  // a double, not an int64
  CHECK(Parse("9223372036854775808")->Double() == 9223372036854775808.0);
  CHECK(Parse("1E+2")->Double() == 100.0);
  CHECK(Parse("1e-400")->Double() == 0.0);  // underflow is zero, not an error
  for (const char* bad : {"01", "-", "+1", "1.", ".5", "1e", "1e+", "0x10", "1e999", "-1e999",
                          "NaN", "Infinity", "--1", "1.5.2"}) {
    CAPTURE(bad);
    CHECK(Parse(bad).status().error_number() == EIO);
  }
}

TEST_CASE("json rejects what the RFC does not allow") {
  for (const char* bad : {"",
                          " ",
                          "{",
                          "[",
                          "[1,]",
                          "{\"a\":1,}",
                          "{\"a\" 1}",
                          "{a:1}",
                          "{'a':1}",
                          "[1 2]",
                          "{\"a\":1}}",
                          "{\"a\":1} x",
                          "[1] [2]",
                          "tru",
                          "nul",
                          "True",
                          "\"unterminated",
                          "\"\\q\"",
                          "\"\\u12\"",
                          "\"\\u12G4\"",
                          "\"\\ud800\"",
                          "\"\\udc00\"",
                          "\"\\ud800\\u0041\"",
                          "\"\\ud800x\"",
                          "/* c */ 1",
                          "[1] // c",
                          "\"tab\there\"",
                          "\"nl\nhere\""}) {
    CAPTURE(bad);
    auto v = Parse(bad);
    REQUIRE_FALSE(v.ok());
    CHECK(v.status().error_number() == EIO);
    CHECK(v.status().message().find("malformed JSON at byte ") == 0);
  }
}

TEST_CASE("json rejects invalid UTF-8") {
  for (const std::string bad :
       {"\"\x80\"", "\"\xC0\xAF\"", "\"\xC3\"", "\"\xC3(\"", "\"\xE0\x80\xAF\"", "\"\xED\xA0\x80\"",
        "\"\xF4\x90\x80\x80\"", "\"\xF5\x80\x80\x80\"", "\"\xFF\"", "\"\xF0\x9F\x98\""}) {
    CAPTURE(bad);
    CHECK_FALSE(Parse(bad).ok());
  }
}

TEST_CASE("json limits nesting depth") {
  std::string deep(256, '[');
  deep += std::string(256, ']');
  CHECK(Parse(deep).ok());
  std::string deeper(257, '[');
  deeper += std::string(257, ']');
  auto v = Parse(deeper);
  REQUIRE_FALSE(v.ok());
  CHECK(v.status().message().find("nested too deep") != std::string::npos);
  CHECK_FALSE(Parse("[[[1]]]", {2}).ok());
  CHECK(Parse("[[1]]", {2}).ok());
  // Far deeper than any stack: refused, not a crash.
  CHECK_FALSE(Parse(std::string(1000000, '[')).ok());
}

TEST_CASE("json messages never quote the text") {
  const std::string secret = "wJalrXUtnFEMI/K7MDENG";
  for (const std::string& bad :
       {"{\"k\": \"" + secret + "\" x}", "{\"k\": " + secret + "}", "[\"" + secret}) {
    auto v = Parse(bad);
    REQUIRE_FALSE(v.ok());
    CHECK(v.status().message().find(secret) == std::string::npos);
  }
}

TEST_CASE("json keeps duplicate members in order; Find returns the first") {
  auto v = Parse("{\"a\": 1, \"a\": 2}");
  REQUIRE(v.ok());
  CHECK(v->keys.size() == 2);
  CHECK(v->Find("a")->Int64() == 1);
}

TEST_CASE("Quote escapes and keeps UTF-8 safe") {
  CHECK(Quote("plain") == "\"plain\"");
  CHECK(Quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(Quote("\n\t\r\b\f") == "\"\\n\\t\\r\\b\\f\"");
  CHECK(Quote(std::string("\x01\x1f\x7f", 3)) == "\"\\u0001\\u001f\\u007f\"");
  CHECK(Quote(std::string("nul\0x", 5)) == "\"nul\\u0000x\"");
  CHECK(Quote("\xc3\xa9t\xc3\xa9") == "\"\xc3\xa9t\xc3\xa9\"");            // été
  CHECK(Quote("\xe2\x82\xac") == "\"\xe2\x82\xac\"");                      // €
  CHECK(Quote("\xf0\x9f\x98\x80") == "\"\xf0\x9f\x98\x80\"");              // emoji
  CHECK(Quote("\xff") == "\"\\ufffd\"");                                   // invalid byte
  CHECK(Quote("a\xc3") == "\"a\\ufffd\"");                                 // truncated
  CHECK(Quote("\xc0\xaf") == "\"\\ufffd\\ufffd\"");                        // overlong
  CHECK(Quote("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");             // surrogate
  CHECK(Quote("\xf4\x90\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // > U+10FFFF
  CHECK(Quote("\xe2\x82x") == "\"\\ufffd\\ufffdx\"");
}
