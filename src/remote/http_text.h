// Private to remote: small text helpers shared by the HTTP client's files.
#pragma once

#include <cctype>
#include <chrono>
#include <cstdint>
#include <string>

namespace b2ndfs::remote::text {

using Clock = std::chrono::steady_clock;

inline double Now() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

inline std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

inline std::string Trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r' || s[b - 1] == '\n')) {
    --b;
  }
  return s.substr(a, b - a);
}

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
