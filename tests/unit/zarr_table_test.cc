// The pure parts of tables and coordinates in the Zarr v2 groups
// (src/views/zarr_table.h): which members share a table's row dimension
// and how it is named, .zattrs with given dimension names, and the
// coordinate variables of voxel geometry (which axes get one, their
// metadata and their float64 bytes).
#include "zarr_table.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

namespace b2ndfs::views {
namespace {

using Dims = std::vector<std::string>;

TEST_CASE("a store group whose 1-D leaves have one length is a table", "[zarr_table]") {
  const std::vector<TableMember> members = {
      {"active", {50}}, {"id", {50}}, {"name", {50}}, {"pos", {50, 3}}, {"img", {4, 5}}};
  const TablePlan plan = PlanTable(members, TableKind::kStoreGroup, -1);
  CHECK(plan.row_dim == "row");
  CHECK(plan.rows == 50);
  REQUIRE(plan.dims.size() == 5);
  CHECK(plan.dims[0] == Dims{"row"});
  CHECK(plan.dims[1] == Dims{"row"});
  CHECK(plan.dims[2] == Dims{"row"});
  CHECK(plan.dims[3] == Dims{"row", "pos_dim_1"});
  CHECK(plan.dims[4].empty());  // its first axis is not the rows
}

TEST_CASE("a store group is no table without two 1-D leaves of one length", "[zarr_table]") {
  for (const auto& members : std::vector<std::vector<TableMember>>{
           {{"a", {50}}, {"b", {49}}},
           {{"a", {50}}, {"b", {50, 2}}},
           {{"a", {50}}},
           {{"a", {50}, true}, {"b", {50}}},
       }) {
    const TablePlan plan = PlanTable(members, TableKind::kStoreGroup, -1);
    CHECK(plan.row_dim.empty());
    for (const auto& d : plan.dims) CHECK(d.empty());
  }
  // A plain directory never is.
  const TablePlan plain = PlanTable({{"a", {5}}, {"b", {5}}}, TableKind::kNone, -1);
  CHECK(plain.row_dim.empty());
}

TEST_CASE("a CTable's columns of its rows share the row dimension", "[zarr_table]") {
  const std::vector<TableMember> members = {{"_valid_rows", {12}}, {"m", {12, 3}},
                                            {"txt", {13}},         {"x", {12}},
                                            {"named", {12}, true}, {"row", {12}}};
  const TablePlan plan = PlanTable(members, TableKind::kCTable, 12);
  CHECK(plan.row_dim == "_row");  // a column is called "row"
  CHECK(plan.dims[0] == Dims{"_row"});
  CHECK(plan.dims[1] == Dims{"_row", "m_dim_1"});
  CHECK(plan.dims[2].empty());  // a UTF-8 column's offsets: rows + 1
  CHECK(plan.dims[3] == Dims{"_row"});
  CHECK(plan.dims[4].empty());  // names its own axes
  CHECK(plan.dims[5] == Dims{"_row"});
  // One column alone is still the table's.
  CHECK(PlanTable({{"x", {7}}}, TableKind::kCTable, 7).dims[0] == Dims{"row"});
  CHECK(PlanTable({{"x", {7}}}, TableKind::kCTable, 8).row_dim.empty());
}

TEST_CASE("row dimension names avoid the members'", "[zarr_table]") {
  CHECK(RowDimName({{"a", {1}}}) == "row");
  CHECK(RowDimName({{"row", {1}}, {"_row", {1}}}) == "__row");
}

TEST_CASE(".zattrs with given dimension names", "[zarr_table]") {
  ZattrsPlan p = PlanZattrsDims("{\"units\": \"K\"}", {"row", "m_dim_1"});
  CHECK(p.prefix + std::string("{\"units\": \"K\"}").substr(p.skip) ==
        "{\"_ARRAY_DIMENSIONS\": [\"row\", \"m_dim_1\"], \"units\": \"K\"}");
  p = PlanZattrsDims("{}", {"row"});
  CHECK(p.prefix + std::string("{}").substr(p.skip) == "{\"_ARRAY_DIMENSIONS\": [\"row\"]}");
  // The vlmeta names the axes already: unchanged.
  p = PlanZattrsDims("{\"_ARRAY_DIMENSIONS\": [\"t\"]}", {"row"});
  CHECK(p.prefix.empty());
  CHECK(p.skip == 0);
}

TEST_CASE("coordinates of named axes with spacing or origin", "[zarr_table]") {
  const std::vector<Coordinate> c = PlanCoordinates({5, 6, 17}, {"z", "y", "x"}, {3.0, 2.0, 0.5},
                                                    {30, 20.5, -10}, {"mm", "mm", "mm"}, {"geo"});
  REQUIRE(c.size() == 3);
  CHECK(c[0].name == "z");
  CHECK(c[0].n == 5);
  CHECK(c[0].origin == 30);
  CHECK(c[0].spacing == 3.0);
  CHECK(c[2].name == "x");
  CHECK(c[2].n == 17);
  CHECK(c[2].origin == -10);
  CHECK(c[2].units == "mm");
  // Origin alone: spacing 1; no units.
  const auto o = PlanCoordinates({4}, {"t"}, {}, {100}, {}, {});
  REQUIRE(o.size() == 1);
  CHECK(o[0].spacing == 1);
  CHECK(o[0].units.empty());
}

TEST_CASE("axes without a usable name or geometry get no coordinate", "[zarr_table]") {
  CHECK(PlanCoordinates({4, 5}, {"a", "b"}, {}, {}, {"mm"}, {}).empty());  // no geometry
  CHECK(PlanCoordinates({4, 5}, {}, {1, 2}, {}, {}, {}).empty());          // unnamed
  CHECK(PlanCoordinates({4, 5}, {"a", "b"}, {1}, {}, {}, {}).empty());     // wrong length
  const auto c =
      PlanCoordinates({4, 5, 6, 7, 8}, {"a", "a", "0x", ".z", "v"}, {1, 1, 1, 1, 1}, {}, {}, {"v"});
  CHECK(c.empty());  // repeated, a digit first, a dot first, taken
  const auto d = PlanCoordinates({4, 5}, {"a", "b/c"}, {1, 2}, {}, {}, {});
  REQUIRE(d.size() == 1);
  CHECK(d[0].name == "a");
}

TEST_CASE("a coordinate's metadata and bytes", "[zarr_table]") {
  Coordinate c{"x", 17, -10, 0.5, "mm"};
  const std::string zarray = CoordinateZarray(c);
  CHECK(zarray.find("\"dtype\": \"<f8\"") != std::string::npos);
  CHECK(zarray.find("\"shape\": [17]") != std::string::npos);
  CHECK(zarray.find("\"chunks\": [17]") != std::string::npos);
  CHECK(CoordinateZattrs(c) == "{\"_ARRAY_DIMENSIONS\": [\"x\"], \"units\": \"mm\"}");
  CHECK(CoordinateZattrs(Coordinate{"t", 3}) == "{\"_ARRAY_DIMENSIONS\": [\"t\"]}");
  CHECK(CoordinateZarray(Coordinate{"e", 0}).find("\"chunks\": [1]") != std::string::npos);

  std::vector<uint8_t> all(17 * 8);
  REQUIRE(CoordinateBytes(c, 0, all.size() + 5, all.data()) == all.size());
  for (int i = 0; i < 17; ++i) {
    double v;
    std::memcpy(&v, all.data() + i * 8, 8);
    CHECK(v == -10 + i * 0.5);
  }
  // Reads at any offset, across items, and past the end.
  std::vector<uint8_t> part(13);
  REQUIRE(CoordinateBytes(c, 5, part.size(), part.data()) == 13);
  CHECK(std::memcmp(part.data(), all.data() + 5, 13) == 0);
  CHECK(CoordinateBytes(c, 17 * 8, 4, part.data()) == 0);
  CHECK(CoordinateBytes(c, 17 * 8 - 3, 8, part.data()) == 3);
}

}  // namespace
}  // namespace b2ndfs::views
