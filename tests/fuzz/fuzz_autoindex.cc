// fuzz_autoindex: a web server's directory index (remote/autoindex.h), JSON
// or HTML, fed the raw input, and the percent-encoding of path segments.
//
// Beyond "does not crash", it checks what the header promises: failures are
// EIO, every entry's name is one path segment (not empty, ".", "..", no '/'
// or NUL) so a hostile index cannot name a path outside its directory,
// directories have no size, and EncodePathSegment / DecodePercent round-trip
// any name to an URL segment of unreserved characters and %XX only.
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "b2ndfs/remote/autoindex.h"
#include "fuzz_common.h"

namespace {

void CheckEntries(const b2ndfs::Result<std::vector<b2ndfs::remote::IndexEntry>>& entries,
                  const char* which) {
  if (!entries.ok()) {
    FUZZ_CHECK(entries.status().error_number() == EIO,
               std::string(which) + " error is not EIO: " + entries.status().message());
    return;
  }
  for (const auto& e : *entries) {
    FUZZ_CHECK(!e.name.empty() && e.name != "." && e.name != "..",
               std::string(which) + " entry named '" + e.name + "'");
    FUZZ_CHECK(e.name.find('/') == std::string::npos && e.name.find('\0') == std::string::npos,
               std::string(which) + " entry name with '/' or NUL");
    FUZZ_CHECK(!e.directory || e.size == -1, std::string(which) + " directory with a size");
    FUZZ_CHECK(e.size >= -1, std::string(which) + " negative size");
  }
}

void CheckSegment(const std::string& name) {
  const std::string encoded = b2ndfs::remote::EncodePathSegment(name);
  for (size_t i = 0; i < encoded.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(encoded[i]);
    if (c == '%') {
      FUZZ_CHECK(i + 2 < encoded.size() &&
                     std::isxdigit(static_cast<unsigned char>(encoded[i + 1])) &&
                     std::isxdigit(static_cast<unsigned char>(encoded[i + 2])),
                 "a bad escape in an encoded segment");
      continue;
    }
    FUZZ_CHECK(std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~',
               "a reserved character in an encoded segment");
  }
  FUZZ_CHECK(b2ndfs::remote::DecodePercent(encoded) == name, "segment does not round-trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace b2ndfs::remote;  // NOLINT
  const std::string text(reinterpret_cast<const char*>(data), size);
  CheckEntries(ParseAutoindexJson(text), "JSON index");
  CheckEntries(ParseAutoindexHtml(text), "HTML index");
  auto either = ParseAutoindex(text);
  CheckEntries(either, "index");
  if (either.ok()) {
    for (const auto& e : *either) CheckSegment(e.name);
  }
  CheckSegment(text.substr(0, 256));
  (void)DecodePercent(text);
  return 0;
}
