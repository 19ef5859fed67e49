// fuse_compare's reading checks (fuse_compare_reads.cc: bytes, hostile,
// concurrency) and the helpers fuse_compare.cc shares with them. Private to
// the fuse_compare program; see the top of fuse_compare.cc for what each
// mode checks. Mismatches go to a Report; set-up errors throw.
#ifndef B2NDFS_TESTS_INTEGRATION_FUSE_COMPARE_H_
#define B2NDFS_TESTS_INTEGRATION_FUSE_COMPARE_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "itest_common.h"

namespace b2ndfs::itest {

inline constexpr uint64_t kSeed = 7177;
// Arrays up to this many bytes have every slice read; others are sampled.
inline constexpr int64_t kSmallArray = 1 << 20;
// Axes longer than this have their slice files sampled even for stat.
inline constexpr int64_t kAllNamesUpTo = 2000;

std::string Errno(int e);

// Reads a whole file with read(); errno on failure.
struct ReadResult {
  int error = 0;
  Bytes bytes;
};

ReadResult ReadFileChunked(const std::string& path, size_t piece = 65536);

std::string AsString(const Bytes& b);

// Checks that `path` does not exist (ENOENT).
void ExpectMissing(const std::string& path, const std::string& container, const std::string& file,
                   Report& report);

// Checks that directory `path` lists exactly `want`, ignoring names in
// `optional`.
void ExpectListing(const std::string& path, std::vector<std::string> want,
                   const std::string& container, const std::string& dir, Report& report,
                   const std::set<std::string>& optional = {});

int RunBytes(const std::string& mount, const std::string& refdir);
int RunHostile(const std::string& mount, const std::string& hostile_dir);
int RunConcurrency(const std::string& mount, const std::string& refdir, int threads);

}  // namespace b2ndfs::itest

#endif  // B2NDFS_TESTS_INTEGRATION_FUSE_COMPARE_H_
