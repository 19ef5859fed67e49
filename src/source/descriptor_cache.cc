#include "b2ndfs/source/descriptor_cache.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstring>

namespace b2ndfs::source {

size_t DefaultDescriptorCapacity() {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 4096;
  return std::clamp<size_t>(static_cast<size_t>(limit.rlim_cur) / 2, 16, 4096);
}

DescriptorCache::DescriptorCache(size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)), lru_({capacity_, decltype(lru_)::kUnbounded}) {
  stats_.capacity = capacity_;
}

Result<OpenFile> DescriptorCache::Open(const std::string& path, uint64_t want_device,
                                       uint64_t want_inode) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const OpenFile* cached = lru_.Peek(path)) {
      const struct stat& st = cached->st;
      if (want_inode == 0 ||
          (st.st_ino == want_inode && static_cast<uint64_t>(st.st_dev) == want_device)) {
        ++stats_.hits;
        return *lru_.Find(path);
      }
    }
  }
  auto file = File::OpenReadOnly(path);
  if (!file.ok() &&
      (file.status().error_number() == EMFILE || file.status().error_number() == ENFILE)) {
    Shrink(capacity_ / 2);
    file = File::OpenReadOnly(path);
  }
  if (!file.ok()) return file.status();
  auto stat = file->Stat();
  if (!stat.ok()) return stat.status();
  OpenFile opened{std::make_shared<const File>(std::move(file).value()), *stat};
  decltype(lru_)::Entries closing;  // closed after the lock
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.opens;
  stats_.evictions += lru_.Insert(path, opened, 1, &closing);
  return opened;
}

void DescriptorCache::Drop(const std::string& path) {
  decltype(lru_)::Entries closing;
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.Erase(path, &closing);
}

void DescriptorCache::Shrink(size_t target) {
  decltype(lru_)::Entries closing;
  std::lock_guard<std::mutex> lock(mutex_);
  while (lru_.size() > target && lru_.PopOldest(&closing)) ++stats_.evictions;
}

DescriptorStats DescriptorCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  DescriptorStats s = stats_;
  s.open_now = lru_.size();
  return s;
}

}  // namespace b2ndfs::source
