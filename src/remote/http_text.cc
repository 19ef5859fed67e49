// The pure text work of HTTP: percent-encoding, redacting URLs for messages,
// and parsing the headers a range read depends on (Content-Range, dates,
// Retry-After). No I/O.
#include "http_text.h"

#include <cctype>
#include <cstring>
#include <ctime>

#include "b2ndfs/remote/http_client.h"

namespace b2ndfs::remote {

using text::Lower;
using text::ParseInt64;
using text::Trim;

std::string PercentEncode(const std::string& text, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (c == '/' && keep_slash)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string RedactUrl(const std::string& url) {
  std::string out = url;
  const size_t cut = out.find_first_of("?#");
  if (cut != std::string::npos) out.resize(cut);
  const size_t scheme = out.find("://");
  const size_t host = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t slash = out.find('/', host);
  const size_t at = out.rfind('@', slash == std::string::npos ? out.size() : slash);
  if (at != std::string::npos && at >= host) out.erase(host, at + 1 - host);
  return out;
}

std::optional<ContentRange> ParseContentRange(const std::string& value) {
  const std::string v = Trim(value);
  if (Lower(v.substr(0, 6)) != "bytes ") return std::nullopt;
  const size_t dash = v.find('-', 6), slash = v.find('/', 6);
  if (dash == std::string::npos || slash == std::string::npos || dash > slash) return std::nullopt;
  ContentRange r;
  if (!ParseInt64(v.substr(6, dash - 6), &r.first) ||
      !ParseInt64(v.substr(dash + 1, slash - dash - 1), &r.last) || r.last < r.first) {
    return std::nullopt;
  }
  const std::string total = v.substr(slash + 1);
  if (total != "*" && (!ParseInt64(total, &r.total) || r.total <= r.last)) return std::nullopt;
  return r;
}

std::optional<int64_t> ParseHttpDate(const std::string& value) {
  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
  struct tm tm {};
  const std::string v = Trim(value);
  const char* end = ::strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(::timegm(&tm));
}

std::optional<double> ParseRetryAfter(const std::string& value, int64_t now) {
  int64_t seconds;
  if (ParseInt64(value, &seconds)) {
    if (seconds < 0) return std::nullopt;
    return static_cast<double>(seconds);
  }
  const auto when = ParseHttpDate(value);
  if (!when) return std::nullopt;
  return static_cast<double>(std::max<int64_t>(0, *when - now));
}

}  // namespace b2ndfs::remote
