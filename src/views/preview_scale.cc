#include "preview_scale.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "header_writers.h"

namespace b2ndfs::views {
namespace {

uint64_t LoadUnsigned(const uint8_t* p, int size, bool big_endian) {
  uint64_t v = 0;
  for (int i = 0; i < size; ++i) {
    const int from = big_endian ? i : size - 1 - i;
    v = (v << 8) | p[from];
  }
  return v;
}

double HalfToDouble(uint16_t h) {
  const int sign = h >> 15;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double v;
  if (exponent == 0) {
    v = std::ldexp(mantissa, -24);  // subnormal (or zero)
  } else if (exponent == 31) {
    v = mantissa ? std::nan("") : INFINITY;
  } else {
    v = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return sign ? -v : v;
}

}  // namespace

Result<PreviewType> PreviewTypeOf(const std::string& descr) {
  const std::string bare = UnquotedDescr(descr);
  if (bare == "|b1") return PreviewType{'b', 1, false};
  Result<NumericType> t = ParseNumericDescr(descr);
  if (!t.ok()) return Status(ENOTSUP, "previews show numbers or bools: " + t.status().message());
  if (t->kind == 'c') {
    return Status(ENOTSUP, "complex items " + bare +
                               " have no single gray level (preview the abs() yourself)");
  }
  const bool float_ok = t->kind == 'f' && (t->size == 2 || t->size == 4 || t->size == 8);
  const bool int_ok = (t->kind == 'i' || t->kind == 'u') &&
                      (t->size == 1 || t->size == 2 || t->size == 4 || t->size == 8);
  if (!float_ok && !int_ok) return Status(ENOTSUP, "previews do not read items " + bare);
  return PreviewType{t->kind, t->size, t->big_endian};
}

double PreviewValue(const PreviewType& type, const uint8_t* item) {
  const uint64_t bits = LoadUnsigned(item, type.size, type.big_endian);
  switch (type.kind) {
    case 'b':
      return bits != 0 ? 1.0 : 0.0;
    case 'u':
      return static_cast<double>(bits);
    case 'i': {
      const int shift = 64 - 8 * type.size;
      return static_cast<double>(static_cast<int64_t>(bits << shift) >> shift);
    }
    case 'f':
      if (type.size == 2) return HalfToDouble(static_cast<uint16_t>(bits));
      if (type.size == 4)
        return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits)));
      return std::bit_cast<double>(bits);
  }
  return 0;
}

double Percentile(std::vector<double>* values, double q) {
  std::vector<double>& v = *values;
  const size_t n = v.size();
  // numpy.lib.function_base._quantile: quantile q / 100, virtual index
  // (n - 1) * quantile, the two neighbours, weight and _lerp.
  const double quantile = q / 100;
  const double virtual_index = static_cast<double>(n - 1) * quantile;
  const double previous = std::floor(virtual_index);
  if (virtual_index >= static_cast<double>(n - 1)) {
    return *std::max_element(v.begin(), v.end());
  }
  const size_t i = virtual_index < 0 ? 0 : static_cast<size_t>(previous);
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(i), v.end());
  const double a = v[i];
  if (virtual_index < 0) return a;
  const double b = *std::min_element(v.begin() + static_cast<ptrdiff_t>(i) + 1, v.end());
  const double t = virtual_index - previous;
  const double diff_b_a = b - a;
  if (t >= 0.5) return b - diff_b_a * (1 - t);
  return a + diff_b_a * t;
}

PreviewScale ScaleOf(const PreviewType& type, std::vector<double>* values) {
  PreviewScale scale;
  if (type.kind == 'b') {
    scale.binary = true;
    return scale;
  }
  std::erase_if(*values, [](double v) { return !std::isfinite(v); });
  if (values->empty()) return scale;
  scale.lo = Percentile(values, kPreviewLowPercentile);
  scale.hi = Percentile(values, kPreviewHighPercentile);
  return scale;
}

uint8_t PreviewPixel(const PreviewScale& scale, double v) {
  if (scale.binary) return v != 0 ? 255 : 0;
  if (std::isnan(v) || !(scale.hi > scale.lo) || v <= scale.lo) return 0;
  if (v >= scale.hi) return 255;
  return static_cast<uint8_t>(std::floor((v - scale.lo) / (scale.hi - scale.lo) * 255.0 + 0.5));
}

}  // namespace b2ndfs::views
