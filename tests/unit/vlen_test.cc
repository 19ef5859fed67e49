// Unit tests of format/vlen (python-blosc2's tags, batch merging, proxy
// bitmaps) and of the credentials meta.json never shows (meta_json.h).
#include "b2ndfs/format/vlen.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <msgpack.hpp>
#include <string>
#include <vector>

#include "b2ndfs/format/expression.h"
#include "b2ndfs/format/meta_json.h"
#include "json_check.h"

namespace {

using b2ndfs::format::ContentKind;
using b2ndfs::format::DecodeContentTag;
using b2ndfs::format::FetchedChunks;
using b2ndfs::format::MergeArrowStreams;
using b2ndfs::format::MergeMsgpackBlocks;
using b2ndfs::format::MsgpackToJson;
using b2ndfs::format::NamedBytes;
using b2ndfs::format::testing::Bytes;
using b2ndfs::format::testing::Pack;

Bytes Map(const std::vector<std::pair<std::string, std::string>>& entries) {
  return Pack([&](auto& p) {
    p.pack_map(static_cast<uint32_t>(entries.size()));
    for (const auto& [k, v] : entries) {
      p.pack(k);
      p.pack(v);
    }
  });
}

Bytes Concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& b : parts) out.insert(out.end(), b.begin(), b.end());
  return out;
}

Bytes ToBytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

TEST_CASE("DecodeContentTag tells the kinds apart") {
  auto tag = [](std::vector<NamedBytes> layers) { return DecodeContentTag(layers); };
  CHECK(tag({})->kind == ContentKind::kArray);
  CHECK(tag({{"vlarray", Map({{"serializer", "msgpack"}})}})->kind == ContentKind::kObjects);
  CHECK(tag({{"listarray", Map({{"storage", "vl"}})}})->kind == ContentKind::kObjects);
  auto batches = tag({{"listarray", Map({})}, {"batcharray", Map({{"serializer", "arrow"}})}});
  REQUIRE(batches.ok());
  CHECK(batches->kind == ContentKind::kBatches);
  CHECK(batches->serializer == "arrow");
  // The default serializer (batch_array.py's _BATCHARRAY_META).
  CHECK(tag({{"batcharray", Map({})}})->serializer == "msgpack");
  auto lazy = tag({{"b2nd", {}}, {"b2o", Map({{"kind", "lazyexpr"}})}});
  REQUIRE(lazy.ok());
  CHECK(lazy->kind == ContentKind::kCarrier);
  CHECK(lazy->carrier_kind == "lazyexpr");
  CHECK(lazy->recipe_vlmeta == "b2o");
  auto legacy = tag({{"LazyArray", Pack([](auto& p) { p.pack(0); })}});
  CHECK(legacy->kind == ContentKind::kCarrier);
  CHECK(legacy->recipe_vlmeta == "_LazyArray");
  auto remote = tag({{"b2o", Map({{"kind", "remote_proxy"}})}});
  CHECK(remote->kind == ContentKind::kArray);
  CHECK(remote->proxy);
  CHECK(tag({{"proxy-source", Map({})}})->proxy);
}

TEST_CASE("DecodeContentTag refuses tags python-blosc2 does not write") {
  auto error = [](std::vector<NamedBytes> layers) {
    auto r = DecodeContentTag(layers);
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK_THAT(error({{"batcharray", Map({{"serializer", "pickle"}})}}), Catch::Contains("pickle"));
  Bytes truncated = Map({{"serializer", "msgpack"}});
  truncated.pop_back();
  CHECK_THAT(error({{"batcharray", truncated}}), Catch::Contains("truncated"));
  CHECK_THAT(error({{"vlarray", Pack([](auto& p) { p.pack(1); })}}), Catch::Contains("not a map"));
  CHECK_THAT(error({{"b2o", Map({{"version", "1"}})}}), Catch::Contains("kind"));
  // A huge declared count in a few bytes.
  CHECK_THAT(error({{"vlarray", Bytes{0xdf, 0xff, 0xff, 0xff, 0xff}}}),
             Catch::Contains("larger than"));
}

TEST_CASE("MergeMsgpackBlocks joins a batch's blocks into one list") {
  const Bytes a = Pack([](auto& p) {
    p.pack_array(2);
    p.pack("a");
    p.pack(1);
  });
  const Bytes b = Pack([](auto& p) {
    p.pack_array(1);
    p.pack_nil();
  });
  const Bytes whole = Pack([](auto& p) {
    p.pack_array(3);
    p.pack("a");
    p.pack(1);
    p.pack_nil();
  });
  auto one = MergeMsgpackBlocks(a);
  REQUIRE(one.ok());
  CHECK(ToBytes(*one) == a);  // one block: the bytes as stored
  auto merged = MergeMsgpackBlocks(Concat({a, b}));
  REQUIRE(merged.ok());
  CHECK(ToBytes(*merged) == whole);
  // 20 items: the header grows to array16, as msgpack writes it.
  Bytes blocks;
  Bytes all = {0xdc, 0x00, 20};
  for (int i = 0; i < 10; ++i) {
    const Bytes block = {0x92, static_cast<uint8_t>(2 * i), static_cast<uint8_t>(2 * i + 1)};
    blocks.insert(blocks.end(), block.begin(), block.end());
    all.push_back(static_cast<uint8_t>(2 * i));
    all.push_back(static_cast<uint8_t>(2 * i + 1));
  }
  CHECK(ToBytes(*MergeMsgpackBlocks(blocks)) == all);
}

TEST_CASE("MergeMsgpackBlocks refuses what is not a batch") {
  auto error = [](const Bytes& b) {
    auto r = MergeMsgpackBlocks(b);
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK_THAT(error(Pack([](auto& p) { p.pack(7); })), Catch::Contains("not an array"));
  CHECK_THAT(error({0x92, 0x01}), Catch::Contains("truncated"));
  CHECK_THAT(error({0xdd, 0xff, 0xff, 0xff, 0xf0, 0xc0}), Catch::Contains("larger than"));
  CHECK_THAT(error({}), Catch::Contains("no blocks"));
}

// An IPC message with a flatbuffer Message table (header_type, bodyLength).
Bytes Message(uint8_t type, int64_t body) {
  Bytes fb(32, 0);
  const uint32_t root = 16;
  std::memcpy(fb.data(), &root, 4);
  const uint16_t vtable[6] = {12, 16, 4, 6, 0, 8};
  std::memcpy(fb.data() + 4, vtable, sizeof vtable);
  const int32_t soffset = 12;
  std::memcpy(fb.data() + 16, &soffset, 4);
  fb[22] = type;
  std::memcpy(fb.data() + 24, &body, 8);
  Bytes out = {0xff, 0xff, 0xff, 0xff, 32, 0, 0, 0};
  out.insert(out.end(), fb.begin(), fb.end());
  for (int64_t i = 0; i < body; ++i) out.push_back(static_cast<uint8_t>(type * 16 + i));
  return out;
}
const Bytes kEos = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};

TEST_CASE("MergeArrowStreams makes one IPC stream of a batch's blocks") {
  const Bytes schema = Message(1, 0);
  const Bytes block0 = Concat({schema, Message(3, 8), kEos});
  const Bytes block1 = Concat({schema, Message(2, 4), Message(3, 16), kEos});
  CHECK(ToBytes(*MergeArrowStreams(block0)) == block0);
  auto merged = MergeArrowStreams(Concat({block0, block1}));
  REQUIRE(merged.ok());
  CHECK(ToBytes(*merged) == Concat({schema, Message(3, 8), Message(2, 4), Message(3, 16), kEos}));
  // Pre-0.15 framing (no continuation marker) is read too.
  const Bytes framed = Message(1, 0);
  const Bytes legacy(framed.begin() + 4, framed.end());
  const Bytes legacy_block = Concat({legacy, Bytes{0, 0, 0, 0}});
  CHECK(ToBytes(*MergeArrowStreams(legacy_block)) == legacy_block);
}

TEST_CASE("MergeArrowStreams refuses broken streams") {
  const Bytes schema = Message(1, 0);
  auto error = [](const Bytes& b) {
    auto r = MergeArrowStreams(b);
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK_THAT(error(Concat({Message(3, 8), kEos})), Catch::Contains("no schema"));
  CHECK_THAT(error(Concat({schema, Message(3, 8)})), Catch::Contains("no end"));
  Bytes cut = Concat({schema, Message(3, 8), kEos});
  cut.resize(cut.size() - 12);
  CHECK_THAT(error(cut), Catch::Contains("truncated"));
  Bytes other = Message(1, 0);
  other[8 + 20] = 3;  // another version field: another schema
  CHECK_THAT(error(Concat({schema, kEos, other, kEos})), Catch::Contains("differs"));
  Bytes huge = Concat({schema, Message(3, 8), kEos});
  const int64_t body = int64_t{1} << 60;
  std::memcpy(huge.data() + 40 + 8 + 24, &body, 8);
  CHECK_THAT(error(huge), Catch::Contains("truncated"));
  Bytes bad_table = Concat({schema, kEos});
  const uint32_t root = 1000;
  std::memcpy(bad_table.data() + 8, &root, 4);
  CHECK_THAT(error(bad_table), Catch::Contains("flatbuffer"));
}

TEST_CASE("FetchedChunks reads proxy.py's bitmap") {
  const Bytes bitmap = {0x05, 0x01};
  auto present = FetchedChunks(bitmap, 9, 1);
  REQUIRE(present.ok());
  CHECK(*present == std::vector<bool>{true, false, true, false, false, false, false, false, true});
  // Two blocks per chunk: a chunk is there when both are.
  auto blocks = FetchedChunks(Bytes{0x0b}, 3, 2);  // bits 0, 1, 3
  REQUIRE(blocks.ok());
  CHECK(*blocks == std::vector<bool>{true, false, false});
  CHECK_FALSE(FetchedChunks(bitmap, 20, 1).ok());
  CHECK_FALSE(FetchedChunks(bitmap, 9, 0).ok());
  CHECK_FALSE(FetchedChunks(bitmap, int64_t{1} << 62, 4).ok());
}

TEST_CASE("Credentials are never rendered") {
  // proxy.py's proxy-source: urlpath = (path, urlbase, auth_token).
  const Bytes source = Pack([](auto& p) {
    p.pack_map(3);
    p.pack("local_abspath");
    p.pack_nil();
    p.pack("urlpath");
    p.pack_array(3);
    p.pack("ds.b2nd");
    p.pack("https://h/");
    p.pack("TOKEN123");
    p.pack("caterva2_env");
    p.pack(false);
  });
  const std::string json = *MsgpackToJson(source);
  CHECK(json.find("TOKEN123") == std::string::npos);
  CHECK(json == R"j({"local_abspath":null,"urlpath":["ds.b2nd","https://h/","(redacted)"],)j"
                R"("caterva2_env":false})");
  // Anywhere, under python-blosc2's names for them.
  const Bytes nested = Pack([](auto& p) {
    p.pack_map(1);
    p.pack("ops");
    p.pack_array(1);
    p.pack_map(2);
    p.pack("auth_token");
    p.pack("T1");
    p.pack("auth_cookie");
    p.pack("C1");
  });
  const std::string want = R"j({"ops":[{"auth_token":"(redacted)","auth_cookie":"(redacted)"}]})j";
  CHECK(*MsgpackToJson(nested) == want);
  // A urlpath triple outside a proxy-source map is data.
  const Bytes plain = Pack([](auto& p) {
    p.pack_map(1);
    p.pack("urlpath");
    p.pack_array(3);
    p.pack("a");
    p.pack("b");
    p.pack("c");
  });
  CHECK(*MsgpackToJson(plain) == R"({"urlpath":["a","b","c"]})");
}

}  // namespace

namespace {

using b2ndfs::format::CheckElementwiseExpression;
using b2ndfs::format::RecipeExpressionOf;

TEST_CASE("elementwise expressions are in the grammar") {
  const std::vector<std::string> ops = {"a", "b", "o0"};
  auto ok = [&](const std::string& e) {
    auto r = CheckElementwiseExpression(e, ops);
    INFO(e << ": " << (r.ok() ? "" : r.status().message()));
    REQUIRE(r.ok());
    return r->operands;
  };
  CHECK(ok("a + b") == std::vector<std::string>{"a", "b"});
  CHECK(ok("b * 2 - a ** 2 / 1.5e-3") == std::vector<std::string>{"b", "a"});
  CHECK(ok("sin(a) + b") == std::vector<std::string>{"a", "b"});
  CHECK(ok("where(a > 0, a, -a)") == std::vector<std::string>{"a"});
  CHECK(ok("(a < 1) & (b >= 2) | ~(o0 != 3)").size() == 3);
  CHECK(ok("arctan2(a, b) // 2 % 3").size() == 2);
  CHECK(ok(" -  -a ").size() == 1);
  CHECK(ok("1 + .5 + 3. + True").empty());
}

TEST_CASE("what is not elementwise is refused, saying where") {
  const std::vector<std::string> ops = {"a", "b"};
  auto error = [&](const std::string& e) {
    auto r = CheckElementwiseExpression(e, ops);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().error_number() == EINVAL);
    return r.status().message();
  };
  CHECK_THAT(error("a - sum(a)"), Catch::Contains("at 4: 'sum' is not one of"));
  CHECK_THAT(error("a + c"), Catch::Contains("'c' is not an operand"));
  CHECK_THAT(error("a[0] + b"), Catch::Contains("indexing"));
  CHECK_THAT(error("a.T"), Catch::Contains("attributes"));
  CHECK_THAT(error("a +"), Catch::Contains("ends early"));
  CHECK_THAT(error("a + 'x'"), Catch::Contains("unexpected '''"));
  CHECK_THAT(error("sin(a, b)"), Catch::Contains("takes 1 argument"));
  CHECK_THAT(error("__import__('os')"), Catch::Contains("not one of"));
  CHECK_THAT(error("lambda: a"), Catch::Contains("not an operand"));
  CHECK_THAT(error(""), Catch::Contains("ends early"));
  CHECK_THAT(error("1e"), Catch::Contains("exponent"));
  CHECK_THAT(error(std::string(100, '(') + "a" + std::string(100, ')')),
             Catch::Contains("deeper than 64"));
  std::string many = "a";
  for (int i = 0; i < 1100; ++i) many += "+a";
  CHECK_THAT(error(many), Catch::Contains("more than 1024"));
  CHECK_THAT(error(std::string(5000, 'a')), Catch::Contains("longer than 4096"));
}

TEST_CASE("RecipeExpressionOf reads b2o and _LazyArray recipes") {
  const Bytes b2o = Pack([](auto& p) {
    p.pack_map(3);
    p.pack("kind");
    p.pack("lazyexpr");
    p.pack("expression");
    p.pack("o0 + o1");
    p.pack("operands");
    p.pack_map(2);
    p.pack("o0");
    p.pack_map(0);
    p.pack("o1");
    p.pack_map(0);
  });
  auto r = RecipeExpressionOf(b2o);
  REQUIRE(r.ok());
  REQUIRE(r->has_value());
  CHECK((*r)->expression == "o0 + o1");
  CHECK((*r)->operands == std::vector<std::string>{"o0", "o1"});
  const Bytes c2array = Map({{"kind", "c2array"}, {"path", "x"}});
  auto none = RecipeExpressionOf(c2array);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  CHECK_FALSE(RecipeExpressionOf(Pack([](auto& p) { p.pack(1); })).ok());
}

}  // namespace
