#include "disk_cache_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

namespace b2ndfs::remote {
namespace {

constexpr char kMagic[8] = {'B', '2', 'N', 'D', 'F', 'S', 'D', 'C'};
// 2: HMAC-SHA256 tags under the directory's key (1: unkeyed checksums,
// whose files are deleted with the directory's first key).
constexpr uint32_t kFormatVersion = 2;

// The fixed part of a range file's header; then the ETag, one tag per
// segment, and the tag of all of the header before it.
struct FixedHeader {
  char magic[8];
  uint32_t format_version;
  uint32_t header_size;
  uint64_t url_key;
  uint64_t version_key;
  int64_t offset;
  int64_t length;
  uint32_t etag_length;
  uint32_t segment_bytes;
};

bool PreadAll(int fd, uint8_t* out, size_t n, int64_t at) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, out, n, at);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    n -= static_cast<size_t>(got);
    at += got;
  }
  return true;
}

bool WriteAll(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t put = ::write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

size_t SegmentCount(int64_t length) {
  return static_cast<size_t>((length + kRangeSegmentBytes - 1) / kRangeSegmentBytes);
}

size_t HeaderSize(size_t etag_length, int64_t length) {
  return sizeof(FixedHeader) + etag_length + kCacheTagBytes * SegmentCount(length) + kCacheTagBytes;
}

std::string_view View(const void* p, size_t n) {
  return std::string_view(static_cast<const char*>(p), n);
}

// A segment's tag binds its bytes to their object, version and place.
std::optional<CacheTag> SegmentTag(const CacheKey& key, uint64_t url_key, uint64_t version_key,
                                   int64_t begin, const uint8_t* bytes, size_t n) {
  const uint64_t place[3] = {url_key, version_key, static_cast<uint64_t>(begin)};
  return ComputeTag(key, {View(place, sizeof place), View(bytes, n)});
}

// The header of `range`'s file, tags included; nullopt when a tag cannot be
// computed.
std::optional<std::vector<uint8_t>> MakeHeader(const CacheKey& key, const RangeFile& range,
                                               const std::string& etag, const uint8_t* bytes) {
  const size_t length = static_cast<size_t>(range.length);
  const size_t header_size = HeaderSize(etag.size(), range.length);
  std::vector<uint8_t> header(header_size);
  FixedHeader fixed{};
  std::memcpy(fixed.magic, kMagic, 8);
  fixed.format_version = kFormatVersion;
  fixed.header_size = static_cast<uint32_t>(header_size);
  fixed.url_key = range.url_key;
  fixed.version_key = range.version_key;
  fixed.offset = range.offset;
  fixed.length = range.length;
  fixed.etag_length = static_cast<uint32_t>(etag.size());
  fixed.segment_bytes = kRangeSegmentBytes;
  std::memcpy(header.data(), &fixed, sizeof fixed);
  std::memcpy(header.data() + sizeof fixed, etag.data(), etag.size());
  for (size_t s = 0; s < SegmentCount(fixed.length); ++s) {
    const size_t begin = s * kRangeSegmentBytes;
    const auto tag = SegmentTag(key, range.url_key, range.version_key,
                                range.offset + static_cast<int64_t>(begin), bytes + begin,
                                std::min(kRangeSegmentBytes, length - begin));
    if (!tag) return std::nullopt;
    std::memcpy(header.data() + sizeof fixed + etag.size() + kCacheTagBytes * s, tag->data(),
                kCacheTagBytes);
  }
  const auto header_tag = ComputeTag(key, {View(header.data(), header_size - kCacheTagBytes)});
  if (!header_tag) return std::nullopt;
  std::memcpy(header.data() + header_size - kCacheTagBytes, header_tag->data(), kCacheTagBytes);
  return header;
}

}  // namespace

std::string HexKey(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, v);
  return text;
}

bool ParseHexKey(const std::string& text, uint64_t* out) {
  if (text.size() != 16) return false;
  uint64_t v = 0;
  for (char c : text) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return false;
    }
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

std::string RangeFileName(const RangeFile& range) {
  return HexKey(range.version_key) + "-" + HexKey(static_cast<uint64_t>(range.offset)) + "-" +
         HexKey(static_cast<uint64_t>(range.length));
}

bool ParseRangeFileName(const std::string& name, RangeFile* range) {
  uint64_t offset, length;
  if (name.size() != 50 || name[16] != '-' || name[33] != '-' ||
      !ParseHexKey(name.substr(0, 16), &range->version_key) ||
      !ParseHexKey(name.substr(17, 16), &offset) || !ParseHexKey(name.substr(34, 16), &length)) {
    return false;
  }
  range->offset = static_cast<int64_t>(offset);
  range->length = static_cast<int64_t>(length);
  return true;
}

std::string ComputedFileName(const RangeFile& range, uint64_t computed) {
  return "c-" + HexKey(range.version_key) + "-" + HexKey(computed) + "-" +
         HexKey(static_cast<uint64_t>(range.length));
}

bool ParseComputedFileName(const std::string& name, RangeFile* range, uint64_t* computed) {
  uint64_t length;
  if (name.size() != 52 || name.compare(0, 2, "c-") != 0 || name[18] != '-' || name[35] != '-' ||
      !ParseHexKey(name.substr(2, 16), &range->version_key) ||
      !ParseHexKey(name.substr(19, 16), computed) || !ParseHexKey(name.substr(36, 16), &length) ||
      *computed == 0) {
    return false;
  }
  range->offset = 0;
  range->length = static_cast<int64_t>(length);
  return true;
}

std::string ComputedEtagField(const std::string& etag, std::string_view key) {
  // An ETag holds no NUL (an HTTP header value), so the split is unambiguous.
  std::string field = etag;
  field += '\0';
  field.append(key);
  return field;
}

uint64_t RangeFileBytes(const RangeFile& range, size_t etag_length) {
  return HeaderSize(etag_length, range.length) + static_cast<uint64_t>(range.length);
}

bool WriteRangeFile(const std::string& path, const CacheKey& key, const RangeFile& range,
                    const std::string& etag, const uint8_t* bytes) {
  const auto header = MakeHeader(key, range, etag, bytes);
  if (!header) return false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && WriteAll(fd, header->data(), header->size()) &&
            WriteAll(fd, bytes, static_cast<size_t>(range.length));
  if (fd >= 0) ok = ::close(fd) == 0 && ok;
  return ok;
}

bool ReadRangeFile(const std::string& path, const CacheKey& key, const RangeFile& e,
                   const std::string& etag, int64_t offset, size_t length, uint8_t* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const size_t header_size = HeaderSize(etag.size(), e.length);
  std::vector<uint8_t> header(header_size);
  bool ok = PreadAll(fd, header.data(), header_size, 0);
  FixedHeader fixed;
  if (ok) {
    // The tag first: nothing else of a file is believed before it verifies.
    const auto header_tag = ComputeTag(key, {View(header.data(), header_size - kCacheTagBytes)});
    ok = header_tag && SameTag(*header_tag, header.data() + header_size - kCacheTagBytes);
  }
  if (ok) {
    std::memcpy(&fixed, header.data(), sizeof fixed);
    ok = std::memcmp(fixed.magic, kMagic, 8) == 0 && fixed.format_version == kFormatVersion &&
         fixed.header_size == header_size && fixed.url_key == e.url_key &&
         fixed.version_key == e.version_key && fixed.offset == e.offset &&
         fixed.length == e.length && fixed.etag_length == etag.size() &&
         fixed.segment_bytes == kRangeSegmentBytes &&
         std::memcmp(header.data() + sizeof fixed, etag.data(), etag.size()) == 0;
  }
  // Whole segments are read and checked; only the asked-for bytes copied.
  const int64_t segment_bytes = static_cast<int64_t>(kRangeSegmentBytes);
  const int64_t first_seg = (offset - e.offset) / segment_bytes;
  const int64_t end = offset + static_cast<int64_t>(length);
  std::vector<uint8_t> segment;
  for (int64_t s = first_seg; ok && e.offset + s * segment_bytes < end; ++s) {
    const int64_t seg_begin = e.offset + s * segment_bytes;
    const int64_t seg_end = std::min(seg_begin + segment_bytes, e.offset + e.length);
    segment.resize(static_cast<size_t>(seg_end - seg_begin));
    ok = PreadAll(fd, segment.data(), segment.size(),
                  static_cast<int64_t>(header_size) + (seg_begin - e.offset));
    const auto tag =
        ok ? SegmentTag(key, e.url_key, e.version_key, seg_begin, segment.data(), segment.size())
           : std::nullopt;
    ok = tag && SameTag(*tag, header.data() + sizeof fixed + etag.size() +
                                  kCacheTagBytes * static_cast<size_t>(s));
    if (!ok) break;
    const int64_t from = std::max(seg_begin, offset);
    const int64_t to = std::min(seg_end, end);
    std::memcpy(out + (from - offset), segment.data() + (from - seg_begin),
                static_cast<size_t>(to - from));
  }
  if (ok) {
    // A file cut short after its last segment would still read above;
    // its size must be exact.
    struct stat st;
    ok = ::fstat(fd, &st) == 0 &&
         st.st_size == static_cast<off_t>(header_size) + static_cast<off_t>(e.length);
  }
  ::close(fd);
  return ok;
}

}  // namespace b2ndfs::remote
