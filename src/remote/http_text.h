// Private to remote: small text helpers shared by the HTTP client's files
// (Lower, Trim and Now are util/text.h's).
#pragma once

#include <cstdint>
#include <string>

#include "b2ndfs/util/text.h"

namespace b2ndfs::remote::text {

using ::b2ndfs::text::Lower;
using ::b2ndfs::text::Now;
using ::b2ndfs::text::Trim;

inline bool ParseInt64(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace b2ndfs::remote::text
