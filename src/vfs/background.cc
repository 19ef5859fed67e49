#include "background.h"

#include <algorithm>

namespace b2ndfs::vfs {

CallPool::~CallPool() {
  std::deque<std::function<void()>> dropped;  // destroyed after the join
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  wake_.notify_all();
  // threads_ is written only under mutex_ by Submit, which refuses now.
  for (auto& t : threads_) t.join();
}

bool CallPool::Submit(std::function<void()> call) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return false;
    if (threads_.empty()) {
      for (int i = 0; i < size_; ++i) threads_.emplace_back([this] { Loop(); });
    }
    queue_.push_back(std::move(call));
  }
  wake_.notify_one();
  return true;
}

void CallPool::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::function<void()> call = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    call();
    call = nullptr;  // what it captured goes before the next wait
    lock.lock();
  }
}

}  // namespace b2ndfs::vfs
