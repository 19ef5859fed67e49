// views/ome_meta.h: OME-Zarr axes and attributes.ome. (The attributes are
// validated against the official schemas by tests/integration/fuse_ome_zarr.sh.)
#include "ome_meta.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "json_check.h"

namespace b2ndfs::views {
namespace {

using format::testing::ParseJson;
using format::testing::Value;

std::string Types(const std::vector<OmeAxis>& axes) {
  std::string out;
  for (const OmeAxis& a : axes) out += (out.empty() ? "" : ",") + a.name + ":" + a.type;
  return out;
}

TEST_CASE("axes: default names, types from names and units, the order OME-Zarr requires") {
  CHECK(Types(*OmeAxesOf(2, {}, {})) == "y:space,x:space");
  CHECK(Types(*OmeAxesOf(3, {}, {})) == "z:space,y:space,x:space");
  CHECK(Types(*OmeAxesOf(4, {}, {})) == "c:channel,z:space,y:space,x:space");
  CHECK(Types(*OmeAxesOf(5, {}, {})) == "t:time,c:channel,z:space,y:space,x:space");
  CHECK(Types(*OmeAxesOf(3, {"Time", "Y", "X"}, {})) == "Time:time,Y:space,X:space");
  CHECK(Types(*OmeAxesOf(3, {"time", "lat", "lon"}, {})) == "time:time,lat:space,lon:space");
  // A name that is no known axis: space with a length unit, else custom.
  auto lat = OmeAxesOf(3, {"band", "north", "east"}, {"", "km", "km"});
  REQUIRE(lat.ok());
  CHECK(Types(*lat) == "band:,north:space,east:space");
  CHECK((*lat)[1].unit == "kilometer");
  CHECK((*lat)[0].unit.empty());
  auto um = OmeAxesOf(3, {"z", "y", "x"}, {"um"});
  REQUIRE(um.ok());
  for (const OmeAxis& a : *um) CHECK(a.unit == "micrometer");
  CHECK(OmeAxesOf(2, {"y", "x"}, {"parsecs-ish", "micrometer"})->at(0).unit.empty());
  CHECK(OmeAxesOf(2, {"y", "x"}, {"parsecs-ish", "micrometer"})->at(1).unit == "micrometer");
  // Refused, with a reason.
  for (const auto& [ndim, names] : std::vector<
           std::pair<int, std::vector<std::string>>>{{1, {}},
                                                     {6, {}},
                                                     {3, {"y", "x", "c"}},  // channel after space
                                                     {3, {"y", "t", "x"}},  // time after space
                                                     {3, {"c", "t", "x"}},  // time after channel
                                                     {3,
                                                      {"a", "b",
                                                       "x"}},  // two custom axes, one space axis
                                                     {2, {"x", "x"}},  // the same name twice
                                                     {4,
                                                      {"z", "y", "x",
                                                       "w"}}})  // four space-or-custom after space
  {
    INFO(ndim);
    auto r = OmeAxesOf(ndim, names, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().error_number() == EINVAL);
    CHECK_FALSE(r.status().message().empty());
  }
}

OmeImage Image(bool stride) {
  OmeImage image;
  image.name = "vol.b2nd";
  image.axes = *OmeAxesOf(4, {"c", "z", "y", "x"}, {"", "um", "um", "um"});
  image.spacing = {1, 2.5, 0.5, 0.5};
  image.origin = {0, 10, 0, -1};
  image.levels = 3;
  image.stride = stride;
  return image;
}

TEST_CASE("attributes: datasets with scale and translation per level, omero windows") {
  const OmeImage image = Image(false);
  const std::string text = OmeAttributes(image, 2, {{1, 9, 0, 10}, {0.25, 0.5, -1, 3}});
  auto doc = ParseJson(text);
  REQUIRE(doc);
  const Value& ome = (*doc)["ome"];
  CHECK(ome["version"].text == "0.5");
  const Value& ms = ome["multiscales"].items.at(0);
  CHECK(ms["type"].text == "mean");
  REQUIRE(ms["axes"].items.size() == 4);
  CHECK(ms["axes"].items[1]["unit"].text == "micrometer");
  CHECK_FALSE(ms["axes"].items[0].Has("unit"));
  const auto& datasets = ms["datasets"].items;
  REQUIRE(datasets.size() == 3);
  for (int k = 0; k < 3; ++k) {
    const Value& d = datasets[static_cast<size_t>(k)];
    CHECK(d["path"].text == std::to_string(k));
    const auto& t = d["coordinateTransformations"].items;
    REQUIRE(t.size() == 2);
    CHECK(t[0]["type"].text == "scale");
    CHECK(t[1]["type"].text == "translation");
    const double f = std::ldexp(1.0, k);
    const std::vector<double> scale{1, 2.5 * f, 0.5 * f, 0.5 * f};
    const std::vector<double> shift{0, 10 + 2.5 * (f - 1) / 2, 0.5 * (f - 1) / 2,
                                    -1 + 0.5 * (f - 1) / 2};
    for (size_t i = 0; i < 4; ++i) {
      CHECK(std::stod(t[0]["scale"].items[i].number) == scale[i]);
      CHECK(std::stod(t[1]["translation"].items[i].number) == shift[i]);
    }
  }
  const auto& channels = ome["omero"]["channels"].items;
  REQUIRE(channels.size() == 2);
  CHECK(std::stod(channels[1]["window"]["start"].number) == 0.25);
  CHECK(std::stod(channels[1]["window"]["min"].number) == -1);
  CHECK(std::stod(channels[0]["window"]["max"].number) == 10);
  // Windows do not change the size (stat knows it before they are computed).
  CHECK(OmeAttributes(image, 2, {}).size() == text.size());
  CHECK(OmeAttributes(image, 2, {{-1.2345678901234567e-300, 1e300, -5e-324, 3}, {}}).size() ==
        text.size());
}

TEST_CASE(
    "attributes: labels are nearest without the half-voxel shift; no omero without channels") {
  const std::string text = OmeAttributes(Image(true), 0, {});
  auto doc = ParseJson(text);
  REQUIRE(doc);
  const Value& ms = (*doc)["ome"]["multiscales"].items.at(0);
  CHECK(ms["type"].text == "nearest");
  const Value& t = ms["datasets"].items[2]["coordinateTransformations"].items[1];
  CHECK(std::stod(t["translation"].items[1].number) == 10);
  CHECK_FALSE((*doc)["ome"].Has("omero"));
}

TEST_CASE("windows: the previews' percentiles of the finite values, and their extremes") {
  std::vector<double> v;
  for (int i = 0; i <= 200; ++i) v.push_back(i);
  v.push_back(NAN);
  v.push_back(INFINITY);
  const OmeWindow w = WindowOf(&v);
  CHECK(w.min == 0);
  CHECK(w.max == 200);
  CHECK(w.start == Approx(1.0));  // numpy.percentile(range(201), 0.5)
  CHECK(w.end == Approx(199.0));
  std::vector<double> none{NAN};
  CHECK(WindowOf(&none).max == 0);
}

}  // namespace
}  // namespace b2ndfs::views
