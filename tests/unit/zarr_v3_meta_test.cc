// The Zarr v3 view's pure parts: descr -> v3 data type (raw for what v3 has no
// name for), the zarr.json text (sharded and not), dimension_names from
// "_ARRAY_DIMENSIONS", CRC-32C against its check value, the shard index bytes
// against a brute-force layout, and the key tree's preorder numbering against
// an enumeration of every node.
#include "zarr_v3_meta.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace b2ndfs::views {
namespace {

TEST_CASE("zarr v3 data types", "[zarr_v3]") {
  struct Case {
    const char* descr;
    int64_t itemsize;
    const char* data_type;
    const char* endian;
    const char* fill;
  };
  const Case cases[] = {
      {"'<f4'", 4, "float32", "little", "0.0"},
      {"'>f8'", 8, "float64", "big", "0.0"},
      {"'<f2'", 2, "float16", "little", "0.0"},
      {"'>i2'", 2, "int16", "big", "0"},
      {"'|i1'", 1, "int8", "", "0"},
      {"'|u1'", 1, "uint8", "", "0"},
      {"'<u8'", 8, "uint64", "little", "0"},
      {"'|b1'", 1, "bool", "", "false"},
      {"'<c8'", 8, "complex64", "little", "[0.0, 0.0]"},
      {"'>c16'", 16, "complex128", "big", "[0.0, 0.0]"},
  };
  for (const Case& c : cases) {
    INFO(c.descr);
    const ZarrV3Dtype d = ZarrV3DtypeOf(c.descr, c.itemsize);
    CHECK(d.data_type == c.data_type);
    CHECK(d.endian == c.endian);
    CHECK(d.fill_value == c.fill);
    CHECK(d.raw_reason.empty());
  }
}

TEST_CASE("zarr v3 raw items for what v3 cannot name", "[zarr_v3]") {
  struct Case {
    const char* descr;
    int64_t itemsize;
    const char* data_type;
  };
  const Case cases[] = {
      {"'|S4'", 5, "r40"},     {"'<U2'", 4, "r32"},  // lengths and item size disagree
      {"'<M8[ns]'", 8, "r64"}, {"[('a', '<i4'), ('b', '<f8')]", 12, "r96"},
      {"'|V3'", 3, "r24"},     {"'<f4'", 8, "r64"},  // descr and item size disagree
      {"'<f16'", 16, "r128"},  {"'<i3'", 3, "r24"},
      {"'<c4'", 4, "r32"},     {"'|b2'", 2, "r16"},
  };
  for (const Case& c : cases) {
    INFO(c.descr);
    const ZarrV3Dtype d = ZarrV3DtypeOf(c.descr, c.itemsize);
    CHECK(d.data_type == c.data_type);
    CHECK(d.endian.empty());
    CHECK(d.raw_reason.find(c.descr) != std::string::npos);
    std::string fill = "[";
    for (int64_t i = 0; i < c.itemsize; ++i) fill += i ? ", 0" : "0";
    CHECK(d.fill_value == fill + "]");
  }
}

TEST_CASE("zarr v3 fixed-length strings as zarr-python 3.1 writes them", "[zarr_v3]") {
  struct Case {
    const char* descr;
    int64_t itemsize;
    const char* name;
    const char* endian;
  };
  const Case cases[] = {
      {"'<U32'", 128, "fixed_length_utf32", "little"},    {"'>U2'", 8, "fixed_length_utf32", "big"},
      {"'<U1024'", 4096, "fixed_length_utf32", "little"}, {"'|S4'", 4, "null_terminated_bytes", ""},
      {"'|S1'", 1, "null_terminated_bytes", ""},
  };
  for (const Case& c : cases) {
    INFO(c.descr);
    const ZarrV3Dtype d = ZarrV3DtypeOf(c.descr, c.itemsize);
    CHECK(d.data_type == c.name);
    CHECK(d.length_bytes == c.itemsize);
    CHECK(d.endian == c.endian);
    CHECK(d.fill_value == "\"\"");
    CHECK(d.raw_reason.empty());
    CHECK(d.readers.find("zarr/") != std::string::npos);
    const std::string text = ZarrJsonHead(d, {3}, {3}, {}, "");
    CHECK(text.find("\"data_type\": {\"name\": \"" + std::string(c.name) +
                    "\", \"configuration\": {\"length_bytes\": " + std::to_string(c.itemsize) +
                    "}},\n") != std::string::npos);
    CHECK(text.find("\"fill_value\": \"\",") != std::string::npos);
  }
}

TEST_CASE("zarr v3 zarr.json, sharded", "[zarr_v3]") {
  const std::string text =
      ZarrJsonHead(ZarrV3DtypeOf("'>i2'", 2), {20, 16}, {10, 8}, {5, 4}, "[\"y\", \"x\"]") +
      "{\"a\": 1}" + ZarrJsonTail();
  CHECK(text ==
        "{\n"
        "  \"zarr_format\": 3,\n"
        "  \"node_type\": \"array\",\n"
        "  \"shape\": [20, 16],\n"
        "  \"data_type\": \"int16\",\n"
        "  \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [10, "
        "8]}},\n"
        "  \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": "
        "\"/\"}},\n"
        "  \"fill_value\": 0,\n"
        "  \"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [5, "
        "4], \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}], "
        "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
        "{\"name\": \"crc32c\"}], \"index_location\": \"end\"}}],\n"
        "  \"dimension_names\": [\"y\", \"x\"],\n"
        "  \"attributes\": {\"a\": 1}\n"
        "}\n");
}

TEST_CASE("zarr v3 zarr.json, unsharded and 0-D", "[zarr_v3]") {
  std::string text = ZarrJsonHead(ZarrV3DtypeOf("'|u1'", 1), {7}, {3}, {}, "") + "{}";
  CHECK(text.find("\"codecs\": [{\"name\": \"bytes\"}],\n  \"attributes\": {}") !=
        std::string::npos);
  CHECK(text.find("dimension_names") == std::string::npos);
  text = ZarrJsonHead(ZarrV3DtypeOf("'<f8'", 8), {}, {}, {}, "");
  CHECK(text.find("\"shape\": [],") != std::string::npos);
  CHECK(text.find("\"chunk_shape\": []") != std::string::npos);
}

TEST_CASE("zarr v3 dimension_names", "[zarr_v3]") {
  CHECK(DimensionNamesOf("[\"t\", \"y\", \"x\"]", 3) == "[\"t\", \"y\", \"x\"]");
  CHECK(DimensionNamesOf(" [\"a\\\"]\",null] ", 2) == "[\"a\\\"]\",null]");
  CHECK(DimensionNamesOf("[]", 0) == "[]");
  for (const char* bad : {"[\"t\", \"y\"]", "[\"t\", 3, \"x\"]", "{\"t\": 1}", "[\"t\", \"y\", ]",
                          "[\"t\" \"y\" \"x\"]", "[\"t\", \"y\", \"x\"] x", "[\"t\", \"y\", \"x",
                          "", "[[\"t\"], \"y\", \"x\"]"}) {
    INFO(bad);
    CHECK(DimensionNamesOf(bad, 3).empty());
  }
}

TEST_CASE("crc32c", "[zarr_v3]") {
  const std::string check = "123456789";
  const auto bytes =
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(check.data()), check.size());
  CHECK(Crc32c(bytes) == 0xE3069283u);  // the catalogued check value of CRC-32C
  CHECK(Crc32c(bytes.subspan(4), Crc32c(bytes.first(4))) == 0xE3069283u);
  CHECK(Crc32c({}) == 0);
  const std::vector<uint8_t> zeros(32, 0);
  CHECK(Crc32c(zeros) == 0x8A9136AAu);  // RFC 3720, B.4: 32 bytes of zeros
}

TEST_CASE("zarr v3 shard index bytes", "[zarr_v3]") {
  for (auto [count, inner] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {4, 64}, {6, 48}, {300, 4096}, {1 << 16, 3}}) {
    INFO(count << " x " << inner);
    auto index = MakeShardIndex(count, inner);
    REQUIRE(index);
    CHECK(index->data_bytes() == count * inner);
    CHECK(index->size() == count * inner + 16 * count + 4);
    std::vector<uint8_t> want;
    for (int64_t i = 0; i < count; ++i) {
      for (uint64_t v : {static_cast<uint64_t>(i * inner), static_cast<uint64_t>(inner)}) {
        for (int b = 0; b < 8; ++b) want.push_back(static_cast<uint8_t>(v >> (8 * b)));
      }
    }
    const uint32_t crc = Crc32c(want);
    CHECK(index->Crc() == crc);
    for (int b = 0; b < 4; ++b) want.push_back(static_cast<uint8_t>(crc >> (8 * b)));
    std::vector<uint8_t> got(want.size());
    index->Read(0, got);
    CHECK(got == want);
    std::mt19937_64 rng(count);
    for (int trial = 0; trial < 50; ++trial) {
      const size_t a = rng() % want.size(), b = rng() % want.size();
      const size_t begin = std::min(a, b), end = std::max(a, b) + 1;
      std::vector<uint8_t> part(end - begin);
      index->Read(static_cast<int64_t>(begin), part);
      CHECK(std::equal(part.begin(), part.end(), want.begin() + static_cast<ptrdiff_t>(begin)));
    }
  }
  CHECK_FALSE(MakeShardIndex(0, 4));
  CHECK_FALSE(MakeShardIndex(4, 0));
  CHECK_FALSE(MakeShardIndex(int64_t{1} << 40, int64_t{1} << 30));
  CHECK_FALSE(MakeShardIndex(INT64_MAX / 16, 1));
}

// Every node of the tree of `grid`, in preorder, as its path below c.
void Enumerate(const std::vector<int64_t>& grid, std::vector<int64_t>& path,
               std::vector<std::vector<int64_t>>& out) {
  out.push_back(path);
  if (path.size() == grid.size()) return;
  for (int64_t i = 0; i < grid[path.size()]; ++i) {
    path.push_back(i);
    Enumerate(grid, path, out);
    path.pop_back();
  }
}

TEST_CASE("zarr v3 key tree numbers its nodes in preorder", "[zarr_v3]") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> grid(1 + rng() % 4);
    for (auto& g : grid) g = 1 + static_cast<int64_t>(rng() % 5);
    INFO("trial " << trial);
    auto tree = MakeKeyTree(grid);
    REQUIRE(tree);
    std::vector<std::vector<int64_t>> nodes;
    std::vector<int64_t> path;
    Enumerate(grid, path, nodes);
    REQUIRE(tree->size() == nodes.size());
    for (size_t k = 0; k < nodes.size(); ++k) {
      CHECK(tree->Ordinal(nodes[k]) == k);
      CHECK(tree->Subtree(static_cast<int>(nodes[k].size())) > 0);
    }
  }
  CHECK_FALSE(MakeKeyTree({}));
  CHECK_FALSE(MakeKeyTree({3, 0}));
  CHECK_FALSE(MakeKeyTree({int64_t{1} << 40, int64_t{1} << 40}));
  auto flat = MakeKeyTree({1000});
  REQUIRE(flat);
  CHECK(flat->size() == 1001);
  CHECK(flat->Ordinal(std::vector<int64_t>{999}) == 1000);
}

}  // namespace
}  // namespace b2ndfs::views
