// ome_meta: the pure parts of the OME-Zarr view (ome.zarr/; README.md,
// "OME-Zarr pyramids"): the axes of a container in the order OME-Zarr 0.5
// requires, and the group's `attributes.ome` document (multiscales, omero).
//
// Axes: names from the vlmetalayer `axis_names` (or `_ARRAY_DIMENSIONS`),
// else by dimensionality: y x; z y x; c z y x; t c z y x. Types by name
// (case-insensitive): t, time -> time; c, ch, channel, channels -> channel;
// x, y, z (and lat, latitude, lon, longitude) -> space; another name is
// space when its unit is a length, time
// when it is a time, else a custom axis (no type). OME-Zarr 0.5 wants 2 or 3
// space axes, last, at most one time axis, first, and at most one channel or
// custom axis between: an array whose axes are not so ordered has no group.
// Units: UDUNITS-2 names as the spec lists them; common abbreviations (um,
// µm, nm, mm, s, ms ...) are spelled out; others are left out.
// Ownership: plain values. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::views {

struct OmeAxis {
  std::string name;
  std::string type;  // "time", "channel", "space", or empty (custom)
  std::string unit;  // a UDUNITS-2 name, or empty
};

// `names` and `units` are the container's (empty, or one per axis; units
// may be one for every axis). EINVAL saying why there is no group.
Result<std::vector<OmeAxis>> OmeAxesOf(int ndim, const std::vector<std::string>& names,
                                       const std::vector<std::string>& units);

// The unit OME-Zarr names for `unit` ("um" -> "micrometer"), or empty.
std::string OmeUnit(const std::string& unit, bool* is_space, bool* is_time);

// A channel's display window (omero): start/end the percentiles the previews
// use (0.5, 99.5), min/max the finite extremes.
struct OmeWindow {
  double start = 0, end = 0, min = 0, max = 0;
};

struct OmeImage {
  std::string name;
  std::vector<OmeAxis> axes;
  std::vector<double> spacing;  // per axis (1 where unknown)
  std::vector<double> origin;   // per axis (0 where unknown)
  int levels = 1;
  bool stride = false;  // labels: type "nearest" (stride); else "mean"
};

// The characters each omero number takes (JSON numbers padded with spaces),
// so that the document's size is known before its windows are.
constexpr int kOmeNumberWidth = 24;

// The "attributes" object of the group's zarr.json: {"ome": {"version":
// "0.5", "multiscales": [...], "omero": {...}}}. `windows`: one per channel
// (the channel axis's length, else 1; 0: no omero); empty: every number is 0 (the same
// size, for stat). Level k's scale is spacing x 2^k on the space axes, and
// its translation origin + spacing x (2^k - 1) / 2 there for means (the
// center of the 2^k items averaged), origin for stride.
std::string OmeAttributes(const OmeImage& image, int64_t channels,
                          const std::vector<OmeWindow>& windows);

// The window of values (NaN and infinities skipped; reordered); all zero
// when none is finite.
OmeWindow WindowOf(std::vector<double>* values);

// A JSON number (the shortest text that reads back to `value`; NaN and
// infinities as 0).
std::string OmeNumber(double value);

}  // namespace b2ndfs::views
