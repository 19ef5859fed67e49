// Unit tests of format/meta_json's documents: meta.json of b2nd arrays (and
// of frames without one), hostile names and values, error documents, codec
// names, what a container needs; each checked with a small strict JSON parser.
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

#include "b2ndfs/format/meta_json.h"
#include "json_check.h"

namespace {

using b2ndfs::format::Base64Encode;
using b2ndfs::format::testing::Bytes;
using b2ndfs::format::testing::Pack;
using b2ndfs::format::testing::ParseJson;
using b2ndfs::format::testing::Value;

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
