// store/pin_budget: a mount-wide limit on the bytes of decompressed blocks
// that readers hold outside the cache while they copy from them, so that
// memory stays within cache_size plus this bound whatever the access pattern.
//
// A reader acquires a whole batch at once and releases it before asking for
// more (no hold-and-wait), so readers cannot deadlock; a batch larger than
// the limit is admitted alone.
// Thread-safety: all methods may be called from any thread.
// Lock order: mutex_ is a leaf lock.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace b2ndfs::store {

class PinBudget {
 public:
  explicit PinBudget(size_t limit_bytes) : limit_(limit_bytes) {}

  void Acquire(size_t bytes) {
    std::unique_lock<std::mutex> lock(mutex_);
    released_.wait(lock, [&] { return used_ == 0 || used_ + bytes <= limit_; });
    used_ += bytes;
    if (used_ > peak_) peak_ = used_;
  }
  void Release(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      used_ -= bytes;
    }
    released_.notify_all();
  }
  size_t used() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return used_;
  }
  size_t peak() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }
  size_t limit() const { return limit_; }

 private:
  const size_t limit_;
  mutable std::mutex mutex_;
  std::condition_variable released_;
  size_t used_ = 0;
  size_t peak_ = 0;
};

}  // namespace b2ndfs::store
