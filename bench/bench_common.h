// bench_common: what the benchmark programs share (bench/run.sh drives them).
//
// - Seconds(): a monotonic clock in seconds.
// - Checksum: a position-dependent sum over the byte stream a route returns,
//   so that bench.py can check that c-blosc2, b2ndfs and squashfuse+numpy
//   returned the same bytes for the same operation. bench/npy_reader.py
//   computes the same function with numpy; keep the two in step.
// - Rng, RandomOffsets(), CubeOrigins(): the fixed-seed plans of random
//   reads and sub-cubes, identical in every program that replays them.
// - SplitFlatRange(): a C-order byte range of an array as the few boxes it
//   covers, for replaying a flat-file read with b2nd_get_slice_cbuffer.
// Header-only; no state is shared between threads.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace bench {

inline double Seconds() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The stream, zero-padded to a multiple of 8 bytes, read as little-endian
// 64-bit words w_i (i from 1): s1 = sum w_i, s2 = sum i * w_i, both mod 2^64.
class Checksum {
 public:
  void Update(const uint8_t* data, size_t size) {
    while (carry_size_ > 0 && size > 0) {
      carry_[carry_size_++] = *data++;
      --size;
      if (carry_size_ == 8) {
        AddWord(carry_);
        carry_size_ = 0;
      }
    }
    while (size >= 8) {
      AddWord(data);
      data += 8;
      size -= 8;
    }
    while (size > 0) {
      carry_[carry_size_++] = *data++;
      --size;
    }
  }

  std::string Hex() const {
    Checksum copy = *this;
    if (copy.carry_size_ > 0) {
      std::memset(copy.carry_ + copy.carry_size_, 0, 8 - copy.carry_size_);
      copy.AddWord(copy.carry_);
    }
    char text[40];
    std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(copy.s1_),
                  static_cast<unsigned long long>(copy.s2_));
    return text;
  }

 private:
  void AddWord(const uint8_t* p) {
    uint64_t word = 0;
    for (int k = 7; k >= 0; --k) word = (word << 8) | p[k];  // little-endian on any host
    ++index_;
    s1_ += word;
    s2_ += word * index_;
  }

  uint64_t s1_ = 0;
  uint64_t s2_ = 0;
  uint64_t index_ = 0;
  uint8_t carry_[8] = {};
  size_t carry_size_ = 0;
};

// splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }

 private:
  uint64_t state_;
};

inline constexpr int64_t kReadAlign = 4096;

// `count` offsets of `length`-byte reads inside [0, size), 4 KiB aligned.
inline std::vector<int64_t> RandomOffsets(int64_t size, int64_t length, int count, uint64_t seed) {
  Rng rng(seed);
  const int64_t slots = size >= length ? (size - length) / kReadAlign + 1 : 1;
  std::vector<int64_t> offsets;
  for (int i = 0; i < count; ++i) {
    offsets.push_back(static_cast<int64_t>(rng.Below(static_cast<uint64_t>(slots))) * kReadAlign);
  }
  return offsets;
}

using Index3 = std::array<int64_t, 3>;

// `count` origins of `edge`-sided cubes inside a 3-D `shape`.
inline std::vector<Index3> CubeOrigins(const Index3& shape, int64_t edge, int count,
                                       uint64_t seed) {
  Rng rng(seed ^ 0x5bd1e995ull);
  std::vector<Index3> origins;
  for (int i = 0; i < count; ++i) {
    Index3 o{};
    for (int d = 0; d < 3; ++d) {
      const int64_t room = shape[d] >= edge ? shape[d] - edge + 1 : 1;
      o[d] = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(room)));
    }
    origins.push_back(o);
  }
  return origins;
}

struct Box {
  std::vector<int64_t> start;
  std::vector<int64_t> stop;
};

namespace internal {
inline void Split(const std::vector<int64_t>& shape, size_t dim, std::vector<int64_t>& prefix,
                  int64_t lo, int64_t hi, std::vector<Box>& out) {
  if (lo >= hi) return;
  int64_t inner = 1;
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  auto emit = [&](int64_t first, int64_t last) {  // [first, last) along dim, all of the rest
    Box box;
    box.start = prefix;
    box.stop = prefix;
    for (auto& v : box.stop) ++v;
    box.start.push_back(first);
    box.stop.push_back(last);
    for (size_t d = dim + 1; d < shape.size(); ++d) {
      box.start.push_back(0);
      box.stop.push_back(shape[d]);
    }
    out.push_back(box);
  };
  if (lo % inner == 0 && hi % inner == 0) {
    emit(lo / inner, hi / inner);
    return;
  }
  const int64_t first = lo / inner;
  const int64_t last = (hi - 1) / inner;
  auto descend = [&](int64_t index, int64_t a, int64_t b) {
    prefix.push_back(index);
    Split(shape, dim + 1, prefix, a, b, out);
    prefix.pop_back();
  };
  if (first == last) {
    descend(first, lo - first * inner, hi - first * inner);
    return;
  }
  const int64_t full_begin = lo % inner == 0 ? first : first + 1;
  const int64_t full_end = hi % inner == 0 ? last + 1 : last;
  if (lo % inner != 0) descend(first, lo - first * inner, inner);
  if (full_end > full_begin) emit(full_begin, full_end);
  if (hi % inner != 0) descend(last, 0, hi - last * inner);
}
}  // namespace internal

// Items [lo, hi) of a C-order array of `shape` as boxes, in stream order;
// each box is contiguous in the stream.
inline std::vector<Box> SplitFlatRange(const std::vector<int64_t>& shape, int64_t lo, int64_t hi) {
  std::vector<Box> out;
  std::vector<int64_t> prefix;
  if (shape.empty()) return out;
  internal::Split(shape, 0, prefix, lo, hi, out);
  return out;
}

}  // namespace bench
