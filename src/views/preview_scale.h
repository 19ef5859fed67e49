// views/preview_scale: the gray levels of the quick-look PNGs (preview.png,
// preview/A/IDX.png; README.md, "Previews"). Items of a numeric or bool
// dtype are read as doubles; a slice is mapped linearly from its 0.5th
// percentile (black) to its 99.5th percentile (white), the percentiles of its
// finite items computed as numpy.percentile(values.astype(float64),
// [0.5, 99.5]) does (method 'linear'). NaN and items below the low
// percentile are black (0), those above the high one white (255); a slice
// whose two percentiles are equal (constant), or that has no finite item, is
// all black. Bool items are black (False) and white (True), unscaled.
// Pure functions; any thread. Errors: PreviewTypeOf returns ENOTSUP with the
// reason, for meta.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::views {

constexpr double kPreviewLowPercentile = 0.5;
constexpr double kPreviewHighPercentile = 99.5;

struct PreviewType {
  char kind = 0;  // 'b' (bool), 'i', 'u', 'f'
  int size = 0;
  bool big_endian = false;
};

// Bool, integers of 1, 2, 4, 8 bytes, floats of 2, 4, 8 bytes (either byte
// order). Complex items (no single gray level: abs() is the reader's call),
// strings, structured and other types: ENOTSUP saying why.
Result<PreviewType> PreviewTypeOf(const std::string& descr);

// The item at `item` as a double (64-bit integers rounded as NumPy's
// astype(float64) rounds them).
double PreviewValue(const PreviewType& type, const uint8_t* item);

// numpy.percentile(values, q) with method 'linear' (NumPy 1.22 and later:
// the same index, weight and interpolation arithmetic, so the result is the
// same double). `values` is non-empty, holds no NaN, and is reordered.
double Percentile(std::vector<double>* values, double q);

struct PreviewScale {
  double lo = 0, hi = 0;
  bool binary = false;  // bool items: 0 black, anything else white
};

// The scale of a slice from its values (NaN and infinities are skipped);
// `values` is reordered.
PreviewScale ScaleOf(const PreviewType& type, std::vector<double>* values);

// A value's gray level: floor((v - lo) / (hi - lo) * 255 + 0.5) inside
// (lo, hi), 0 at or below lo and for NaN, 255 at or above hi; 0 everywhere
// when hi <= lo.
uint8_t PreviewPixel(const PreviewScale& scale, double v);

}  // namespace b2ndfs::views
