// The Zarr v2 view's pure parts: the descr -> dtype / fill value mapping and
// its refusals, the .zarray text, chunk keys, and finding "vlmeta" in
// meta.json text (strings holding braces, quotes and the key itself).
#include "zarr_meta.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>

namespace b2ndfs::views {
namespace {

TEST_CASE("zarr dtypes of simple descrs", "[zarr]") {
  struct Case {
    const char* descr;
    const char* dtype;
  };
  const Case cases[] = {
      {"'<f4'", "<f4"},         {"'>i2'", ">i2"},           {"'|u1'", "|u1"},   {"'<u8'", "<u8"},
      {"'|b1'", "|b1"},         {"'<c16'", "<c16"},         {"'|S10'", "|S10"}, {"'<U3'", "<U3"},
      {"'<M8[ns]'", "<M8[ns]"}, {"'>m8[25s]'", ">m8[25s]"},
  };
  for (const Case& c : cases) {
    INFO(c.descr);
    Result<ZarrDtype> d = ZarrDtypeOf(c.descr);
    REQUIRE(d.ok());
    CHECK(d->dtype == c.dtype);
  }
}

TEST_CASE("zarr refuses what v2 cannot describe", "[zarr]") {
  for (const char* descr : {"'|V8'", "[('a', '<i4'), ('b', '<f8')]", "'<M8'", "'<M8[]'", "'<f'",
                            "'<f0'", "'=f4'", "'<f4x'", "'<x4'", "''", "'<i4[ns]'"}) {
    INFO(descr);
    Result<ZarrDtype> d = ZarrDtypeOf(descr);
    REQUIRE_FALSE(d.ok());
    CHECK(d.status().error_number() == EINVAL);
    CHECK(d.status().message().find(descr) != std::string::npos);
  }
}

TEST_CASE("zarr .zarray text", "[zarr]") {
  const std::string text = MakeZarrArray({">i2"}, {10, 7}, {4, 3});
  CHECK(text ==
        "{\n"
        "  \"chunks\": [4, 3],\n"
        "  \"compressor\": null,\n"
        "  \"dimension_separator\": \".\",\n"
        "  \"dtype\": \">i2\",\n"
        "  \"fill_value\": null,\n"
        "  \"filters\": null,\n"
        "  \"order\": \"C\",\n"
        "  \"shape\": [10, 7],\n"
        "  \"zarr_format\": 2\n"
        "}\n");
  const std::string scalar = MakeZarrArray({"|b1"}, {}, {});
  CHECK(scalar.find("\"shape\": [],") != std::string::npos);
  CHECK(scalar.find("\"fill_value\": null,") != std::string::npos);
}

TEST_CASE("zarr chunk keys", "[zarr]") {
  CHECK(ZarrChunkKey({}) == "0");
  CHECK(ZarrChunkKey({7}) == "7");
  CHECK(ZarrChunkKey({0, 3, 12}) == "0.3.12");
}

TEST_CASE("FindJsonMember finds top-level values only", "[zarr]") {
  const std::string json =
      "{\n  \"a\": \"x\\\"}{ \\\"vlmeta\\\": 1\",\n  \"b\": [1, {\"vlmeta\": 2}],\n"
      "  \"vlmeta\": {\n    \"k\": \"}]\",\n    \"n\": [1, 2]\n  },\n  \"files\": {}\n}\n";
  auto range = FindJsonMember(json, "vlmeta");
  REQUIRE(range);
  CHECK(json.substr(range->first, range->second - range->first) ==
        "{\n    \"k\": \"}]\",\n    \"n\": [1, 2]\n  }");
  auto files = FindJsonMember(json, "files");
  REQUIRE(files);
  CHECK(json.substr(files->first, files->second - files->first) == "{}");
  auto scalar = FindJsonMember("{\"n\": 12, \"m\": null}", "m");
  REQUIRE(scalar);
  CHECK(scalar->second - scalar->first == 4);
  CHECK_FALSE(FindJsonMember(json, "k"));
  CHECK_FALSE(FindJsonMember(json, "vlmet"));
  CHECK_FALSE(FindJsonMember("[1]", "vlmeta"));
  CHECK_FALSE(FindJsonMember("{\"vlmeta\": {\"a\": 1", "vlmeta"));
  CHECK_FALSE(FindJsonMember("{\"x\": 1 \"vlmeta\": 2}", "vlmeta"));
}

TEST_CASE("zarr .zattrs adds xarray's dimension names to vlmeta", "[zarr]") {
  auto zattrs = [](const std::string& vlmeta, int ndim) {
    const ZattrsPlan plan = PlanZattrs(vlmeta, ndim);
    return plan.prefix + vlmeta.substr(plan.skip);
  };
  CHECK(zattrs("{}", 2) == "{\"_ARRAY_DIMENSIONS\": [\"dim_0\", \"dim_1\"]}");
  CHECK(zattrs("{ \n}", 0) == "{\"_ARRAY_DIMENSIONS\": [] \n}");
  CHECK(zattrs("{\"a\": {\"_ARRAY_DIMENSIONS\": 1}}", 1) ==
        "{\"_ARRAY_DIMENSIONS\": [\"dim_0\"], \"a\": {\"_ARRAY_DIMENSIONS\": 1}}");
  // A vlmetalayer of that name (an array that came from xarray) wins.
  const std::string own = "{\"b\": 2, \"_ARRAY_DIMENSIONS\": [\"y\", \"x\"]}";
  CHECK(zattrs(own, 2) == own);
}

TEST_CASE("a directory group's variables name their axes after themselves", "[zarr]") {
  // Distinct per variable, so that xarray does not take two containers'
  // unnamed axes of different lengths for one dimension.
  const ZattrsPlan plan = PlanZattrs("{\"a\": 1}", 2, "temp_");
  CHECK(plan.prefix + std::string("{\"a\": 1}").substr(plan.skip) ==
        "{\"_ARRAY_DIMENSIONS\": [\"temp_dim_0\", \"temp_dim_1\"], \"a\": 1}");
  // A name that JSON must escape stays valid JSON.
  CHECK(PlanZattrs("{}", 1, "a\"b\\").prefix == "{\"_ARRAY_DIMENSIONS\": [\"a\\\"b\\\\dim_0\"]");
}

}  // namespace
}  // namespace b2ndfs::views
