// Helpers shared by the geometry unit tests (geometry_test.cc,
// copy_region_test.cc): random integers and a brute-force walk of a box's
// items, the references the tests compare the layout's code with.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "b2ndfs/geometry/geometry.h"

namespace b2ndfs::geometry::testing {

using Coords = std::vector<int64_t>;

inline int64_t Rand(std::mt19937& rng, int64_t lo, int64_t hi) {  // inclusive
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// Visits every item of `box` in C order.
inline void ForEachItem(const Box& box, const std::function<void(const Coords&)>& fn) {
  if (box.empty()) return;
  Coords x = box.start;
  while (true) {
    fn(x);
    int a = box.ndim() - 1;
    for (; a >= 0; --a) {
      if (++x[a] < box.stop[a]) break;
      x[a] = box.start[a];
    }
    if (a < 0) return;
  }
}

}  // namespace b2ndfs::geometry::testing
