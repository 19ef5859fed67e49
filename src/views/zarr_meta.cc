#include "zarr_meta.h"

#include <cctype>

#include "b2ndfs/util/json.h"

namespace b2ndfs::views {
std::string JsonInts(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

namespace {

// A datetime unit such as "[ns]" or "[25s]": digits then letters.
bool IsTimeUnit(const std::string& unit) {
  if (unit.size() < 3 || unit.front() != '[' || unit.back() != ']') return false;
  size_t i = 1;
  while (i + 1 < unit.size() && std::isdigit(static_cast<unsigned char>(unit[i]))) ++i;
  if (i + 1 == unit.size()) return false;
  for (; i + 1 < unit.size(); ++i) {
    if (!std::isalpha(static_cast<unsigned char>(unit[i]))) return false;
  }
  return true;
}

void SkipJsonSpace(const std::string& s, size_t* pos) {
  while (*pos < s.size() &&
         (s[*pos] == ' ' || s[*pos] == '\n' || s[*pos] == '\t' || s[*pos] == '\r')) {
    ++*pos;
  }
}

}  // namespace

Result<ZarrDtype> ZarrDtypeOf(const std::string& npy_descr) {
  const auto unsupported = [&npy_descr](const std::string& why) {
    return InvalidArgument("Zarr v2 needs a numeric, bool or fixed string dtype; " + npy_descr +
                           " " + why);
  };
  std::string t = npy_descr;
  if (t.size() >= 2 && t.front() == '\'' && t.back() == '\'') t = t.substr(1, t.size() - 2);
  if (!t.empty() && t[0] == '[') return unsupported("is structured");
  if (t.size() < 3 || (t[0] != '<' && t[0] != '>' && t[0] != '|')) {
    return unsupported("is not a simple typestr");
  }
  const char kind = t[1];
  size_t digits_end = 2;
  while (digits_end < t.size() && std::isdigit(static_cast<unsigned char>(t[digits_end]))) {
    ++digits_end;
  }
  if (digits_end == 2 || t[2] == '0') return unsupported("has no item size");
  const std::string rest = t.substr(digits_end);
  const bool timed = kind == 'M' || kind == 'm';
  if (timed ? !IsTimeUnit(rest) : !rest.empty()) return unsupported("is not a simple typestr");
  switch (kind) {
    case 'b':
      return ZarrDtype{t};
    case 'i':
    case 'u':
    case 'f':
    case 'M':
    case 'm':
      return ZarrDtype{t};
    case 'c':
      return ZarrDtype{t};
    case 'S':
    case 'U':
      return ZarrDtype{t};
    case 'V':
      return unsupported("is opaque (void)");
    default:
      return unsupported("is of an unknown kind");
  }
}

std::string MakeZarrArray(const ZarrDtype& dtype, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& chunks) {
  std::string out = "{\n";
  out += "  \"chunks\": " + JsonInts(chunks) + ",\n";
  out += "  \"compressor\": null,\n";
  out += "  \"dimension_separator\": \".\",\n";
  out += "  \"dtype\": \"" + dtype.dtype + "\",\n";
  // null: every chunk file exists, so no item is ever uninitialised (what a
  // fill value stands for), and readers such as xarray would otherwise mask
  // every item equal to it (zeros turned into NaN). Edge chunks are padded
  // with zero bytes, which no reader returns.
  out += "  \"fill_value\": null,\n";
  out += "  \"filters\": null,\n";
  out += "  \"order\": \"C\",\n";
  out += "  \"shape\": " + JsonInts(shape) + ",\n";
  out += "  \"zarr_format\": 2\n";
  return out + "}\n";
}

std::string ZarrChunkKey(const std::vector<int64_t>& coords) {
  if (coords.empty()) return "0";
  std::string key;
  for (size_t k = 0; k < coords.size(); ++k) {
    if (k) key += '.';
    key += std::to_string(coords[k]);
  }
  return key;
}

std::optional<std::pair<size_t, size_t>> FindJsonMember(const std::string& json,
                                                        const std::string& key) {
  auto doc = json::Parse(json);
  if (!doc.ok()) return std::nullopt;
  const json::Value* member = doc->Find(key);
  if (member == nullptr) return std::nullopt;
  return std::make_pair(member->begin, member->end);
}

ZattrsPlan PlanZattrs(const std::string& vlmeta, int ndim, const std::string& dim_prefix) {
  constexpr const char* kKey = "_ARRAY_DIMENSIONS";
  if (vlmeta.empty() || vlmeta[0] != '{' || FindJsonMember(vlmeta, kKey)) return {};
  std::string prefix = std::string("{\"") + kKey + "\": [";
  const std::string quoted = json::Quote(dim_prefix + "dim_");
  const std::string open = quoted.substr(0, quoted.size() - 1);  // without the closing quote
  for (int i = 0; i < ndim; ++i) prefix += (i ? ", " : "") + open + std::to_string(i) + "\"";
  prefix += "]";
  size_t pos = 1;
  SkipJsonSpace(vlmeta, &pos);
  if (pos < vlmeta.size() && vlmeta[pos] != '}') prefix += ", ";
  return {prefix, 1};
}

}  // namespace b2ndfs::views
