#include "zarr_table.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "b2ndfs/util/json.h"

namespace b2ndfs::views {

std::string RowDimName(const std::vector<TableMember>& members) {
  std::string name = "row";
  const auto taken = [&members](const std::string& n) {
    return std::any_of(members.begin(), members.end(),
                       [&n](const TableMember& m) { return m.name == n; });
  };
  while (taken(name)) name = "_" + name;
  return name;
}

TablePlan PlanTable(const std::vector<TableMember>& members, TableKind kind, int64_t ctable_rows) {
  TablePlan plan;
  plan.dims.resize(members.size());
  if (kind == TableKind::kNone) return plan;
  int64_t rows = -1;
  if (kind == TableKind::kCTable) {
    rows = ctable_rows;
  } else {
    // A store group is a table when its 1-D leaves (at least two) all have
    // one length.
    size_t one_d = 0;
    for (const TableMember& m : members) {
      if (m.names_axes || m.shape.size() != 1) continue;
      if (one_d++ == 0) {
        rows = m.shape[0];
      } else if (m.shape[0] != rows) {
        return plan;
      }
    }
    if (one_d < 2) return plan;
  }
  if (rows < 0) return plan;
  const std::string row_dim = RowDimName(members);
  for (size_t i = 0; i < members.size(); ++i) {
    const TableMember& m = members[i];
    if (m.names_axes || m.shape.empty() || m.shape[0] != rows) continue;
    std::vector<std::string> dims{row_dim};
    for (size_t k = 1; k < m.shape.size(); ++k) {
      dims.push_back(m.name + "_dim_" + std::to_string(k));
    }
    plan.dims[i] = std::move(dims);
    plan.row_dim = row_dim;
  }
  if (!plan.row_dim.empty()) plan.rows = rows;
  return plan;
}

ZattrsPlan PlanZattrsDims(const std::string& vlmeta, const std::vector<std::string>& dims) {
  constexpr const char* kKey = "_ARRAY_DIMENSIONS";
  if (vlmeta.empty() || vlmeta[0] != '{' || FindJsonMember(vlmeta, kKey)) return {};
  std::string prefix = std::string("{\"") + kKey + "\": [";
  for (size_t i = 0; i < dims.size(); ++i) prefix += (i ? ", " : "") + json::Quote(dims[i]);
  prefix += "]";
  size_t pos = 1;
  while (pos < vlmeta.size() && (vlmeta[pos] == ' ' || vlmeta[pos] == '\n' || vlmeta[pos] == '\t' ||
                                 vlmeta[pos] == '\r')) {
    ++pos;
  }
  if (pos < vlmeta.size() && vlmeta[pos] != '}') prefix += ", ";
  return {prefix, 1};
}

namespace {

bool UsableName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name[0] != '.' &&
         (name[0] < '0' || name[0] > '9');
}

}  // namespace

std::vector<Coordinate> PlanCoordinates(const std::vector<int64_t>& shape,
                                        const std::vector<std::string>& dims,
                                        const std::vector<double>& spacing,
                                        const std::vector<double>& origin,
                                        const std::vector<std::string>& units,
                                        const std::vector<std::string>& taken) {
  std::vector<Coordinate> out;
  const size_t ndim = shape.size();
  if (dims.size() != ndim || (spacing.empty() && origin.empty())) return out;
  if ((!spacing.empty() && spacing.size() != ndim) || (!origin.empty() && origin.size() != ndim) ||
      (!units.empty() && units.size() != ndim)) {
    return out;
  }
  const std::set<std::string> taken_set(taken.begin(), taken.end());
  for (size_t k = 0; k < ndim; ++k) {
    const std::string& name = dims[k];
    if (!UsableName(name) || taken_set.count(name) ||
        std::count(dims.begin(), dims.end(), name) != 1) {
      continue;
    }
    Coordinate c;
    c.name = name;
    c.n = shape[k];
    if (!origin.empty()) c.origin = origin[k];
    if (!spacing.empty()) c.spacing = spacing[k];
    if (!units.empty()) c.units = units[k];
    out.push_back(std::move(c));
  }
  return out;
}

std::string CoordinateZarray(const Coordinate& c) {
  // Zarr v2 needs chunks of at least one item.
  return MakeZarrArray(ZarrDtype{"<f8"}, {c.n}, {std::max<int64_t>(c.n, 1)});
}

std::string CoordinateZattrs(const Coordinate& c) {
  std::string out = "{\"_ARRAY_DIMENSIONS\": [" + json::Quote(c.name) + "]";
  if (!c.units.empty()) out += ", \"units\": " + json::Quote(c.units);
  return out + "}";
}

size_t CoordinateBytes(const Coordinate& c, int64_t offset, size_t length, uint8_t* out) {
  const int64_t size = c.n * 8;
  if (offset < 0 || offset >= size) return 0;
  const size_t n =
      static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(length), size - offset));
  for (size_t done = 0; done < n;) {
    const int64_t at = offset + static_cast<int64_t>(done);
    const int64_t i = at / 8;
    const double value = c.origin + static_cast<double>(i) * c.spacing;
    uint8_t bytes[8];
    std::memcpy(bytes, &value, 8);
    if constexpr (std::endian::native == std::endian::big) std::reverse(bytes, bytes + 8);
    const size_t first = static_cast<size_t>(at % 8);
    const size_t take = std::min<size_t>(8 - first, n - done);
    std::memcpy(out + done, bytes + first, take);
    done += take;
  }
  return n;
}

}  // namespace b2ndfs::views
