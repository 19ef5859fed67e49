// Tests of the gather (copy_region.cc) against an item-by-item copy, for
// every kind of run it specialises: single items of 1 to 16 bytes, rows of
// 32 to 256 bytes, the generic copy, and axes merged or strided.

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "b2ndfs/geometry/geometry.h"
#include "geometry_test_util.h"

namespace b2ndfs::geometry {
namespace {

using testing::Coords;
using testing::ForEachItem;
using testing::Rand;

// C-order offset of `x` inside a buffer covering `box`.
int64_t OffsetIn(const Box& box, const Coords& x) {
  int64_t offset = 0;
  for (int i = 0; i < box.ndim(); ++i) {
    offset = offset * (box.stop[i] - box.start[i]) + (x[i] - box.start[i]);
  }
  return offset;
}

// Per-axis bound keeping a random box at a few thousand items.
int64_t MaxExtent(int ndim) {
  static constexpr int64_t kMax[] = {1, 40, 15, 8, 6, 4};
  return kMax[ndim];
}

TEST_CASE("CopyRegion matches an item-by-item copy") {
  std::mt19937 rng(4242);
  // 1, 2, 4, 8 and 16: the run lengths CopyRegion specialises (items, and
  // rows of 32 to 256 bytes); 3: the generic copy.
  const int64_t itemsizes[] = {1, 2, 3, 4, 8, 16};
  for (int trial = 0; trial < 3000; ++trial) {
    const int ndim = trial % 6;
    const int64_t itemsize = itemsizes[(trial / 6) % 6];
    Box region, src_box, dst_box;
    for (int i = 0; i < ndim; ++i) {
      const int64_t start = Rand(rng, 2, 5);
      const int64_t extent = Rand(rng, 0, 12) == 0 ? 0 : Rand(rng, 1, MaxExtent(ndim));
      region.start.push_back(start);
      region.stop.push_back(start + extent);
      // Half the time a buffer spans the region exactly on an axis, so the
      // axis-merging fast paths get exercised as well as the strided ones.
      auto pad = [&] { return Rand(rng, 0, 1) == 0 ? 0 : Rand(rng, 1, 2); };
      src_box.start.push_back(start - pad());
      src_box.stop.push_back(start + extent + pad());
      dst_box.start.push_back(start - pad());
      dst_box.stop.push_back(start + extent + pad());
    }
    std::vector<uint8_t> src(static_cast<size_t>(src_box.NumItems() * itemsize));
    std::vector<uint8_t> dst(static_cast<size_t>(dst_box.NumItems() * itemsize));
    for (auto& v : src) v = static_cast<uint8_t>(rng());
    for (auto& v : dst) v = static_cast<uint8_t>(rng());
    std::vector<uint8_t> expected = dst;
    ForEachItem(region, [&](const Coords& x) {
      std::memcpy(expected.data() + OffsetIn(dst_box, x) * itemsize,
                  src.data() + OffsetIn(src_box, x) * itemsize, static_cast<size_t>(itemsize));
    });
    CopyRegion(src.data(), src_box, dst.data(), dst_box, region, itemsize);
    INFO("src " << ToString(src_box) << " dst " << ToString(dst_box) << " region "
                << ToString(region) << " itemsize " << itemsize);
    REQUIRE(dst == expected);
  }
}

}  // namespace
}  // namespace b2ndfs::geometry
