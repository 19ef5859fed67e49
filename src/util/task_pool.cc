#include "b2ndfs/util/task_pool.h"

#include <exception>
#include <new>
#include <utility>

namespace b2ndfs {

TaskPool::TaskPool(std::string name, int threads)
    : name_(std::move(name)), size_(threads > 0 ? threads : 1) {}

TaskPool::~TaskPool() { Stop(); }

bool TaskPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return false;
    if (threads_.empty()) {
      threads_.reserve(static_cast<size_t>(size_));
      for (int i = 0; i < size_; ++i) threads_.emplace_back([this] { Loop(); });
    }
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
  return true;
}

void TaskPool::Stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    threads.swap(threads_);
  }
  wake_.notify_all();
  for (auto& t : threads) t.join();
  // Destroyed only now, unlocked: a task's destructor may answer waiters
  // (and take their locks). Nothing is queued after stopping_.
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped.swap(queue_);
  }
}

void TaskPool::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    try {
      task();
    } catch (...) {
      failures_.fetch_add(1, std::memory_order_relaxed);
      LogTaskFailure(name_, log_limit_);
    }
    task = nullptr;  // what it captured goes before the next wait
    lock.lock();
  }
}

void LogTaskFailure(const std::string& pool, LogRateLimit& limit) noexcept {
  try {
    std::string what;
    try {
      throw;
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      what = "a non-standard exception";
    }
    uint64_t suppressed = 0;
    if (!limit.Allow(&suppressed)) return;
    std::string message = pool + " failed: " + what + " (the mount goes on)";
    if (suppressed > 0) message += "; " + std::to_string(suppressed) + " more not shown";
    Log(LogLevel::kWarning, message);
  } catch (...) {
    // No memory even for the message: the pool's count remains.
  }
}

}  // namespace b2ndfs
