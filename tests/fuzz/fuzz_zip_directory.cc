// fuzz_zip_directory: the ZIP central directory parser of the stores module
// (stores/zip_directory.h), fed a whole .b2z archive.
//
// Beyond "does not crash", it checks what the header promises: failures are
// EIO; at most kMaxZipMembers members; every member without a problem has a
// safe relative name, and once its local header agrees (MemberDataOffset),
// its bytes lie inside the file, before the central directory, and overlap
// no other readable member's bytes, so that a hostile archive can never make
// one leaf read another member's bytes.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/stores/zip_directory.h"
#include "fuzz_common.h"

namespace {

// Relative, no empty, "." or ".." components, no NUL or backslash.
bool SafeName(const std::string& name) {
  if (name.empty() || name.front() == '/') return false;
  if (name.find('\0') != std::string::npos || name.find('\\') != std::string::npos) return false;
  size_t start = 0;
  while (start < name.size()) {
    size_t end = std::min(name.find('/', start), name.size());
    const std::string part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace b2ndfs::stores;  // NOLINT
  const std::span<const uint8_t> archive(data, size);
  auto dir = ParseZipArchive(archive);
  if (!dir.ok()) {
    FUZZ_CHECK(dir.status().error_number() == EIO, "error is not EIO: " + dir.status().message());
    return 0;
  }
  FUZZ_CHECK(static_cast<int64_t>(dir->members.size()) <= kMaxZipMembers, "too many members");
  FUZZ_CHECK(dir->central_directory_offset <= static_cast<int64_t>(size), "directory past the end");
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const ZipMember& m : dir->members) {
    if (!m.problem.empty()) continue;
    FUZZ_CHECK(SafeName(m.name), "a readable member with an unsafe name");
    FUZZ_CHECK(m.method == 0 && m.size == m.compressed_size, "a readable member not stored");
    if (m.header_offset < 0 || m.header_offset > static_cast<int64_t>(size)) continue;
    auto offset = MemberDataOffset(m, archive.subspan(static_cast<size_t>(m.header_offset)));
    if (!offset.ok()) {
      FUZZ_CHECK(offset.status().error_number() == EIO, "member error is not EIO");
      continue;
    }
    FUZZ_CHECK(*offset >= m.header_offset + kZipLocalHeaderSize, "data before its local header");
    FUZZ_CHECK(*offset + m.size <= dir->central_directory_offset,
               "data of " + m.name + " past the central directory");
    FUZZ_CHECK(*offset + m.size <= static_cast<int64_t>(size), "data past the end of the file");
    ranges.emplace_back(m.header_offset, *offset + m.size);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    FUZZ_CHECK(ranges[i - 1].second <= ranges[i].first, "two readable members overlap");
  }
  return 0;
}
