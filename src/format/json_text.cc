#include "json_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace b2ndfs::format::internal {

void AppendBase64(std::span<const uint8_t> bytes, std::string* out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = uint32_t{bytes[i]} << 16 | uint32_t{bytes[i + 1]} << 8 | bytes[i + 2];
    out->push_back(kAlphabet[v >> 18]);
    out->push_back(kAlphabet[(v >> 12) & 63]);
    out->push_back(kAlphabet[(v >> 6) & 63]);
    out->push_back(kAlphabet[v & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{bytes[i]} << 16;
    if (rest == 2) v |= uint32_t{bytes[i + 1]} << 8;
    out->push_back(kAlphabet[v >> 18]);
    out->push_back(kAlphabet[(v >> 12) & 63]);
    out->push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out->push_back('=');
  }
}

// JSON has no NaN or infinities: they become {"$float": "NaN"} etc.
void AppendDouble(double value, bool single_precision, std::string* out) {
  if (std::isnan(value)) {
    *out += "{\"$float\": \"NaN\"}";
    return;
  }
  if (std::isinf(value)) {
    *out += value > 0 ? "{\"$float\": \"Infinity\"}" : "{\"$float\": \"-Infinity\"}";
    return;
  }
  char buf[64];
  // Shortest text that reads back to the same value; a float32 is printed as
  // a float32 (0.1f -> 0.1, not 0.100000001490116).
  const std::to_chars_result r =
      single_precision ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(value))
                       : std::to_chars(buf, buf + sizeof buf, value);
  out->append(buf, r.ptr);
}

void NewLine(int indent, std::string* out) {
  out->push_back('\n');
  out->append(static_cast<size_t>(indent), ' ');
}

}  // namespace b2ndfs::format::internal
