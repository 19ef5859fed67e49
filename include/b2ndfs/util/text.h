// util/text: the small text and clock helpers every module shares (header
// names, hosts, config lines, ages of cached answers).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace b2ndfs::text {

// ASCII lower case (the C locale's tolower): header names, hosts, options.
std::string Lower(std::string_view s);
// `s` without its leading and trailing ASCII white space (space, \t, \n,
// \v, \f, \r). TrimView returns a view into `s`; Trim a copy.
std::string_view TrimView(std::string_view s);
std::string Trim(std::string_view s);
// Seconds on the monotonic clock (std::chrono::steady_clock): deadlines and
// the ages of cached answers, never wall time.
double Now();
// Appends code point `cp` (at most U+10FFFF) to `out` in UTF-8: JSON's \u
// escapes and XML's character references.
void AppendUtf8(uint32_t cp, std::string* out);
// Length of the well-formed UTF-8 sequence at text[i] (1..4), or 0 when the
// bytes there are not one (overlong forms, surrogates and code points above
// U+10FFFF are not well-formed; RFC 3629). i < text.size().
size_t Utf8SequenceLength(std::string_view text, size_t i);
bool IsValidUtf8(std::string_view text);

}  // namespace b2ndfs::text
