// store/pin_budget: a mount-wide limit on the bytes of decompressed blocks
// that readers hold outside the cache while they copy from them, so that
// memory stays within cache_size plus this bound whatever the access pattern.
//
// A reader acquires a whole batch at once and releases it before asking for
// more (no hold-and-wait), so readers cannot deadlock. Admission is FIFO:
// each Acquire() takes a ticket and is admitted only when every earlier
// ticket was, so a large batch is never starved by small ones that would
// keep fitting in beside what is pinned. A batch larger than the limit is
// admitted alone, once nothing is pinned.
// Nested reads: a read made to compute a block for a read that already holds
// its pins (a carrier's operands) does not Acquire() again, which would wait
// behind readers that wait for this one (store/box_reader.h's
// NestedReadScope): it draws on its caller's admission, holding at most one
// batch of max_pinned_bytes per nesting level (carriers nest at most 4
// deep) beyond the limit.
// Thread-safety: all methods may be called from any thread.
// Lock order: mutex_ is a leaf lock.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace b2ndfs::store {

class PinBudget {
 public:
  explicit PinBudget(size_t limit_bytes) : limit_(limit_bytes) {}

  // Blocks until `bytes` may be pinned and every earlier caller got its turn.
  void Acquire(size_t bytes) {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t ticket = next_ticket_++;
    changed_.wait(lock, [&] { return ticket == now_serving_ && Fits(bytes); });
    ++now_serving_;
    used_ += bytes;
    if (used_ > peak_) peak_ = used_;
    lock.unlock();
    // The next in line may fit beside us.
    changed_.notify_all();
  }
  void Release(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      used_ -= bytes;
    }
    changed_.notify_all();
  }
  size_t used() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return used_;
  }
  size_t peak() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }
  // Callers blocked in Acquire().
  size_t waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<size_t>(next_ticket_ - now_serving_);
  }
  size_t limit() const { return limit_; }

 private:
  // used_ exceeds limit_ only while an oversized batch is pinned alone.
  bool Fits(size_t bytes) const {
    return used_ == 0 || (used_ <= limit_ && bytes <= limit_ - used_);
  }

  const size_t limit_;
  mutable std::mutex mutex_;
  // One condition for all waiters: only the head of the line can proceed,
  // and it must see every release.
  std::condition_variable changed_;
  size_t used_ = 0;
  size_t peak_ = 0;
  uint64_t next_ticket_ = 0;  // handed to the next Acquire()
  uint64_t now_serving_ = 0;  // the ticket that may be admitted next
};

}  // namespace b2ndfs::store
