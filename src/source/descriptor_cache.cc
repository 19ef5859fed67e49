#include "b2ndfs/source/descriptor_cache.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace b2ndfs::source {

size_t DefaultDescriptorCapacity() {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 4096;
  return std::clamp<size_t>(static_cast<size_t>(limit.rlim_cur) / 2, 16, 4096);
}

DescriptorCache::DescriptorCache(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {
  stats_.capacity = capacity_;
}

Result<OpenFile> DescriptorCache::Open(const std::string& path, uint64_t want_device,
                                       uint64_t want_inode) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(path);
    if (it != index_.end()) {
      const struct stat& st = it->second->open.st;
      if (want_inode == 0 ||
          (st.st_ino == want_inode && static_cast<uint64_t>(st.st_dev) == want_device)) {
        lru_.splice(lru_.begin(), lru_, it->second);
        ++stats_.hits;
        return it->second->open;
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
  std::vector<std::shared_ptr<const File>> closing;  // closed after the lock
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.opens;
    auto it = index_.find(path);
    if (it != index_.end()) {
      closing.push_back(std::move(it->second->open.file));
      lru_.erase(it->second);
      index_.erase(it);
    }
    lru_.push_front(Entry{path, opened});
    index_[path] = lru_.begin();
    while (lru_.size() > capacity_) {
      closing.push_back(std::move(lru_.back().open.file));
      index_.erase(lru_.back().path);
      lru_.pop_back();
      ++stats_.evictions;
    }
  }
  return opened;
}

void DescriptorCache::Drop(const std::string& path) {
  std::shared_ptr<const File> closing;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(path);
  if (it == index_.end()) return;
  closing = std::move(it->second->open.file);
  lru_.erase(it->second);
  index_.erase(it);
}

void DescriptorCache::Shrink(size_t target) {
  std::vector<std::shared_ptr<const File>> closing;
  std::lock_guard<std::mutex> lock(mutex_);
  while (lru_.size() > target) {
    closing.push_back(std::move(lru_.back().open.file));
    index_.erase(lru_.back().path);
    lru_.pop_back();
    ++stats_.evictions;
  }
}

DescriptorStats DescriptorCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  DescriptorStats s = stats_;
  s.open_now = lru_.size();
  return s;
}

}  // namespace b2ndfs::source
