#include "json_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace b2ndfs::format::internal {
namespace {

// Length of the well-formed UTF-8 sequence at text[i] (1..4), or 0 if the
// bytes there are not one (overlong forms, surrogates and code points above
// U+10FFFF are not well-formed).
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b = byte(i);
  if (b < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xbf;  // range of the second byte
  if (b >= 0xc2 && b <= 0xdf) {
    n = 2;
  } else if (b >= 0xe0 && b <= 0xef) {
    n = 3;
    if (b == 0xe0) lo = 0xa0;
    if (b == 0xed) hi = 0x9f;
  } else if (b >= 0xf0 && b <= 0xf4) {
    n = 4;
    if (b == 0xf0) lo = 0x90;
    if (b == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  return n;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const size_t n = Utf8SequenceLength(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void AppendQuoted(std::string_view text, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<uint8_t>(text[i]);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          *out += "\\u00";
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xf]);
        } else if (c < 0x80) {
          out->push_back(static_cast<char>(c));
        } else {
          const size_t n = Utf8SequenceLength(text, i);
          if (n == 0) {
            *out += "\\ufffd";  // not UTF-8: replacement character
          } else {
            out->append(text.substr(i, n));
            i += n;
            continue;
          }
        }
    }
    ++i;
  }
  out->push_back('"');
}

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
