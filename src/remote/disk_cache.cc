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
#include "disk_cache_file.h"
#include "disk_cache_trust.h"

namespace b2ndfs::remote {

namespace {

// A hit re-stamps its file's mtime (its recency across restarts) at most
// this often.
constexpr int64_t kTouchSeconds = 60;

uint64_t NameKey(const std::string& text) {
  return std::stoull(Sha256Hex(text).substr(0, 16), 0, 16);
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

}  // namespace

Status DiskCache::CheckDirectory(const std::string& dir) {
  if (dir.empty()) return InvalidArgument("disk cache: no directory");
  return CheckCacheDirectory(dir);
}

Result<std::unique_ptr<DiskCache>> DiskCache::Open(const std::string& given, uint64_t capacity) {
  static_assert(std::is_same_v<Key, CacheKey>);
  static_assert(kSegmentBytes == kRangeSegmentBytes);
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
    : dir_(std::move(dir)),
      capacity_(capacity),
      lock_fd_(lock_fd),
      key_(key),
      lru_({Lru::kUnbounded, static_cast<size_t>(capacity)}) {
  counters_.capacity_bytes = capacity;
}

DiskCache::~DiskCache() { ::close(lock_fd_); }

size_t DiskCache::RangeKeyHash::operator()(const RangeKey& k) const {
  const uint64_t h = k.url_key ^ (static_cast<uint64_t>(k.range.first) * 0x9e3779b97f4a7c15ULL) ^
                     (static_cast<uint64_t>(k.range.second) * 0xc2b2ae3d27d4eb4fULL) ^ k.computed;
  return static_cast<size_t>(h ^ (h >> 29));
}

namespace {

RangeFile RangeOf(uint64_t url_key, uint64_t version_key, int64_t offset, int64_t length) {
  RangeFile r;
  r.url_key = url_key;
  r.version_key = version_key;
  r.offset = offset;
  r.length = length;
  return r;
}

}  // namespace

std::string DiskCache::PathOf(const Entry& e) const {
  const RangeFile range = RangeOf(e.url_key, e.version_key, e.offset, e.length);
  return dir_ + "/ranges/" + HexKey(e.url_key) + "/" +
         (e.computed != 0 ? ComputedFileName(range, e.computed) : RangeFileName(range));
}

namespace {

// The hash of a computed value's key: never 0 (which marks a range).
uint64_t ComputedKey(std::string_view key) {
  const uint64_t h = NameKey(std::string(key));
  return h != 0 ? h : 1;
}

}  // namespace

// The index is built from file names and sizes alone (contents are checked
// when read), oldest mtime least recently used. Under a new key, what the
// directory holds can never verify: it is all deleted.
void DiskCache::Scan(bool forget_all) {
  for (const std::string& name : ListDir(dir_ + "/tmp")) {
    ::unlink((dir_ + "/tmp/" + name).c_str());  // left by a crash
  }
  struct Found {
    int64_t mtime_ns;
    Entry entry;
    uint64_t disk_bytes;
  };
  std::vector<Found> found;
  for (const std::string& url_name : ListDir(dir_ + "/ranges")) {
    const std::string url_dir = dir_ + "/ranges/" + url_name;
    uint64_t url_key;
    if (!ParseHexKey(url_name, &url_key)) continue;
    for (const std::string& name : ListDir(url_dir)) {
      const std::string path = url_dir + "/" + name;
      RangeFile range;
      uint64_t computed = 0;
      struct stat st;
      if (forget_all ||
          !(ParseRangeFileName(name, &range) || ParseComputedFileName(name, &range, &computed)) ||
          ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        ::unlink(path.c_str());
        continue;
      }
      Entry e{url_key, range.version_key, range.offset, range.length, st.st_mtim.tv_sec, computed};
      found.push_back(Found{st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, e,
                            static_cast<uint64_t>(st.st_size)});
    }
    ::rmdir(url_dir.c_str());  // fails unless empty
  }
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.mtime_ns < b.mtime_ns; });
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Found& f : found) Insert(f.entry, f.disk_bytes);
  Evict();
}

void DiskCache::Insert(const Entry& e, uint64_t disk_bytes) {
  Object& object = objects_[e.url_key];
  if (!object.empty() && object.version != e.version_key) {
    // Another version of the URL: its ranges and values are never served
    // again.
    counters_.invalidations += object.ranges.size() + object.computed.size();
    DropObject(e.url_key);
  }
  if (e.computed != 0) {
    auto& values = objects_[e.url_key].computed;
    auto held = values.find(e.computed);
    if (held != values.end()) {
      if (held->second == e.length) return;  // stored twice by racing readers
      // The same key with another length (its file has another name): the
      // older one goes.
      Drop(RangeKey{e.url_key, {0, held->second}, e.computed});
    }
  }
  Object& fresh = objects_[e.url_key];
  fresh.version = e.version_key;
  const auto range = std::make_pair(e.offset, e.length);
  if (e.computed != 0) {
    fresh.computed[e.computed] = e.length;
  } else {
    if (!fresh.ranges.insert(range).second) return;  // stored twice by racing readers
    fresh.max_length = std::max(fresh.max_length, e.length);
  }
  Lru::Entries gone;
  try {
    counters_.evictions += lru_.Insert(KeyOf(e), e, disk_bytes, &gone);
  } catch (...) {
    // Not indexed: the file goes.
    if (e.computed != 0) {
      fresh.computed.erase(e.computed);
    } else {
      fresh.ranges.erase(range);
    }
    ::unlink(PathOf(e).c_str());
  }
  Unlink(gone);
}

void DiskCache::Unlink(const Lru::Entries& gone) {
  for (const auto& [key, e, disk_bytes] : gone) {
    ::unlink(PathOf(e).c_str());
    auto object = objects_.find(e.url_key);
    if (object == objects_.end()) continue;
    if (key.computed != 0) {
      object->second.computed.erase(key.computed);
    } else {
      object->second.ranges.erase(key.range);
    }
    if (object->second.empty()) {
      ::rmdir((dir_ + "/ranges/" + HexKey(e.url_key)).c_str());
      objects_.erase(object);
    }
  }
}

void DiskCache::Drop(const RangeKey& key) {
  Lru::Entries gone;
  lru_.Erase(key, &gone);
  Unlink(gone);
}

void DiskCache::DropObject(uint64_t url_key) {
  auto object = objects_.find(url_key);
  if (object == objects_.end()) return;
  const std::set<std::pair<int64_t, int64_t>> ranges = object->second.ranges;
  const std::map<uint64_t, int64_t> computed = object->second.computed;
  for (const auto& range : ranges) Drop(RangeKey{url_key, range});
  for (const auto& [hash, length] : computed) Drop(RangeKey{url_key, {0, length}, hash});
  objects_.erase(url_key);
}

void DiskCache::Evict() {
  Lru::Entries gone;
  counters_.evictions += lru_.Trim(&gone);
  Unlink(gone);
}

void DiskCache::Forget(const std::string& url) {
  const uint64_t url_key = NameKey(RedactUrl(url));
  std::lock_guard<std::mutex> lock(mutex_);
  auto object = objects_.find(url_key);
  if (object == objects_.end()) return;
  counters_.invalidations += object->second.ranges.size() + object->second.computed.size();
  DropObject(url_key);
}

bool DiskCache::ReadEntry(const Entry& e, const std::string& etag, int64_t offset, size_t length,
                          uint8_t* out) const {
  return ReadRangeFile(PathOf(e), key_, RangeOf(e.url_key, e.version_key, e.offset, e.length), etag,
                       offset, length, out);
}

bool DiskCache::Store(const Entry& e, const std::string& etag, const uint8_t* bytes) {
  const uint64_t length = static_cast<uint64_t>(e.length);
  if (length == 0 || length > capacity_ / 4) return false;
  const RangeFile range = RangeOf(e.url_key, e.version_key, e.offset, e.length);
  std::string temp;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    temp = dir_ + "/tmp/" + std::to_string(::getpid()) + "." + std::to_string(++temp_counter_);
  }
  bool ok = WriteRangeFile(temp, key_, range, etag, bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  // Renamed under the lock, so that the index and the directory agree (a
  // concurrent Drop of the URL cannot miss this file).
  if (ok) ok = MakeDir(dir_ + "/ranges/" + HexKey(e.url_key)).ok();
  if (ok) ok = ::rename(temp.c_str(), PathOf(e).c_str()) == 0;
  if (!ok) {
    ::unlink(temp.c_str());
    counters_.write_errors++;
    return false;
  }
  if (e.computed != 0) {
    counters_.computed_stored++;
  } else {
    counters_.bytes_stored += length;
  }
  Insert(e, RangeFileBytes(range, etag.size()));
  Evict();
  return true;
}

void DiskCache::Touch(const std::vector<Entry>& held) {
  const int64_t now = static_cast<int64_t>(::time(nullptr));
  for (const Entry& e : held) {
    if (now - e.touched < kTouchSeconds) continue;
    Entry* indexed = lru_.Peek(KeyOf(e));
    if (indexed == nullptr) continue;
    indexed->touched = now;
    ::utimensat(AT_FDCWD, PathOf(*indexed).c_str(), nullptr, 0);
  }
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
      const std::pair<int64_t, int64_t>* best = nullptr;
      int64_t best_end = pos;
      int64_t next_start = end;
      if (usable) {
        const Object& o = object->second;
        for (auto it = o.ranges.lower_bound({pos - o.max_length, 0});
             it != o.ranges.end() && it->first < end; ++it) {
          const int64_t b = it->first, e = b + it->second;
          if (b <= pos && e > best_end) {
            best = &*it;
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
      // The object's ranges and the LRU hold the same keys (Insert, Unlink).
      pieces.push_back(Piece{*lru_.Find(RangeKey{url_key, *best}), pos, piece_end});
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
      Drop(RangeKey{url_key, {p.entry.offset, p.entry.length}});
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
    std::vector<Entry> held;
    for (const Piece& p : pieces) held.push_back(p.entry);
    Touch(held);
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
  Store(Entry{url_key, version_key, gap_begin, static_cast<int64_t>(gap_length),
              static_cast<int64_t>(::time(nullptr))},
        etag, out + (gap_begin - offset));
  return Status::Ok();
}

bool DiskCache::HoldsComputed(const std::string& url, const std::string& etag, int64_t size,
                              std::string_view key) {
  if (etag.empty()) return false;
  const uint64_t url_key = NameKey(RedactUrl(url));
  const uint64_t version_key = NameKey(etag + "\n" + std::to_string(size));
  std::lock_guard<std::mutex> lock(mutex_);
  auto object = objects_.find(url_key);
  return object != objects_.end() && object->second.version == version_key &&
         object->second.computed.count(ComputedKey(key)) != 0;
}

bool DiskCache::ReadComputed(const std::string& url, const std::string& etag, int64_t size,
                             std::string_view key, std::span<uint8_t> out) {
  if (etag.empty() || out.empty()) return false;
  const uint64_t url_key = NameKey(RedactUrl(url));
  const uint64_t version_key = NameKey(etag + "\n" + std::to_string(size));
  const uint64_t computed = ComputedKey(key);
  Entry e;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto object = objects_.find(url_key);
    if (object == objects_.end() || object->second.version != version_key) return false;
    auto held = object->second.computed.find(computed);
    if (held == object->second.computed.end() || held->second != static_cast<int64_t>(out.size())) {
      return false;
    }
    e = *lru_.Find(RangeKey{url_key, {0, held->second}, computed});
  }
  if (!ReadEntry(e, ComputedEtagField(etag, key), 0, out.size(), out.data())) {
    std::lock_guard<std::mutex> lock(mutex_);
    counters_.corrupt++;
    Drop(KeyOf(e));
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.computed_hits++;
  Touch({e});
  return true;
}

void DiskCache::StoreComputed(const std::string& url, const std::string& etag, int64_t size,
                              std::string_view key, std::span<const uint8_t> bytes) {
  if (etag.empty() || bytes.empty()) return;
  Store(Entry{NameKey(RedactUrl(url)), NameKey(etag + "\n" + std::to_string(size)), 0,
              static_cast<int64_t>(bytes.size()), static_cast<int64_t>(::time(nullptr)),
              ComputedKey(key)},
        ComputedEtagField(etag, key), bytes.data());
}

DiskCacheStats DiskCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  DiskCacheStats s = counters_;
  s.capacity_bytes = capacity_;
  s.bytes_on_disk = lru_.weight();
  s.entries = lru_.size();
  return s;
}

}  // namespace b2ndfs::remote
