// remote/autoindex: the entries of a web server's directory index, from
// nginx's `autoindex_format json` document or from an HTML index page (nginx's
// own, whose lines also carry dates and sizes, or any page of relative links).
//
// Pure functions of untrusted text: malformed input is an EIO Status, never a
// crash. Names are returned decoded (no %XX, no HTML entities); links that
// leave the directory (absolute, "../", with a query or a scheme) and names
// with '/' or NUL inside are left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

struct IndexEntry {
  std::string name;
  bool directory = false;
  int64_t size = -1;  // -1: not given (directories, pages without sizes)
  int64_t mtime = 0;  // seconds since the epoch; 0: not given
  // The object's ETag as sent (quotes included), when the listing names it
  // (S3's ListObjectsV2; web servers' indexes do not): "" otherwise.
  std::string etag;
  bool operator==(const IndexEntry&) const = default;
};

// nginx `autoindex_format json`: [{"name":..,"type":"file"|"directory",
// "mtime":"<HTTP date>","size":N}, ...].
Result<std::vector<IndexEntry>> ParseAutoindexJson(const std::string& text);
// An HTML directory page.
Result<std::vector<IndexEntry>> ParseAutoindexHtml(const std::string& text);
// Either, by the document's first non-blank character.
Result<std::vector<IndexEntry>> ParseAutoindex(const std::string& text);

// Percent-encodes one path segment (everything but RFC 3986 unreserved).
std::string EncodePathSegment(const std::string& segment);
// Decodes %XX escapes; malformed escapes are kept as they are.
std::string DecodePercent(const std::string& text);

}  // namespace b2ndfs::remote
