// store/pyramid.h's pure parts: item types, level shapes, and the kernels
// against a brute-force reference over random shapes.
#include "b2ndfs/store/pyramid.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

namespace b2ndfs::store {
namespace {

__extension__ using Int128 = __int128;

// The reference: every output item from its box, directly.
template <typename T>
std::vector<T> Reference(Downsampling method, const std::vector<T>& src,
                         const std::vector<int64_t>& shape, const std::vector<bool>& down) {
  const size_t n = shape.size();
  std::vector<int64_t> out_shape(n);
  int64_t total = 1;
  for (size_t i = 0; i < n; ++i) {
    out_shape[i] = down[i] ? (shape[i] + 1) / 2 : shape[i];
    total *= out_shape[i];
  }
  std::vector<T> out;
  for (int64_t o = 0; o < total; ++o) {
    std::vector<int64_t> j(n);
    int64_t rest = o;
    for (size_t i = n; i-- > 0;) {
      j[i] = rest % out_shape[i];
      rest /= out_shape[i];
    }
    double sum = 0;
    Int128 isum = 0;
    int64_t count = 0;
    T first{};
    bool have_first = false;
    for (int64_t s = 0; s < static_cast<int64_t>(src.size()); ++s) {
      int64_t r = s;
      bool inside = true;
      for (size_t i = n; i-- > 0;) {
        const int64_t x = r % shape[i];
        r /= shape[i];
        const int64_t lo = down[i] ? 2 * j[i] : j[i];
        const int64_t hi = down[i] ? 2 * j[i] + 2 : j[i] + 1;
        inside = inside && x >= lo && x < hi;
      }
      if (!inside) continue;
      if (!have_first) first = src[static_cast<size_t>(s)];
      have_first = true;
      if constexpr (std::is_floating_point_v<T>) {
        sum += static_cast<double>(src[static_cast<size_t>(s)]);
      } else {
        isum += static_cast<Int128>(src[static_cast<size_t>(s)]);
      }
      ++count;
    }
    REQUIRE(count > 0);
    if (method == Downsampling::kStride) {
      out.push_back(first);
    } else if constexpr (std::is_floating_point_v<T>) {
      out.push_back(static_cast<T>(sum / static_cast<double>(count)));
    } else {
      // Nearest, ties to even: the candidates floor and floor + 1 compared
      // by distance, written differently from the kernel's.
      Int128 q = isum / count;
      if (q * count > isum) q -= 1;
      const Int128 below = isum - q * count, above = (q + 1) * count - isum;
      const bool up = above < below || (above == below && q % 2 != 0);
      out.push_back(static_cast<T>(up ? q + 1 : q));
    }
  }
  return out;
}

template <typename T>
void CheckRandom(char kind, std::mt19937_64& rng, Downsampling method) {
  std::uniform_int_distribution<int> ndim_dist(1, 4), len(1, 7);
  const int ndim = ndim_dist(rng);
  std::vector<int64_t> shape;
  std::vector<bool> down;
  int64_t total = 1;
  for (int i = 0; i < ndim; ++i) {
    shape.push_back(len(rng));
    down.push_back(rng() % 3 != 0);
    total *= shape.back();
  }
  std::vector<T> src(static_cast<size_t>(total));
  for (T& v : src) {
    if constexpr (std::is_floating_point_v<T>) {
      v = static_cast<T>(std::uniform_real_distribution<double>(-1000, 1000)(rng));
    } else {
      v = static_cast<T>(rng() % 7 == 0   ? std::numeric_limits<T>::max()
                         : rng() % 5 == 0 ? std::numeric_limits<T>::min()
                                          : static_cast<T>(rng()));
    }
  }
  const std::vector<T> want = Reference(method, src, shape, down);
  std::vector<T> got(want.size());
  Downsample(PyramidItem{kind, static_cast<int>(sizeof(T))}, method,
             reinterpret_cast<const uint8_t*>(src.data()), shape, down,
             reinterpret_cast<uint8_t*>(got.data()));
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("item " << i << " of " << want.size() << ", ndim " << ndim);
    if constexpr (std::is_floating_point_v<T>) {
      REQUIRE(got[i] == Approx(want[i]).epsilon(1e-6));
    } else {
      REQUIRE(got[i] == want[i]);
    }
  }
}

TEST_CASE("means and strides equal a brute-force reference over random shapes") {
  std::mt19937_64 rng(37);
  for (int round = 0; round < 60; ++round) {
    for (Downsampling m : {Downsampling::kMean, Downsampling::kStride}) {
      CheckRandom<uint8_t>('u', rng, m);
      CheckRandom<int8_t>('i', rng, m);
      CheckRandom<uint16_t>('u', rng, m);
      CheckRandom<int16_t>('i', rng, m);
      CheckRandom<int32_t>('i', rng, m);
      CheckRandom<uint32_t>('u', rng, m);
      CheckRandom<int64_t>('i', rng, m);
      CheckRandom<uint64_t>('u', rng, m);
      CheckRandom<float>('f', rng, m);
      CheckRandom<double>('f', rng, m);
    }
  }
}

TEST_CASE("integer means round to nearest, ties to even; edges average what is present") {
  // 1-D, one downsampled axis: pairs (1,2) -> 1.5 -> 2, (3,4) -> 3.5 -> 4,
  // (5,6) -> 5.5 -> 6, (-1,-2) -> -1.5 -> -2, (-3,-4) -> -3.5 -> -4, (7) -> 7.
  std::vector<int32_t> src{1, 2, 3, 4, 5, 6, -1, -2, -3, -4, 2, 3, 7};
  std::vector<int32_t> got(7);
  Downsample(PyramidItem{'i', 4}, Downsampling::kMean, reinterpret_cast<uint8_t*>(src.data()), {13},
             {true}, reinterpret_cast<uint8_t*>(got.data()));
  CHECK(got == std::vector<int32_t>{2, 4, 6, -2, -4, 2, 7});
  // The extremes of uint64 do not overflow.
  std::vector<uint64_t> big{UINT64_MAX, UINT64_MAX, UINT64_MAX, 0};
  std::vector<uint64_t> out(2);
  Downsample(PyramidItem{'u', 8}, Downsampling::kMean, reinterpret_cast<uint8_t*>(big.data()),
             {2, 2}, {true, false}, reinterpret_cast<uint8_t*>(out.data()));
  CHECK(out[0] == UINT64_MAX);
  CHECK(out[1] == UINT64_MAX / 2 + 1);  // (2^64 - 1) / 2 = 2^63 - 0.5 -> 2^63 (even)
  // NaN propagates in float means, as numpy.mean.
  std::vector<float> f{1.0f, NAN, 2.0f, 4.0f};
  std::vector<float> fo(2);
  Downsample(PyramidItem{'f', 4}, Downsampling::kMean, reinterpret_cast<uint8_t*>(f.data()), {4},
             {true}, reinterpret_cast<uint8_t*>(fo.data()));
  CHECK(std::isnan(fo[0]));
  CHECK(fo[1] == 3.0f);
}

TEST_CASE("levels halve the space axes until the coarsest fits one chunk, at most 10") {
  using Shapes = std::vector<std::vector<int64_t>>;
  CHECK(PyramidShapes({100, 50}, {100, 64}, {true, true}) == Shapes{{100, 50}});
  CHECK(PyramidShapes({3, 101, 64}, {1, 32, 32}, {false, true, true}) ==
        Shapes{{3, 101, 64}, {3, 51, 32}, {3, 26, 16}});
  // The non-space axis never has to fit.
  CHECK(PyramidShapes({500, 10, 10}, {1, 10, 10}, {false, true, true}) == Shapes{{500, 10, 10}});
  const Shapes many = PyramidShapes({1 << 20, 3}, {1, 1}, {true, true});
  CHECK(many.size() == static_cast<size_t>(kMaxPyramidLevels));
  CHECK(many.back() == std::vector<int64_t>{1 << 11, 1});
}

TEST_CASE("item types: numbers only, little-endian or single bytes") {
  CHECK(PyramidItemOf("'<f4'").ok());
  CHECK(PyramidItemOf("'|u1'")->kind == 'u');
  CHECK(PyramidItemOf("'<i8'")->size == 8);
  CHECK(PyramidItemOf("'|i1'").ok());
  for (const char* bad :
       {"'|b1'", "'<c8'", "'<f2'", "'>i4'", "'<U4'", "[('a', '<i4')]", "'|V8'", "'<M8[s]'", ""}) {
    INFO(bad);
    const auto r = PyramidItemOf(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().error_number() == ENOTSUP);
    CHECK_FALSE(r.status().message().empty());
  }
}

}  // namespace
}  // namespace b2ndfs::store
