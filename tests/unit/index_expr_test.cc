// Tests of the view/EXPR parser against NumPy's basic indexing. Expected
// index lists were checked by hand with NumPy 1.24 (e.g. np.arange(10)[8:2:-3]
// is [8, 5]); the 1-D cases compare the full list of selected indices.

#include "index_expr.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

namespace b2ndfs::views {
namespace {

using Ints = std::vector<int64_t>;

// The indices a 1-D expression selects from an axis of `length`.
Ints Indices1D(const std::string& expr, int64_t length) {
  auto slab = ParseIndexExpr(expr, {length});
  REQUIRE(slab.ok());
  REQUIRE(slab->axes.size() == 1);
  const AxisSelection& a = slab->axes[0];
  Ints out;
  for (int64_t k = 0; k < a.count; ++k) out.push_back(a.start + k * a.step);
  return out;
}

bool Fails(const std::string& expr, const Ints& shape) {
  auto slab = ParseIndexExpr(expr, shape);
  if (slab.ok()) return false;
  CHECK(slab.status().error_number() == ENOENT);
  CHECK(!slab.status().message().empty());
  return true;
}

TEST_CASE("slices clamp and count as NumPy's", "[index_expr]") {
  CHECK(Indices1D(":", 4) == Ints{0, 1, 2, 3});
  CHECK(Indices1D("::", 4) == Ints{0, 1, 2, 3});
  CHECK(Indices1D("-3:", 10) == Ints{7, 8, 9});
  CHECK(Indices1D("::-1", 5) == Ints{4, 3, 2, 1, 0});
  CHECK(Indices1D("8:2:-3", 10) == Ints{8, 5});
  CHECK(Indices1D("-100:100", 3) == Ints{0, 1, 2});
  CHECK(Indices1D("5:2", 10).empty());
  CHECK(Indices1D("::-4", 10) == Ints{9, 5, 1});
  CHECK(Indices1D("100:", 10).empty());
  CHECK(Indices1D("-100::-1", 10).empty());
  CHECK(Indices1D("3:-3:2", 10) == Ints{3, 5});
  CHECK(Indices1D("9:-11:-1", 10) == Ints{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  CHECK(Indices1D("1:2:", 10) == Ints{1});
  CHECK(Indices1D("+2:+4", 10) == Ints{2, 3});
  CHECK(Indices1D(":", 0).empty());
  CHECK(Indices1D("::-1", 0).empty());
}

TEST_CASE("bounds beyond int64 saturate as Python's slices do", "[index_expr]") {
  CHECK(Indices1D("0:99999999999999999999999", 10).size() == 10);
  CHECK(Indices1D("-99999999999999999999::-1", 10).empty());
  CHECK(Indices1D(":-99999999999999999999:-1", 4) == Ints{3, 2, 1, 0});
  CHECK(Indices1D("::99999999999999999999", 10) == Ints{0});
  CHECK(Indices1D("2::-99999999999999999999", 10) == Ints{2});
  CHECK(Indices1D("::-9223372036854775808", 10) == Ints{9});
}

TEST_CASE("empty and single selections are plain ranges", "[index_expr]") {
  auto slab = ParseIndexExpr("7:3,5::-9", {10, 10});
  REQUIRE(slab.ok());
  CHECK(slab->axes[0] == AxisSelection{0, 1, 0, false});
  CHECK(slab->axes[1] == AxisSelection{5, 1, 1, false});
  CHECK(slab->ResultShape() == Ints{0, 1});
  CHECK(slab->NumItems() == 0);
}

TEST_CASE("integers drop their axis, negatives count from the end", "[index_expr]") {
  auto slab = ParseIndexExpr("1,-1", {2, 3, 4});
  REQUIRE(slab.ok());
  REQUIRE(slab->axes.size() == 3);
  CHECK(slab->axes[0] == AxisSelection{1, 1, 1, true});
  CHECK(slab->axes[1] == AxisSelection{2, 1, 1, true});
  CHECK(slab->axes[2] == AxisSelection{0, 1, 4, false});  // missing trailing axis is ':'
  CHECK(slab->ResultShape() == Ints{4});
  CHECK(slab->NumItems() == 4);

  auto all = ParseIndexExpr("0,1,2", {2, 3, 4});
  REQUIRE(all.ok());
  CHECK(all->ResultShape().empty());
  CHECK(all->NumItems() == 1);
  CHECK(ParseIndexExpr("+1", {2}).ok());
  CHECK(ParseIndexExpr("007", {8}).ok());
}

TEST_CASE("out-of-range integers are errors", "[index_expr]") {
  CHECK(Fails("2", {2, 3}));
  CHECK(Fails("-3", {2, 3}));
  CHECK(Fails("0,3", {2, 3}));
  CHECK(Fails("0", {0}));
  CHECK(Fails("99999999999999999999", {5}));
  CHECK(Fails("-99999999999999999999", {5}));
  CHECK(ParseIndexExpr("-2", {2, 3}).ok());
}

TEST_CASE("ellipsis expands to the axes the other terms leave", "[index_expr]") {
  // b = np.zeros((2, 3, 4)): b[1, ..., 2].shape == (3,), b[..., 1].shape ==
  // (2, 3), b[...].shape == (2, 3, 4), b[0, 1, 2, ...].shape == ().
  auto shape_of = [](const std::string& expr) {
    auto slab = ParseIndexExpr(expr, {2, 3, 4});
    REQUIRE(slab.ok());
    CHECK(slab->axes.size() == 3);
    return slab->ResultShape();
  };
  CHECK(shape_of("1,...,2") == Ints{3});
  CHECK(shape_of("...,1") == Ints{2, 3});
  CHECK(shape_of("...") == Ints{2, 3, 4});
  CHECK(shape_of("0,1,2,...") == Ints{});
  CHECK(shape_of("...,::-2") == Ints{2, 3, 2});
  auto slab = ParseIndexExpr("...,-1", {2, 3, 4});
  REQUIRE(slab.ok());
  CHECK(slab->axes[2] == AxisSelection{3, 1, 1, true});
  CHECK(slab->axes[0] == AxisSelection{0, 1, 2, false});

  // A 0-D array: only `...` applies.
  auto scalar = ParseIndexExpr("...", {});
  REQUIRE(scalar.ok());
  CHECK(scalar->axes.empty());
  CHECK(scalar->NumItems() == 1);
  CHECK(Fails(":", {}));
  CHECK(Fails("0", {}));
}

TEST_CASE("a trailing comma is Python's one-element tuple", "[index_expr]") {
  // b[1,].shape == (3, 4)
  auto slab = ParseIndexExpr("1,", {2, 3, 4});
  REQUIRE(slab.ok());
  CHECK(slab->ResultShape() == Ints{3, 4});
  CHECK(Fails(",", {2}));
  CHECK(Fails("1,,", {2, 3}));
}

// What Python accepts between a subscript's tokens, as copied from code:
// a[3, 4], a[ 1 : 5 , ... ], a[- 1], a[1, ].
TEST_CASE("spaces are accepted where Python accepts them", "[index_expr]") {
  const Ints shape{5, 6, 7};
  auto same = [&](const std::string& spaced, const std::string& plain) {
    INFO("'" << spaced << "' against '" << plain << "'");
    auto a = ParseIndexExpr(spaced, shape);
    auto b = ParseIndexExpr(plain, shape);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->axes == b->axes);
  };
  same("3, 4", "3,4");
  same(" 1 : 5 , ...", "1:5,...");
  same("1 : 5 : 2 , ... , - 1", "1:5:2,...,-1");
  same(" 1", "1");
  same("1 ", "1");
  same("\t2\t,\t:\t", "2,:");
  same("- 1", "-1");
  same("+ 2", "2");
  same("1, ", "1,");
  same(":: -1, 2 :", "::-1,2:");
  same(" ... ", "...");
}

TEST_CASE("malformed expressions are ENOENT", "[index_expr]") {
  const Ints shape{5, 6, 7};
  CHECK(Fails("", shape));
  CHECK(Fails("0,0,0,0", shape));  // too many indices
  CHECK(Fails(":,:,:,:", shape));
  CHECK(Fails("...,0,0,0,0", shape));
  CHECK(Fails("::0", shape));  // step 0
  CHECK(Fails("1:2:0", shape));
  CHECK(Fails("...,...", shape));
  CHECK(Fails("0,...,1,...", shape));
  CHECK(Fails("1:2:3:4", shape));
  CHECK(Fails(",1", shape));
  CHECK(Fails("1,,2", shape));
  CHECK(Fails("a", shape));
  CHECK(Fails("1.5", shape));
  CHECK(Fails("..", shape));
  CHECK(Fails("....", shape));
  CHECK(Fails("-", shape));
  CHECK(Fails("1:-", shape));
  CHECK(Fails("--1", shape));
  CHECK(Fails("1 2", shape));  // spaces never inside a number
  CHECK(Fails(". ..", shape));
  CHECK(Fails("1 :2 3", shape));
  CHECK(Fails("- ", shape));
  CHECK(Fails("  ", shape));
  CHECK(Fails(" , ", shape));
  CHECK(Fails("None", shape));
  CHECK(Fails("[1]", shape));
  CHECK(Fails("0x1", shape));
  CHECK(Fails(std::string(256, '0'), shape));
  CHECK(ParseIndexExpr(std::string(255, '0'), shape).ok());
}

}  // namespace
}  // namespace b2ndfs::views
