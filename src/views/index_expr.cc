// NumPy basic indexing, resolved the way CPython's PySlice_Unpack and
// PySlice_AdjustIndices do it, so that the clamping of out-of-range slice
// bounds (also of bounds too large for int64) matches NumPy exactly.
#include "index_expr.h"

#include <limits>
#include <optional>
#include <string>

namespace b2ndfs::views {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
// NAME_MAX: no name the kernel passes can be longer.
constexpr size_t kMaxNameLength = 255;

Status Malformed(std::string_view text, const std::string& why) {
  return NotFound("view/" + std::string(text) + ": " + why);
}

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// Python allows spaces (and tabs) between the tokens of a subscript, so a
// term copied from code (`3, 4`, ` 1 : 5 `) means what it does there.
std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// An optionally signed decimal (Python allows spaces between a sign and its
// number, never inside the number); values beyond int64 saturate (Python
// clamps slice bounds to Py_ssize_t the same way, and such an integer index
// is out of range either way).
std::optional<int64_t> ParseInteger(std::string_view s) {
  s = Trim(s);
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s = Trim(s.substr(1));
  }
  if (s.empty()) return std::nullopt;
  int64_t value = 0;
  bool saturated = false;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const int digit = c - '0';
    if (value > (kMax - digit) / 10) saturated = true;
    if (!saturated) value = value * 10 + digit;
  }
  if (saturated) return negative ? kMin : kMax;
  return negative ? -value : value;
}

// Clamps one bound as PySlice_AdjustIndices does.
int64_t AdjustBound(int64_t bound, int64_t length, int64_t step) {
  if (bound < 0) {
    bound += length;
    if (bound < 0) bound = step < 0 ? -1 : 0;
  } else if (bound >= length) {
    bound = step < 0 ? length - 1 : length;
  }
  return bound;
}

Result<AxisSelection> ParseSlice(std::string_view expr, std::string_view term, int64_t length) {
  std::string_view parts[3];
  int nparts = 0;
  size_t pos = 0;
  while (true) {
    const size_t colon = term.find(':', pos);
    if (nparts == 3) return Malformed(expr, "more than two ':' in '" + std::string(term) + "'");
    parts[nparts++] = Trim(term.substr(pos, colon == std::string_view::npos ? colon : colon - pos));
    if (colon == std::string_view::npos) break;
    pos = colon + 1;
  }
  std::optional<int64_t> value[3];
  for (int k = 0; k < nparts; ++k) {
    if (parts[k].empty()) continue;
    value[k] = ParseInteger(parts[k]);
    if (!value[k]) return Malformed(expr, "'" + std::string(parts[k]) + "' is not an integer");
  }
  int64_t step = value[2].value_or(1);
  if (step == 0) return Malformed(expr, "slice step cannot be zero");
  if (step < -kMax) step = -kMax;  // so that -step exists
  int64_t start = value[0].value_or(step < 0 ? kMax : 0);
  int64_t stop = value[1].value_or(step < 0 ? kMin : kMax);
  start = AdjustBound(start, length, step);
  stop = AdjustBound(stop, length, step);
  AxisSelection axis;
  if (step < 0) {
    axis.count = stop < start ? (start - stop - 1) / -step + 1 : 0;
  } else {
    axis.count = start < stop ? (stop - start - 1) / step + 1 : 0;
  }
  // One index or none: the step no longer matters; 1 lets readers treat the
  // axis as a plain range.
  axis.start = axis.count == 0 ? 0 : start;
  axis.step = axis.count <= 1 ? 1 : step;
  return axis;
}

}  // namespace

std::vector<int64_t> Hyperslab::ResultShape() const {
  std::vector<int64_t> shape;
  for (const AxisSelection& a : axes) {
    if (!a.drop) shape.push_back(a.count);
  }
  return shape;
}

int64_t Hyperslab::NumItems() const {
  int64_t n = 1;
  for (const AxisSelection& a : axes) n *= a.count;
  return n;
}

Result<Hyperslab> ParseIndexExpr(std::string_view text, const std::vector<int64_t>& shape) {
  if (text.empty()) return Malformed(text, "empty expression");
  if (text.size() > kMaxNameLength) return Malformed(text.substr(0, 32), "name too long");
  std::string_view body = Trim(text);
  if (body.empty()) return Malformed(text, "empty expression");
  if (body.size() > 1 && body.back() == ',') body.remove_suffix(1);
  std::vector<std::string_view> terms;
  size_t pos = 0;
  while (true) {
    const size_t comma = body.find(',', pos);
    terms.push_back(Trim(body.substr(pos, comma == std::string_view::npos ? comma : comma - pos)));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  const int ndim = static_cast<int>(shape.size());
  int ellipsis = -1;
  for (size_t k = 0; k < terms.size(); ++k) {
    if (terms[k] != "...") continue;
    if (ellipsis >= 0) return Malformed(text, "more than one '...'");
    ellipsis = static_cast<int>(k);
  }
  const int explicit_terms = static_cast<int>(terms.size()) - (ellipsis >= 0 ? 1 : 0);
  if (explicit_terms > ndim) {
    return Malformed(
        text, std::to_string(explicit_terms) + " indices for " + std::to_string(ndim) + " axes");
  }
  Hyperslab slab;
  slab.axes.reserve(shape.size());
  for (size_t k = 0; k < terms.size(); ++k) {
    const std::string_view term = terms[k];
    if (static_cast<int>(k) == ellipsis) {
      // `...` stands for as many `:` as the other terms leave.
      for (int n = ndim - explicit_terms; n > 0; --n) {
        const int64_t length = shape[slab.axes.size()];
        slab.axes.push_back(AxisSelection{0, 1, length, false});
      }
      continue;
    }
    if (term.empty()) return Malformed(text, "empty index");
    const int64_t length = shape[slab.axes.size()];
    if (term.find(':') == std::string_view::npos) {
      const std::optional<int64_t> index = ParseInteger(term);
      if (!index) return Malformed(text, "'" + std::string(term) + "' is not an index");
      if (*index < -length || *index >= length) {
        return Malformed(text, "index " + std::string(term) + " is out of range for axis " +
                                   std::to_string(slab.axes.size()) + " with size " +
                                   std::to_string(length));
      }
      slab.axes.push_back(AxisSelection{*index < 0 ? *index + length : *index, 1, 1, true});
      continue;
    }
    B2NDFS_ASSIGN_OR_RETURN(AxisSelection axis, ParseSlice(text, term, length));
    slab.axes.push_back(axis);
  }
  while (slab.axes.size() < shape.size()) {
    slab.axes.push_back(AxisSelection{0, 1, shape[slab.axes.size()], false});
  }
  return slab;
}

}  // namespace b2ndfs::views
