#include "fuzz_common.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "b2ndfs/util/json.h"

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
  // A value `max_depth` containers deep may be a container itself.
  auto doc = json::Parse(text, {static_cast<size_t>(std::max(max_depth, 0)) + 1});
  if (doc.ok()) return true;
  *error = doc.status().message();
  return false;
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
