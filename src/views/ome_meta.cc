#include "ome_meta.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "b2ndfs/util/json.h"
#include "preview_scale.h"
#include "zarr_meta.h"

namespace b2ndfs::views {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// OME-Zarr 0.5's units (UDUNITS-2 names), and abbreviations people write.
const std::set<std::string>& SpaceUnits() {
  static const std::set<std::string> units{
      "angstrom",   "attometer",  "centimeter", "decimeter",  "exameter",   "femtometer",
      "foot",       "gigameter",  "hectometer", "inch",       "kilometer",  "megameter",
      "meter",      "micrometer", "mile",       "millimeter", "nanometer",  "parsec",
      "petameter",  "picometer",  "terameter",  "yard",       "yoctometer", "yottameter",
      "zeptometer", "zettameter"};
  return units;
}
const std::set<std::string>& TimeUnits() {
  static const std::set<std::string> units{
      "attosecond",  "centisecond", "day",         "decisecond",  "exasecond",  "femtosecond",
      "gigasecond",  "hectosecond", "hour",        "kilosecond",  "megasecond", "microsecond",
      "millisecond", "minute",      "nanosecond",  "petasecond",  "picosecond", "second",
      "terasecond",  "yoctosecond", "yottasecond", "zeptosecond", "zettasecond"};
  return units;
}

std::string Abbreviated(const std::string& unit) {
  static const std::pair<const char*, const char*> kNames[] = {{"um", "micrometer"},
                                                               {"\xc2\xb5m", "micrometer"},
                                                               {"\xce\xbcm", "micrometer"},
                                                               {"micron", "micrometer"},
                                                               {"nm", "nanometer"},
                                                               {"mm", "millimeter"},
                                                               {"cm", "centimeter"},
                                                               {"m", "meter"},
                                                               {"km", "kilometer"},
                                                               {"pm", "picometer"},
                                                               {"s", "second"},
                                                               {"sec", "second"},
                                                               {"ms", "millisecond"},
                                                               {"us", "microsecond"},
                                                               {"\xc2\xb5s", "microsecond"},
                                                               {"ns", "nanosecond"},
                                                               {"min", "minute"},
                                                               {"h", "hour"},
                                                               {"d", "day"}};
  for (const auto& [abbreviation, name] : kNames) {
    if (unit == abbreviation) return name;
  }
  return unit;
}

std::string AxisType(const std::string& name, bool space_unit, bool time_unit) {
  const std::string n = Lower(name);
  if (n == "t" || n == "time") return "time";
  if (n == "c" || n == "ch" || n == "channel" || n == "channels") return "channel";
  // (Geographic grids too: xarray's lat/lon are their space axes.)
  if (n == "x" || n == "y" || n == "z" || n == "lat" || n == "latitude" || n == "lon" ||
      n == "longitude") {
    return "space";
  }
  if (space_unit) return "space";
  if (time_unit) return "time";
  return "";
}

std::string Padded(std::string text) {
  if (text.size() < static_cast<size_t>(kOmeNumberWidth)) text.resize(kOmeNumberWidth, ' ');
  return text;
}

std::string Numbers(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + OmeNumber(values[i]);
  return out + "]";
}

}  // namespace

std::string OmeNumber(double value) {
  if (!std::isfinite(value)) return "0";
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, r.ptr);
}

std::string OmeUnit(const std::string& unit, bool* is_space, bool* is_time) {
  const std::string name = Abbreviated(unit);
  *is_space = SpaceUnits().count(name) > 0;
  *is_time = TimeUnits().count(name) > 0;
  return *is_space || *is_time ? name : std::string();
}

Result<std::vector<OmeAxis>> OmeAxesOf(int ndim, const std::vector<std::string>& names,
                                       const std::vector<std::string>& units) {
  if (ndim < 2 || ndim > 5) {
    return InvalidArgument("OME-Zarr images have 2 to 5 axes, this array " + std::to_string(ndim));
  }
  static const std::vector<std::vector<std::string>> kDefault{
      {"y", "x"}, {"z", "y", "x"}, {"c", "z", "y", "x"}, {"t", "c", "z", "y", "x"}};
  const std::vector<std::string>& chosen =
      names.size() == static_cast<size_t>(ndim) ? names : kDefault[static_cast<size_t>(ndim - 2)];
  std::vector<OmeAxis> axes;
  std::set<std::string> seen;
  int space = 0, time = 0, other = 0;
  // Ranks in the required order: time 0, channel/custom 1, space 2.
  int rank = 0;
  for (int i = 0; i < ndim; ++i) {
    OmeAxis axis;
    axis.name = chosen[static_cast<size_t>(i)];
    if (axis.name.empty()) return InvalidArgument("axis " + std::to_string(i) + " has no name");
    if (!seen.insert(axis.name).second) {
      return InvalidArgument("two axes are named '" + axis.name + "'");
    }
    std::string unit;
    if (units.size() == 1) unit = units[0];
    if (units.size() == static_cast<size_t>(ndim)) unit = units[static_cast<size_t>(i)];
    bool space_unit = false, time_unit = false;
    const std::string ome_unit = OmeUnit(unit, &space_unit, &time_unit);
    axis.type = AxisType(axis.name, space_unit, time_unit);
    const int this_rank = axis.type == "time" ? 0 : axis.type == "space" ? 2 : 1;
    if (this_rank < rank) {
      return InvalidArgument("axes " + json::Quote(axis.name) +
                             " come in an order OME-Zarr does not allow (time, then channel, "
                             "then 2 or 3 space axes)");
    }
    rank = this_rank;
    if (axis.type == "space") {
      ++space;
      if (space_unit) axis.unit = ome_unit;
    } else if (axis.type == "time") {
      ++time;
      if (time_unit) axis.unit = ome_unit;
    } else {
      ++other;
    }
    axes.push_back(std::move(axis));
  }
  if (space < 2 || space > 3) {
    return InvalidArgument("OME-Zarr images have 2 or 3 space axes (x, y, z), this array " +
                           std::to_string(space));
  }
  if (time > 1) return InvalidArgument("OME-Zarr images have at most one time axis");
  if (other > 1) {
    return InvalidArgument("OME-Zarr images have at most one channel (or custom) axis");
  }
  return axes;
}

OmeWindow WindowOf(std::vector<double>* values) {
  std::erase_if(*values, [](double v) { return !std::isfinite(v); });
  OmeWindow w;
  if (values->empty()) return w;
  const auto [lo, hi] = std::minmax_element(values->begin(), values->end());
  w.min = *lo;
  w.max = *hi;
  w.start = Percentile(values, kPreviewLowPercentile);
  w.end = Percentile(values, kPreviewHighPercentile);
  return w;
}

std::string OmeAttributes(const OmeImage& image, int64_t channels,
                          const std::vector<OmeWindow>& windows) {
  const size_t n = image.axes.size();
  std::string out = "{\n    \"ome\": {\n      \"version\": \"0.5\",\n      \"multiscales\": [{\n";
  out += "        \"name\": " + json::Quote(image.name) + ",\n        \"axes\": [";
  for (size_t i = 0; i < n; ++i) {
    const OmeAxis& a = image.axes[i];
    out += std::string(i ? ", " : "") + "{\"name\": " + json::Quote(a.name);
    if (!a.type.empty()) out += ", \"type\": \"" + a.type + "\"";
    if (!a.unit.empty()) out += ", \"unit\": \"" + a.unit + "\"";
    out += "}";
  }
  out += "],\n        \"datasets\": [";
  for (int k = 0; k < image.levels; ++k) {
    std::vector<double> scale(n), translation(n);
    const double factor = std::ldexp(1.0, k);
    for (size_t i = 0; i < n; ++i) {
      const bool space = image.axes[i].type == "space";
      scale[i] = image.spacing[i] * (space ? factor : 1.0);
      translation[i] = image.origin[i];
      if (space && !image.stride) translation[i] += image.spacing[i] * (factor - 1) / 2;
    }
    out += std::string(k ? ",\n          " : "\n          ") + "{\"path\": \"" + std::to_string(k) +
           "\", \"coordinateTransformations\": [{\"type\": \"scale\", " +
           "\"scale\": " + Numbers(scale) +
           "}, {\"type\": \"translation\", \"translation\": " + Numbers(translation) + "}]}";
  }
  out += "],\n        \"type\": \"";
  out += image.stride ? "nearest" : "mean";
  out += "\",\n        \"metadata\": {\"description\": \"";
  out += image.stride ? "every level k+1 keeps item 2i of level k along each space axis "
                        "(label image)"
                      : "every level k+1 is the mean of 2x2(x2) items of level k along the "
                        "space axes (fewer at odd edges; integers rounded half to even)";
  out += "\", \"method\": \"b2ndfs\", \"version\": \"1\"}\n      }]";
  if (channels < 1) return out + "\n    }\n  }";
  out += ",\n      \"omero\": {\"channels\": [";
  for (int64_t ch = 0; ch < channels; ++ch) {
    const OmeWindow w =
        static_cast<size_t>(ch) < windows.size() ? windows[static_cast<size_t>(ch)] : OmeWindow{};
    out +=
        std::string(ch ? ",\n          " : "\n          ") + "{\"label\": \"" + std::to_string(ch) +
        "\", \"color\": \"FFFFFF\", \"active\": true, \"family\": \"linear\", \"window\": "
        "{\"start\": " +
        Padded(OmeNumber(w.start)) + ", \"end\": " + Padded(OmeNumber(w.end)) +
        ", \"min\": " + Padded(OmeNumber(w.min)) + ", \"max\": " + Padded(OmeNumber(w.max)) + "}}";
  }
  out += "],\n        \"rdefs\": {\"model\": \"greyscale\"}}\n    }\n  }";
  return out;
}

}  // namespace b2ndfs::views
