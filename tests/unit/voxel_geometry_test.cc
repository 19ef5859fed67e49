// format::DecodeVoxelGeometry: the vlmeta forms python-blosc2 writes (lists,
// packed tuples, single values for every axis), axis_names over
// _ARRAY_DIMENSIONS, and the values it ignores with a note saying why.
#include "b2ndfs/format/voxel_geometry.h"

#include <catch2/catch.hpp>
#include <msgpack.hpp>
#include <string>
#include <vector>

namespace b2ndfs::format {
namespace {

template <typename T>
NamedBytes Packed(const std::string& name, const T& value) {
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, value);
  return {name, std::vector<uint8_t>(buffer.data(), buffer.data() + buffer.size())};
}

// python-blosc2's packing of a tuple: ["__tuple__", items...].
NamedBytes Tuple(const std::string& name, const std::vector<double>& items) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> p(buffer);
  p.pack_array(static_cast<uint32_t>(items.size() + 1));
  p.pack(std::string("__tuple__"));
  for (double v : items) p.pack(v);
  return {name, std::vector<uint8_t>(buffer.data(), buffer.data() + buffer.size())};
}

bool HasNote(const VoxelGeometry& g, const std::string& part) {
  for (const std::string& n : g.notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST_CASE("voxel geometry from lists, tuples and single values") {
  const std::vector<NamedBytes> vlmeta = {
      Packed("spacing", std::vector<double>{3.0, 2.0, 0.5}),
      Tuple("origin", {30, 20.5, -10}),
      Packed("units", std::string("mm")),
      Packed("_ARRAY_DIMENSIONS", std::vector<std::string>{"t", "y", "x"}),
      Packed("axis_names", std::vector<std::string>{"z", "y", "x"}),
      Packed("other", 7)};
  const VoxelGeometry g = DecodeVoxelGeometry(vlmeta, 3);
  CHECK(g.spacing == std::vector<double>{3.0, 2.0, 0.5});
  CHECK(g.origin == std::vector<double>{30, 20.5, -10});
  CHECK(g.units == std::vector<std::string>{"mm", "mm", "mm"});
  CHECK(g.axis_names == std::vector<std::string>{"z", "y", "x"});  // axis_names wins
  CHECK(g.notes.empty());
  // Integers count as numbers; one number is every axis's spacing.
  const VoxelGeometry h =
      DecodeVoxelGeometry({Packed("spacing", 2), Packed("origin", std::vector<int>{-1, 4}),
                           Packed("_ARRAY_DIMENSIONS", std::vector<std::string>{"lat", "lon"})},
                          2);
  CHECK(h.spacing == std::vector<double>{2, 2});
  CHECK(h.origin == std::vector<double>{-1, 4});
  CHECK(h.axis_names == std::vector<std::string>{"lat", "lon"});
  CHECK(DecodeVoxelGeometry(vlmeta, 0).empty());  // a 0-D array has none
}

TEST_CASE("voxel geometry ignores malformed values and says why") {
  const VoxelGeometry g =
      DecodeVoxelGeometry({Packed("spacing", std::vector<double>{1, 2}), Packed("origin", 5.0),
                           Packed("units", std::vector<int>{1, 2, 3}),
                           Packed("axis_names", std::vector<std::string>{"a\"", "b", "c"})},
                          3);
  CHECK(g.empty());
  CHECK(HasNote(g, "vlmeta spacing ignored: it has 2 values for 3 axes"));
  CHECK(HasNote(g, "vlmeta origin ignored: it is not a list"));
  CHECK(HasNote(g, "vlmeta units ignored: value 0 is"));
  CHECK(HasNote(g, "vlmeta axis_names ignored: its strings may not hold quotes"));
  CHECK(HasNote(DecodeVoxelGeometry({Packed("spacing", std::vector<double>{1, 0})}, 2),
                "a spacing must be a finite number > 0"));
  CHECK(HasNote(DecodeVoxelGeometry({Packed("spacing", std::vector<double>{1, -2})}, 2),
                "a spacing must be a finite number > 0"));
  NamedBytes truncated = Packed("origin", std::vector<double>{1, 2});
  truncated.content.pop_back();
  CHECK(HasNote(DecodeVoxelGeometry({truncated}, 2), "it is not one msgpack value"));
  NamedBytes trailing = Packed("origin", std::vector<double>{1, 2});
  trailing.content.push_back(0xc0);
  CHECK(HasNote(DecodeVoxelGeometry({trailing}, 2), "it is not one msgpack value"));
}

}  // namespace
}  // namespace b2ndfs::format
