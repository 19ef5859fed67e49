#include "fuzz_common.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace b2ndfs::fuzz {
namespace {

// A duplicate of the stderr the process started with, taken before libFuzzer
// may close fd 2 (-close_fd_mask=2 silences the daemon's logging of every
// broken input, but a failed check must still be seen).
int OriginalStderr() {
  static const int fd = [] {
    const int d = ::fcntl(2, F_DUPFD_CLOEXEC, 3);
    return d >= 0 ? d : 2;
  }();
  return fd;
}
// Taken during static initialisation, i.e. before libFuzzer's main runs.
[[maybe_unused]] const int g_stderr_at_start = OriginalStderr();

class JsonParser {
 public:
  JsonParser(std::string_view text, int max_depth) : s_(text), max_depth_(max_depth) {}

  bool Parse(std::string* error) {
    SkipSpace();
    if (!Value(0)) {
      *error = error_ + " at byte " + std::to_string(pos_);
      return false;
    }
    SkipSpace();
    if (pos_ != s_.size()) {
      *error = "trailing bytes at " + std::to_string(pos_);
      return false;
    }
    return true;
  }

 private:
  bool Fail(const char* what) {
    error_ = what;
    return false;
  }
  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek() const { return AtEnd() ? '\0' : s_[pos_]; }
  void SkipSpace() {
    while (!AtEnd() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return Fail("bad literal");
    pos_ += word.size();
    return true;
  }

  bool Value(int depth) {
    if (depth > max_depth_) return Fail("nested too deep");
    switch (Peek()) {
      case '{':
        return Object(depth);
      case '[':
        return Array(depth);
      case '"':
        return String();
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      default:
        return Number();
    }
  }

  bool Object(int depth) {
    ++pos_;
    SkipSpace();
    if (Peek() == '}') {
      ++pos_;
      return true;
    }
    for (;;) {
      SkipSpace();
      if (Peek() != '"') return Fail("object key is not a string");
      if (!String()) return false;
      SkipSpace();
      if (Peek() != ':') return Fail("missing ':'");
      ++pos_;
      SkipSpace();
      if (!Value(depth + 1)) return false;
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return true;
      }
      return Fail("expected ',' or '}'");
    }
  }

  bool Array(int depth) {
    ++pos_;
    SkipSpace();
    if (Peek() == ']') {
      ++pos_;
      return true;
    }
    for (;;) {
      SkipSpace();
      if (!Value(depth + 1)) return false;
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        return true;
      }
      return Fail("expected ',' or ']'");
    }
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  bool Number() {
    const size_t start = pos_;
    if (Peek() == '-') ++pos_;
    if (Peek() == '0') {
      ++pos_;
    } else if (IsDigit(Peek())) {
      while (IsDigit(Peek())) ++pos_;
    } else {
      return Fail(start == pos_ ? "unexpected character" : "bad number");
    }
    if (Peek() == '.') {
      ++pos_;
      if (!IsDigit(Peek())) return Fail("bad fraction");
      while (IsDigit(Peek())) ++pos_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!IsDigit(Peek())) return Fail("bad exponent");
      while (IsDigit(Peek())) ++pos_;
    }
    return true;
  }

  static bool IsHex(char c) {
    return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }

  // One UTF-8 sequence starting at pos_ (RFC 3629: no overlongs, no
  // surrogates, at most U+10FFFF).
  bool Utf8() {
    const auto b0 = static_cast<uint8_t>(s_[pos_]);
    int extra = 0;
    uint32_t cp = 0;
    if (b0 < 0x80) {
      ++pos_;
      return true;
    } else if ((b0 & 0xE0) == 0xC0) {
      extra = 1;
      cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
      extra = 2;
      cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
      extra = 3;
      cp = b0 & 0x07;
    } else {
      return Fail("invalid UTF-8 lead byte");
    }
    if (pos_ + extra >= s_.size()) return Fail("truncated UTF-8 sequence");
    for (int i = 1; i <= extra; ++i) {
      const auto b = static_cast<uint8_t>(s_[pos_ + i]);
      if ((b & 0xC0) != 0x80) return Fail("invalid UTF-8 continuation byte");
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra]) return Fail("overlong UTF-8 sequence");
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return Fail("invalid code point");
    pos_ += static_cast<size_t>(extra) + 1;
    return true;
  }

  bool String() {
    ++pos_;
    for (;;) {
      if (AtEnd()) return Fail("unterminated string");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (static_cast<uint8_t>(c) < 0x20) return Fail("unescaped control character");
      if (c == '\\') {
        ++pos_;
        const char e = Peek();
        if (e == 'u') {
          for (int i = 1; i <= 4; ++i) {
            if (pos_ + i >= s_.size() || !IsHex(s_[pos_ + i])) return Fail("bad \\u escape");
          }
          pos_ += 5;
        } else if (e != '\0' && std::strchr("\"\\/bfnrt", e) != nullptr) {
          ++pos_;
        } else {
          return Fail("bad escape");
        }
        continue;
      }
      if (!Utf8()) return false;
    }
  }

  std::string_view s_;
  int max_depth_;
  size_t pos_ = 0;
  std::string error_;
};

uint32_t GetLe32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

void CheckFailed(const char* file, int line, const std::string& what) {
  const std::string text =
      "FUZZ_CHECK failed: " + what + " (" + file + ":" + std::to_string(line) + ")\n";
  const int fd = OriginalStderr();
  if (::write(fd, text.data(), text.size()) < 0) {
    // Nothing better to do: the abort below is what matters.
  }
  std::abort();
}

bool IsValidJson(std::string_view text, std::string* error, int max_depth) {
  JsonParser parser(text, max_depth);
  return parser.Parse(error);
}

InputRng::InputRng(std::span<const uint8_t> input) : state_(0x9E3779B97F4A7C15ull ^ input.size()) {
  // FNV-1a over the input: cheap and spreads every byte.
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : input) h = (h ^ b) * 1099511628211ull;
  state_ ^= h;
}

uint64_t InputRng::Next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int64_t InputRng::Below(int64_t n) {
  if (n <= 0) return 0;
  return static_cast<int64_t>(Next() % static_cast<uint64_t>(n));
}

bool IsSparsePack(std::span<const uint8_t> input) {
  return input.size() >= kSparseMagic.size() &&
         std::memcmp(input.data(), kSparseMagic.data(), kSparseMagic.size()) == 0;
}

std::vector<SparseRecord> UnpackSparse(std::span<const uint8_t> input, size_t max_records) {
  std::vector<SparseRecord> records;
  if (!IsSparsePack(input)) return records;
  size_t pos = kSparseMagic.size();
  while (pos + 4 <= input.size() && records.size() < max_records) {
    const uint32_t length = GetLe32(input.data() + pos);
    pos += 4;
    if (length == kAbsentRecord) {
      records.push_back(SparseRecord{false, {}});
      continue;
    }
    const size_t available = std::min<size_t>(length, input.size() - pos);
    records.push_back(SparseRecord{true, input.subspan(pos, available)});
    pos += available;
  }
  return records;
}

std::vector<uint8_t> PackSparse(const std::vector<std::optional<std::vector<uint8_t>>>& records) {
  std::vector<uint8_t> out(kSparseMagic.begin(), kSparseMagic.end());
  for (const auto& r : records) {
    const uint32_t n = r ? static_cast<uint32_t>(r->size()) : kAbsentRecord;
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
    if (r) out.insert(out.end(), r->begin(), r->end());
  }
  return out;
}

}  // namespace b2ndfs::fuzz
