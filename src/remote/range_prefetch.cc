#include "range_prefetch.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace b2ndfs::remote {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

RangePrefetch::~RangePrefetch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  for (auto& t : threads_) t.join();
}

uint64_t RangePrefetch::NewSourceId() {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_source_++;
}

void RangePrefetch::Remove(const RangePtr& range) {
  auto it = std::find(ranges_.begin(), ranges_.end(), range);
  if (it == ranges_.end()) return;
  bytes_ -= static_cast<int64_t>(range->length);
  ranges_.erase(it);
}

void RangePrefetch::Expire() {
  const double now = Now();
  for (auto it = ranges_.begin(); it != ranges_.end();) {
    const Range& r = **it;
    if ((r.state == Range::kDone || r.state == Range::kFailed) && now - r.done_at > kHoldSeconds) {
      bytes_ -= static_cast<int64_t>(r.length);
      stats_.dropped++;
      it = ranges_.erase(it);
    } else {
      ++it;
    }
  }
}

void RangePrefetch::Start(uint64_t source, int64_t part, int64_t offset, size_t length,
                          Fetch fetch) {
  if (length == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) return;
  Expire();
  for (const RangePtr& r : ranges_) {
    if (r->source == source && r->part == part && r->offset <= offset &&
        offset + static_cast<int64_t>(length) <= r->offset + static_cast<int64_t>(r->length) &&
        r->state != Range::kFailed) {
      return;
    }
  }
  if (bytes_ + static_cast<int64_t>(length) > kMaxBytes) return;
  auto range = std::make_shared<Range>();
  range->source = source;
  range->part = part;
  range->offset = offset;
  range->length = length;
  range->fetch = std::move(fetch);
  ranges_.push_back(range);
  queue_.push_back(range);
  bytes_ += static_cast<int64_t>(length);
  stats_.started++;
  if (threads_.empty()) {
    for (size_t i = 0; i < kThreads; ++i) threads_.emplace_back([this] { Work(); });
  }
  queued_.notify_one();
}

void RangePrefetch::Work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    RangePtr range = queue_.front();
    queue_.pop_front();
    range->state = Range::kRunning;
    lock.unlock();
    std::vector<uint8_t> bytes;
    bool ok = false;
    try {
      bytes.resize(range->length);
      ok = range->fetch(range->offset, range->length, bytes.data()).ok();
    } catch (...) {
      ok = false;  // std::bad_alloc: the reader fetches (and reports) itself
    }
    lock.lock();
    range->fetch = nullptr;  // what it holds (the client) is not needed now
    range->bytes = std::move(bytes);
    range->state = ok ? Range::kDone : Range::kFailed;
    range->done_at = Now();
    if (!ok) stats_.failed++;
    finished_.notify_all();
  }
}

bool RangePrefetch::Take(uint64_t source, int64_t part, int64_t offset, size_t length,
                         uint8_t* out) {
  std::unique_lock<std::mutex> lock(mutex_);
  RangePtr found;
  for (const RangePtr& r : ranges_) {
    if (r->source == source && r->part == part && r->offset <= offset &&
        offset + static_cast<int64_t>(length) <= r->offset + static_cast<int64_t>(r->length)) {
      found = r;
      break;
    }
  }
  if (found == nullptr) return false;
  finished_.wait(lock, [&] {
    return stopping_ || found->state == Range::kDone || found->state == Range::kFailed;
  });
  if (found->state != Range::kDone) {
    Remove(found);
    return false;
  }
  std::memcpy(out, found->bytes.data() + (offset - found->offset), length);
  stats_.taken++;
  // The plan that announced the range reads exactly it once.
  if (found->offset == offset && found->length == length) Remove(found);
  return true;
}

void RangePrefetch::Forget(uint64_t source) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = ranges_.begin(); it != ranges_.end();) {
    // In flight ones finish into a range nobody holds.
    if ((*it)->source == source) {
      bytes_ -= static_cast<int64_t>((*it)->length);
      it = ranges_.erase(it);
    } else {
      ++it;
    }
  }
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [source](const RangePtr& r) { return r->source == source; }),
               queue_.end());
}

RangePrefetch::Stats RangePrefetch::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace b2ndfs::remote
