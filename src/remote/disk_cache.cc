#include "b2ndfs/remote/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "b2ndfs/remote/http_client.h"
#include "b2ndfs/remote/sigv4.h"
#include "b2ndfs/util/log.h"
#include "disk_cache_trust.h"

namespace b2ndfs::remote {

struct DiskCache::Entry {
  uint64_t url_key = 0;
  uint64_t version_key = 0;
  int64_t offset = 0;
  int64_t length = 0;
  uint64_t disk_bytes = 0;
  int64_t touched = 0;  // seconds since the epoch of the mtime we last set
};

namespace {

constexpr char kMagic[8] = {'B', '2', 'N', 'D', 'F', 'S', 'D', 'C'};
// 2: HMAC-SHA256 tags under the directory's key (1: unkeyed checksums,
// whose files are deleted with the directory's first key).
constexpr uint32_t kFormatVersion = 2;
// A hit re-stamps its file's mtime (its recency across restarts) at most
// this often.
constexpr int64_t kTouchSeconds = 60;

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

uint64_t NameKey(const std::string& text) {
  return std::stoull(Sha256Hex(text).substr(0, 16), 0, 16);
}

std::string Hex(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, v);
  return text;
}

bool ParseHex(const std::string& text, uint64_t* out) {
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

Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return Status::Ok();
  const int e = errno;
  return Status(e, "disk cache: mkdir " + path + ": " + std::strerror(e));
}

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> names;
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return names;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      names.emplace_back(e->d_name);
    }
  }
  ::closedir(d);
  return names;
}

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
  return static_cast<size_t>((length + DiskCache::kSegmentBytes - 1) / DiskCache::kSegmentBytes);
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

}  // namespace

Status DiskCache::CheckDirectory(const std::string& dir) {
  if (dir.empty()) return InvalidArgument("disk cache: no directory");
  return CheckCacheDirectory(dir);
}

Result<std::unique_ptr<DiskCache>> DiskCache::Open(const std::string& given, uint64_t capacity) {
  static_assert(std::is_same_v<Key, CacheKey>);
  B2NDFS_RETURN_IF_ERROR(CheckDirectory(given));
  // Absolute: a daemon changes to / once it detaches.
  char* real = ::realpath(given.c_str(), nullptr);
  if (real == nullptr) {
    const int e = errno;
    return Status(e, "disk cache: " + given + ": " + std::strerror(e));
  }
  const std::string dir = real;
  std::free(real);
  const std::string lock_path = dir + "/lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;
    return Status(e, "disk cache: " + lock_path + ": " + std::strerror(e));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    ::close(fd);
    if (e == EWOULDBLOCK) {
      return Status(EBUSY, "disk cache " + dir + " is in use by another b2ndfs daemon");
    }
    return Status(e, "disk cache: flock " + lock_path + ": " + std::strerror(e));
  }
  // Read (or made) under the lock: two daemons never make two keys.
  bool new_key = false;
  auto key = LoadCacheKey(dir, &new_key);
  Status s = key.status();
  if (s.ok() && !ComputeTag(*key, {"test"})) {
    s = Status(ENOSYS, "disk cache: OpenSSL computes no HMAC-SHA256 here");
  }
  for (const char* sub : {"/ranges", "/tmp"}) {
    if (s.ok()) s = MakeDir(dir + sub);
  }
  if (!s.ok()) {
    ::close(fd);
    return s;
  }
  std::unique_ptr<DiskCache> cache(new DiskCache(dir, capacity, fd, *key));
  cache->Scan(new_key);
  return cache;
}

DiskCache::DiskCache(std::string dir, uint64_t capacity, int lock_fd, const Key& key)
    : dir_(std::move(dir)), capacity_(capacity), lock_fd_(lock_fd), key_(key) {
  counters_.capacity_bytes = capacity;
}

DiskCache::~DiskCache() { ::close(lock_fd_); }

std::string DiskCache::PathOf(const Entry& e) const {
  return dir_ + "/ranges/" + Hex(e.url_key) + "/" + Hex(e.version_key) + "-" +
         Hex(static_cast<uint64_t>(e.offset)) + "-" + Hex(static_cast<uint64_t>(e.length));
}

// The index is built from file names and sizes alone (contents are checked
// when read), oldest mtime least recently used. Under a new key, what the
// directory holds can never verify: it is all deleted.
void DiskCache::Scan(bool forget_all) {
  for (const std::string& name : ListDir(dir_ + "/tmp")) {
    ::unlink((dir_ + "/tmp/" + name).c_str());  // left by a crash
  }
  std::vector<std::pair<int64_t, Entry>> found;
  for (const std::string& url_name : ListDir(dir_ + "/ranges")) {
    const std::string url_dir = dir_ + "/ranges/" + url_name;
    uint64_t url_key;
    if (!ParseHex(url_name, &url_key)) continue;
    for (const std::string& name : ListDir(url_dir)) {
      const std::string path = url_dir + "/" + name;
      Entry e;
      e.url_key = url_key;
      uint64_t offset, length;
      struct stat st;
      if (forget_all || name.size() != 50 || name[16] != '-' || name[33] != '-' ||
          !ParseHex(name.substr(0, 16), &e.version_key) ||
          !ParseHex(name.substr(17, 16), &offset) || !ParseHex(name.substr(34, 16), &length) ||
          ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        ::unlink(path.c_str());
        continue;
      }
      e.offset = static_cast<int64_t>(offset);
      e.length = static_cast<int64_t>(length);
      e.disk_bytes = static_cast<uint64_t>(st.st_size);
      e.touched = st.st_mtim.tv_sec;
      found.emplace_back(st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, e);
    }
    ::rmdir(url_dir.c_str());  // fails unless empty
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [mtime, e] : found) Insert(e);
  Evict();
}

void DiskCache::Insert(Entry e) {
  Object& object = objects_[e.url_key];
  if (!object.ranges.empty() && object.version != e.version_key) {
    // Another version of the URL: its ranges are never served again.
    counters_.invalidations += object.ranges.size();
    DropObject(e.url_key);
  }
  Object& fresh = objects_[e.url_key];
  fresh.version = e.version_key;
  const auto key = std::make_pair(e.offset, e.length);
  if (fresh.ranges.count(key) != 0) return;  // stored twice by racing readers
  lru_.push_front(e);
  fresh.ranges.emplace(key, lru_.begin());
  fresh.max_length = std::max(fresh.max_length, e.length);
  bytes_on_disk_ += e.disk_bytes;
}

void DiskCache::Drop(EntryList::iterator it) {
  ::unlink(PathOf(*it).c_str());
  bytes_on_disk_ -= std::min(bytes_on_disk_, it->disk_bytes);
  auto object = objects_.find(it->url_key);
  if (object != objects_.end()) {
    object->second.ranges.erase(std::make_pair(it->offset, it->length));
    if (object->second.ranges.empty()) {
      ::rmdir((dir_ + "/ranges/" + Hex(it->url_key)).c_str());
      objects_.erase(object);
    }
  }
  lru_.erase(it);
}

void DiskCache::DropObject(uint64_t url_key) {
  auto object = objects_.find(url_key);
  if (object == objects_.end()) return;
  std::vector<EntryList::iterator> entries;
  for (auto& [key, it] : object->second.ranges) entries.push_back(it);
  for (auto it : entries) Drop(it);
  objects_.erase(url_key);
}

void DiskCache::Evict() {
  while (bytes_on_disk_ > capacity_ && !lru_.empty()) {
    Drop(std::prev(lru_.end()));
    counters_.evictions++;
  }
}

void DiskCache::Forget(const std::string& url) {
  const uint64_t url_key = NameKey(RedactUrl(url));
  std::lock_guard<std::mutex> lock(mutex_);
  auto object = objects_.find(url_key);
  if (object == objects_.end()) return;
  counters_.invalidations += object->second.ranges.size();
  DropObject(url_key);
}

bool DiskCache::ReadEntry(const Entry& e, const std::string& etag, int64_t offset, size_t length,
                          uint8_t* out) const {
  const std::string path = PathOf(e);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const size_t header_size = HeaderSize(etag.size(), e.length);
  std::vector<uint8_t> header(header_size);
  bool ok = PreadAll(fd, header.data(), header_size, 0);
  FixedHeader fixed;
  if (ok) {
    // The tag first: nothing else of a file is believed before it verifies.
    const auto header_tag = ComputeTag(key_, {View(header.data(), header_size - kCacheTagBytes)});
    ok = header_tag && SameTag(*header_tag, header.data() + header_size - kCacheTagBytes);
  }
  if (ok) {
    std::memcpy(&fixed, header.data(), sizeof fixed);
    ok = std::memcmp(fixed.magic, kMagic, 8) == 0 && fixed.format_version == kFormatVersion &&
         fixed.header_size == header_size && fixed.url_key == e.url_key &&
         fixed.version_key == e.version_key && fixed.offset == e.offset &&
         fixed.length == e.length && fixed.etag_length == etag.size() &&
         fixed.segment_bytes == kSegmentBytes &&
         std::memcmp(header.data() + sizeof fixed, etag.data(), etag.size()) == 0;
  }
  // Whole segments are read and checked; only the asked-for bytes copied.
  const int64_t first_seg = (offset - e.offset) / static_cast<int64_t>(kSegmentBytes);
  const int64_t end = offset + static_cast<int64_t>(length);
  std::vector<uint8_t> segment;
  for (int64_t s = first_seg; ok && e.offset + s * static_cast<int64_t>(kSegmentBytes) < end; ++s) {
    const int64_t seg_begin = e.offset + s * static_cast<int64_t>(kSegmentBytes);
    const int64_t seg_end =
        std::min(seg_begin + static_cast<int64_t>(kSegmentBytes), e.offset + e.length);
    segment.resize(static_cast<size_t>(seg_end - seg_begin));
    ok = PreadAll(fd, segment.data(), segment.size(),
                  static_cast<int64_t>(header_size) + (seg_begin - e.offset));
    const auto tag =
        ok ? SegmentTag(key_, e.url_key, e.version_key, seg_begin, segment.data(), segment.size())
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

void DiskCache::Store(uint64_t url_key, uint64_t version_key, const std::string& etag,
                      int64_t offset, const uint8_t* bytes, size_t length) {
  if (length == 0 || length > capacity_ / 4) return;
  const size_t header_size = HeaderSize(etag.size(), static_cast<int64_t>(length));
  std::vector<uint8_t> header(header_size);
  FixedHeader fixed{};
  std::memcpy(fixed.magic, kMagic, 8);
  fixed.format_version = kFormatVersion;
  fixed.header_size = static_cast<uint32_t>(header_size);
  fixed.url_key = url_key;
  fixed.version_key = version_key;
  fixed.offset = offset;
  fixed.length = static_cast<int64_t>(length);
  fixed.etag_length = static_cast<uint32_t>(etag.size());
  fixed.segment_bytes = kSegmentBytes;
  std::memcpy(header.data(), &fixed, sizeof fixed);
  std::memcpy(header.data() + sizeof fixed, etag.data(), etag.size());
  Entry e;
  e.url_key = url_key;
  e.version_key = version_key;
  e.offset = offset;
  e.length = static_cast<int64_t>(length);
  e.disk_bytes = header_size + length;
  e.touched = static_cast<int64_t>(::time(nullptr));
  bool tagged = true;
  for (size_t s = 0; tagged && s < SegmentCount(fixed.length); ++s) {
    const size_t begin = s * kSegmentBytes;
    const auto tag = SegmentTag(key_, url_key, version_key, offset + static_cast<int64_t>(begin),
                                bytes + begin, std::min(kSegmentBytes, length - begin));
    tagged = tag.has_value();
    if (tagged) {
      std::memcpy(header.data() + sizeof fixed + etag.size() + kCacheTagBytes * s, tag->data(),
                  kCacheTagBytes);
    }
  }
  const auto header_tag =
      tagged ? ComputeTag(key_, {View(header.data(), header_size - kCacheTagBytes)}) : std::nullopt;
  if (!header_tag) {
    std::lock_guard<std::mutex> lock(mutex_);
    counters_.write_errors++;
    return;
  }
  std::memcpy(header.data() + header_size - kCacheTagBytes, header_tag->data(), kCacheTagBytes);
  std::string temp;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    temp = dir_ + "/tmp/" + std::to_string(::getpid()) + "." + std::to_string(++temp_counter_);
  }
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && WriteAll(fd, header.data(), header_size) && WriteAll(fd, bytes, length);
  if (fd >= 0) ok = ::close(fd) == 0 && ok;
  std::lock_guard<std::mutex> lock(mutex_);
  // Renamed under the lock, so that the index and the directory agree (a
  // concurrent Drop of the URL cannot miss this file).
  if (ok) ok = MakeDir(dir_ + "/ranges/" + Hex(url_key)).ok();
  if (ok) ok = ::rename(temp.c_str(), PathOf(e).c_str()) == 0;
  if (!ok) {
    ::unlink(temp.c_str());
    counters_.write_errors++;
    return;
  }
  counters_.bytes_stored += length;
  Insert(e);
  Evict();
}

Status DiskCache::Read(const std::string& url, const std::string& etag, int64_t size,
                       int64_t offset, size_t length, uint8_t* out, const Fetch& fetch) {
  if (etag.empty() || length == 0) return fetch(offset, length, out);
  const uint64_t url_key = NameKey(RedactUrl(url));
  const uint64_t version_key = NameKey(etag + "\n" + std::to_string(size));
  const int64_t end = offset + static_cast<int64_t>(length);
  // The held ranges that cover [offset, end), and the span of what is not.
  struct Piece {
    Entry entry;
    int64_t begin, end;
  };
  std::vector<Piece> pieces;
  int64_t gap_begin = -1, gap_end = -1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto object = objects_.find(url_key);
    const bool usable = object != objects_.end() && object->second.version == version_key;
    int64_t pos = offset;
    while (pos < end) {
      const EntryList::iterator* best = nullptr;
      int64_t best_end = pos;
      int64_t next_start = end;
      if (usable) {
        const Object& o = object->second;
        for (auto it = o.ranges.lower_bound({pos - o.max_length, 0});
             it != o.ranges.end() && it->first.first < end; ++it) {
          const int64_t b = it->first.first, e = b + it->first.second;
          if (b <= pos && e > best_end) {
            best = &it->second;
            best_end = e;
          } else if (b > pos) {
            next_start = std::min(next_start, b);
          }
        }
      }
      if (best == nullptr) {
        if (gap_begin < 0) gap_begin = pos;
        gap_end = std::min(next_start, end);
        pos = gap_end;
        continue;
      }
      const int64_t piece_end = std::min(best_end, end);
      pieces.push_back(Piece{**best, pos, piece_end});
      lru_.splice(lru_.begin(), lru_, *best);
      pos = piece_end;
    }
  }
  bool disk_ok = true;
  for (const Piece& p : pieces) {
    if (gap_begin >= 0 && p.begin >= gap_begin && p.end <= gap_end) continue;  // fetched anyway
    if (!ReadEntry(p.entry, etag, p.begin, static_cast<size_t>(p.end - p.begin),
                   out + (p.begin - offset))) {
      std::lock_guard<std::mutex> lock(mutex_);
      counters_.corrupt++;
      auto object = objects_.find(url_key);
      if (object != objects_.end()) {
        auto it = object->second.ranges.find({p.entry.offset, p.entry.length});
        if (it != object->second.ranges.end()) Drop(it->second);
      }
      disk_ok = false;
      break;
    }
  }
  if (!disk_ok) {
    // A bad file: the whole read from the network, kept afresh.
    gap_begin = offset;
    gap_end = end;
  }
  if (gap_begin < 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    counters_.hits++;
    counters_.bytes_hit += length;
    const int64_t now = static_cast<int64_t>(::time(nullptr));
    for (const Piece& p : pieces) {
      if (now - p.entry.touched < kTouchSeconds) continue;
      auto object = objects_.find(url_key);
      if (object == objects_.end()) break;
      auto it = object->second.ranges.find({p.entry.offset, p.entry.length});
      if (it == object->second.ranges.end()) continue;
      it->second->touched = now;
      ::utimensat(AT_FDCWD, PathOf(*it->second).c_str(), nullptr, 0);
    }
    return Status::Ok();
  }
  const size_t gap_length = static_cast<size_t>(gap_end - gap_begin);
  B2NDFS_RETURN_IF_ERROR(fetch(gap_begin, gap_length, out + (gap_begin - offset)));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    counters_.misses++;
    counters_.bytes_hit += length - gap_length;
    counters_.bytes_missed += gap_length;
  }
  Store(url_key, version_key, etag, gap_begin, out + (gap_begin - offset), gap_length);
  return Status::Ok();
}

DiskCacheStats DiskCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  DiskCacheStats s = counters_;
  s.capacity_bytes = capacity_;
  s.bytes_on_disk = bytes_on_disk_;
  s.entries = lru_.size();
  return s;
}

}  // namespace b2ndfs::remote
