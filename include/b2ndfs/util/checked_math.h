// util/checked_math: integer arithmetic that reports overflow instead of UB.
// Used wherever sizes come from untrusted container metadata.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace b2ndfs {

inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of all values; nullopt on overflow. The empty product is 1.
inline std::optional<int64_t> CheckedProduct(std::span<const int64_t> values) {
  int64_t r = 1;
  for (int64_t v : values) {
    if (__builtin_mul_overflow(r, v, &r)) return std::nullopt;
  }
  return r;
}

// ceil(a / b) for a >= 0, b > 0.
inline int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

}  // namespace b2ndfs
