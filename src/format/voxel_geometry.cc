#include "b2ndfs/format/voxel_geometry.h"

#include <cmath>
#include <optional>

#include "msgpack_util.h"

namespace b2ndfs::format {
namespace {

using internal::UnpackBounded;

// One item of a list: a number (any msgpack int or float) or a string.
std::optional<double> Number(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::POSITIVE_INTEGER:
      return static_cast<double>(o.via.u64);
    case msgpack::type::NEGATIVE_INTEGER:
      return static_cast<double>(o.via.i64);
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64:
      return o.via.f64;
    default:
      return std::nullopt;
  }
}

std::optional<std::string> String(const msgpack::object& o) {
  if (o.type != msgpack::type::STR) return std::nullopt;
  return std::string(o.via.str.ptr, o.via.str.size);
}

// The items of `o`: a list, python-blosc2's packed tuple ["__tuple__", ...],
// or a single value standing for every axis when `scalar_ok`.
template <typename T, typename Convert>
std::optional<std::vector<T>> Items(const msgpack::object& o, size_t ndim, bool scalar_ok,
                                    Convert convert, std::string* why) {
  std::vector<T> out;
  if (o.type != msgpack::type::ARRAY) {
    std::optional<T> v = convert(o);
    if (!scalar_ok || !v) {
      *why = scalar_ok ? "it is neither a list nor a single value" : "it is not a list";
      return std::nullopt;
    }
    return std::vector<T>(ndim, *v);
  }
  const msgpack::object* items = o.via.array.ptr;
  size_t n = o.via.array.size;
  if (n > 0 && String(items[0]) == std::optional<std::string>("__tuple__")) {
    ++items;
    --n;
  }
  if (n != ndim) {
    *why = "it has " + std::to_string(n) + " values for " + std::to_string(ndim) + " axes";
    return std::nullopt;
  }
  for (size_t i = 0; i < n; ++i) {
    std::optional<T> v = convert(items[i]);
    if (!v) {
      *why = "value " + std::to_string(i) + " is " + internal::TypeName(items[i]);
      return std::nullopt;
    }
    out.push_back(std::move(*v));
  }
  return out;
}

}  // namespace

bool IsVoxelGeometryKey(const std::string& name) {
  return name == "spacing" || name == "origin" || name == "units" || name == "axis_names" ||
         name == "_ARRAY_DIMENSIONS";
}

VoxelGeometry DecodeVoxelGeometry(const std::vector<NamedBytes>& vlmeta, size_t ndim) {
  VoxelGeometry g;
  if (ndim == 0) return g;
  std::vector<std::string> dimensions;  // _ARRAY_DIMENSIONS, if axis_names is absent
  for (const NamedBytes& vl : vlmeta) {
    if (!IsVoxelGeometryKey(vl.name)) continue;
    std::string why;
    Result<internal::Unpacked> u = UnpackBounded(vl.content, 0, 4, "vlmeta " + vl.name);
    if (!u.ok() || u->end != vl.content.size()) {
      g.notes.push_back("vlmeta " + vl.name + " ignored: it is not one msgpack value");
      continue;
    }
    const msgpack::object& o = u->get();
    bool ok = false;
    if (vl.name == "spacing" || vl.name == "origin") {
      const bool spacing = vl.name == "spacing";
      auto values = Items<double>(o, ndim, spacing, Number, &why);
      if (values) {
        for (double v : *values) {
          if (!std::isfinite(v) || (spacing && v <= 0)) {
            why = spacing ? "a spacing must be a finite number > 0" : "an origin must be finite";
            values.reset();
            break;
          }
        }
      }
      if (values) (spacing ? g.spacing : g.origin) = std::move(*values), ok = true;
    } else {
      const bool units = vl.name == "units";
      auto values = Items<std::string>(o, ndim, units, String, &why);
      if (values) {
        for (const std::string& s : *values) {
          // Each becomes a quoted word or a field of a one-line header.
          if (s.find_first_of("\"\n\r{},") != std::string::npos) {
            why = "its strings may not hold quotes, braces, commas or line breaks";
            values.reset();
            break;
          }
        }
      }
      if (values) {
        ok = true;
        if (units) {
          g.units = std::move(*values);
        } else if (vl.name == "axis_names") {
          g.axis_names = std::move(*values);
        } else {
          dimensions = std::move(*values);
        }
      }
    }
    if (!ok) g.notes.push_back("vlmeta " + vl.name + " ignored: " + why);
  }
  if (g.axis_names.empty()) g.axis_names = std::move(dimensions);
  return g;
}

}  // namespace b2ndfs::format
