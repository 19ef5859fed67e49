// The EmbedStore key map decoder (format/embed_map.h): the map python-blosc2
// writes (embed_store.py, EmbedStore._save_metadata) decoded, and malformed
// maps refused or their bad entries marked.
#include "b2ndfs/format/embed_map.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using b2ndfs::format::DecodeEmbedMap;

namespace {

struct Pack {
  std::vector<uint8_t> out;
  Pack& Str(const std::string& s) {
    out.push_back(static_cast<uint8_t>(0xa0 | s.size()));
    out.insert(out.end(), s.begin(), s.end());
    return *this;
  }
  Pack& Map(int n) {
    out.push_back(static_cast<uint8_t>(0x80 | n));
    return *this;
  }
  Pack& Int(uint64_t v) {
    if (v < 128) {
      out.push_back(static_cast<uint8_t>(v));
    } else {
      out.push_back(0xcf);
      for (int i = 7; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
    return *this;
  }
  Pack& Neg() {
    out.push_back(0xff);  // -1
    return *this;
  }
};

}  // namespace

TEST_CASE("an embed map as python-blosc2 writes it") {
  Pack p;
  p.Map(2).Str("embed_map").Map(2);
  p.Str("/a").Map(2).Str("offset").Int(0).Str("length").Int(300);
  p.Str("/dir/r").Map(2).Str("urlbase").Str("https://x/").Str("path").Str("@public/a.b2nd");
  p.Str("current_offset").Int(300);
  auto map = DecodeEmbedMap(p.out);
  REQUIRE(map.ok());
  REQUIRE(map->entries.size() == 2);
  CHECK(map->entries[0].key == "/a");
  CHECK(map->entries[0].offset == 0);
  CHECK(map->entries[0].length == 300);
  CHECK(map->entries[0].problem.empty());
  CHECK(map->entries[1].reference);
  CHECK(map->entries[1].urlbase == "https://x/");
  CHECK(map->entries[1].path == "@public/a.b2nd");
  CHECK(map->current_offset == 300);
}

TEST_CASE("bad entries are marked, the others kept") {
  Pack p;
  p.Map(1).Str("embed_map").Map(4);
  p.Str("/neg").Map(2).Str("offset").Neg().Str("length").Int(3);
  p.Str("/wrap").Map(2).Str("offset").Int(uint64_t{1} << 62).Str("length").Int(uint64_t{1} << 62);
  p.Str("/none").Map(0);
  p.Str("/ok").Map(2).Str("offset").Int(5).Str("length").Int(6);
  auto map = DecodeEmbedMap(p.out);
  REQUIRE(map.ok());
  REQUIRE(map->entries.size() == 4);
  CHECK_FALSE(map->entries[0].problem.empty());
  CHECK_FALSE(map->entries[1].problem.empty());
  CHECK_FALSE(map->entries[2].problem.empty());
  CHECK(map->entries[3].problem.empty());
  CHECK(map->current_offset == -1);
}

TEST_CASE("what is not an embed map is refused") {
  CHECK_FALSE(DecodeEmbedMap({}).ok());
  CHECK_FALSE(DecodeEmbedMap(Pack().Int(3).out).ok());                          // not a map
  CHECK_FALSE(DecodeEmbedMap(Pack().Map(1).Str("x").Int(1).out).ok());          // no embed_map
  CHECK_FALSE(DecodeEmbedMap(Pack().Map(1).Str("embed_map").Int(1).out).ok());  // not a map
  Pack trailing;
  trailing.Map(1).Str("embed_map").Map(0).Int(7);
  CHECK_FALSE(DecodeEmbedMap(trailing.out).ok());  // bytes after the map
  Pack key;
  key.Map(1).Str("embed_map").Map(1).Int(5).Map(0);
  CHECK_FALSE(DecodeEmbedMap(key.out).ok());  // a key that is not a string
  // A map claiming a billion entries in a few bytes.
  std::vector<uint8_t> huge = Pack().Map(1).Str("embed_map").out;
  huge.insert(huge.end(), {0xdf, 0x3b, 0x9a, 0xca, 0x00});
  CHECK_FALSE(DecodeEmbedMap(huge).ok());
}
