// remote/disk_cache_file (private to remote): one range file of a disk
// cache (disk_cache.h): its name, its header and segment tags, writing it
// and reading it back verified.
//
// Layout: a fixed header (magic, format version, sizes, the range's place),
// the ETag, one HMAC-SHA256 tag (disk_cache_trust.h) per kSegmentBytes of
// the range, the tag of all of the header before it; then the range's bytes.
// A segment's tag binds its bytes to their object, version and place, so a
// file moved, altered, torn or cut short never verifies.
// Errors: none of these report why; a false is a miss (the caller deletes
// the file and fetches the bytes).
// Thread-safety: pure functions over files the caller names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "disk_cache_trust.h"

namespace b2ndfs::remote {

// Bytes of a range covered by one tag.
constexpr size_t kRangeSegmentBytes = 64 << 10;

// Which bytes a range file holds: `length` bytes at `offset` of the object
// whose redacted URL hashes to `url_key`, at the version (ETag and size)
// hashing to `version_key`.
struct RangeFile {
  uint64_t url_key = 0;
  uint64_t version_key = 0;
  int64_t offset = 0;
  int64_t length = 0;
};

// 16 lower-case hex digits, as file names use them; ParseHexKey is strict.
std::string HexKey(uint64_t v);
bool ParseHexKey(const std::string& text, uint64_t* out);

// The file's name in its URL's directory (HexKey(url_key)): the version,
// offset and length in hex. ParseRangeFileName fills all but url_key; false
// for any other name.
std::string RangeFileName(const RangeFile& range);
bool ParseRangeFileName(const std::string& name, RangeFile* range);

// A computed value's file (disk_cache.h): "c-" + the version, the hash of
// its key and its length in hex; the value is a range at offset 0 whose
// header names, in place of the ETag, the ETag and the key
// (ComputedEtagField), so that a value is never read as a range, nor under
// another key. ParseComputedFileName fills all but url_key.
std::string ComputedFileName(const RangeFile& range, uint64_t computed);
bool ParseComputedFileName(const std::string& name, RangeFile* range, uint64_t* computed);
std::string ComputedEtagField(const std::string& etag, std::string_view key);

// What the file of `range` at version `etag` takes on disk.
uint64_t RangeFileBytes(const RangeFile& range, size_t etag_length);

// Writes the file of `range` (its `range.length` bytes at `bytes`) at
// `path`, created exclusively with mode 0600; false when a tag cannot be
// computed or a write fails (the caller unlinks `path`).
bool WriteRangeFile(const std::string& path, const CacheKey& key, const RangeFile& range,
                    const std::string& etag, const uint8_t* bytes);

// Copies `length` bytes at `offset` (within the range) from the file at
// `path` into `out`, after checking the header and every segment they
// touch against `key`, and that the file holds `range` at `etag` exactly.
bool ReadRangeFile(const std::string& path, const CacheKey& key, const RangeFile& range,
                   const std::string& etag, int64_t offset, size_t length, uint8_t* out);

}  // namespace b2ndfs::remote
