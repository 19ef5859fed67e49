// fuzz_common: what the b2ndfs fuzz targets share.
//
// What: FUZZ_CHECK, which reports a broken invariant and aborts (so libFuzzer
// and the replay tests see a crash), a strict JSON validator for the JSON
// b2ndfs writes (meta.json, msgpack -> JSON), a small deterministic PRNG fed
// from the input, and the "sparse pack" format that lets one fuzz input hold
// a whole sparse frame (chunks.b2frame plus its NNNNNNNN.chunk files).
// Ownership: plain functions and values.
// Thread-safety: everything may be called from any thread.
// Errors: FUZZ_CHECK aborts; the others return false / nullopt.
#ifndef B2NDFS_TESTS_FUZZ_FUZZ_COMMON_H_
#define B2NDFS_TESTS_FUZZ_FUZZ_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace b2ndfs::fuzz {

// Prints "FUZZ_CHECK failed: what (file:line)" to the original stderr (kept
// even when libFuzzer's -close_fd_mask closes fd 2) and aborts.
[[noreturn]] void CheckFailed(const char* file, int line, const std::string& what);

#define FUZZ_CHECK(cond, what)                                            \
  do {                                                                    \
    if (!(cond)) ::b2ndfs::fuzz::CheckFailed(__FILE__, __LINE__, (what)); \
  } while (false)

// True if `text` is exactly one RFC 8259 JSON value (whitespace around it
// allowed), valid UTF-8, nested at most `max_depth` levels. *error says why
// not.
bool IsValidJson(std::string_view text, std::string* error, int max_depth = 256);

// A deterministic PRNG (splitmix64) seeded from the input bytes, so that the
// reads a target makes depend on the input only.
class InputRng {
 public:
  explicit InputRng(std::span<const uint8_t> input);
  uint64_t Next();
  // Uniform-ish in [0, n); 0 when n <= 0.
  int64_t Below(int64_t n);

 private:
  uint64_t state_;
};

// Sparse pack: "B2SPARSE" then records of [uint32 little-endian length,
// bytes]. Record 0 is chunks.b2frame, record i >= 1 is the chunk file number
// i - 1 ("%08X.chunk"); length 0xFFFFFFFF (no bytes follow) means the file
// is absent. A record may be shorter than its length says (the input was
// cut): that file is then truncated, as a damaged one would be.
inline constexpr std::string_view kSparseMagic = "B2SPARSE";
inline constexpr uint32_t kAbsentRecord = 0xFFFFFFFF;
struct SparseRecord {
  bool present = true;
  std::span<const uint8_t> bytes;
};
bool IsSparsePack(std::span<const uint8_t> input);
std::vector<SparseRecord> UnpackSparse(std::span<const uint8_t> input, size_t max_records);
// nullopt entries are absent files.
std::vector<uint8_t> PackSparse(const std::vector<std::optional<std::vector<uint8_t>>>& records);

}  // namespace b2ndfs::fuzz

#endif  // B2NDFS_TESTS_FUZZ_FUZZ_COMMON_H_
