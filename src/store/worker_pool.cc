#include "b2ndfs/store/worker_pool.h"

#include <atomic>
#include <memory>

namespace b2ndfs::store {

WorkerPool::WorkerPool(int threads) : size_(threads > 0 ? threads : 0) {}

// Threads start on first use: the daemon forks (fuse_daemonize) after the
// pool is built, and threads do not survive a fork.
void WorkerPool::EnsureStarted() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (started_ || stopping_) return;
  started_ = true;
  for (int i = 0; i < size_; ++i) threads_.emplace_back([this] { WorkerLoop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

void WorkerPool::ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (n == 1 || size_ <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  // Work is claimed through a shared counter, so the caller and the helpers
  // split it dynamically; helpers that start late find nothing left to do.
  struct Shared {
    std::atomic<size_t> next{0};
    std::atomic<size_t> done{0};
    std::mutex mutex;  // leaf lock, guards the wait below
    std::condition_variable finished;
  };
  auto shared = std::make_shared<Shared>();
  auto work = [shared, n, &fn] {
    size_t finished_here = 0;
    for (size_t i; (i = shared->next.fetch_add(1)) < n;) {
      fn(i);
      ++finished_here;
    }
    if (finished_here > 0 && shared->done.fetch_add(finished_here) + finished_here == n) {
      std::lock_guard<std::mutex> lock(shared->mutex);
      shared->finished.notify_all();
    }
  };
  EnsureStarted();
  const size_t helpers = std::min(n - 1, static_cast<size_t>(size_ - 1));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Helpers capture `fn` by reference: safe because we wait for done == n,
    // and a helper that claims no index never touches fn.
    for (size_t i = 0; i < helpers; ++i) tasks_.emplace_back(work);
  }
  wake_.notify_all();
  work();
  std::unique_lock<std::mutex> lock(shared->mutex);
  shared->finished.wait(lock, [&] { return shared->done.load() == n; });
}

}  // namespace b2ndfs::store

namespace b2ndfs::store {

bool WorkerPool::TrySubmit(std::function<void()> fn, size_t max_queued) {
  if (size_ == 0) return false;
  EnsureStarted();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || tasks_.size() >= max_queued) return false;
    tasks_.push_back(std::move(fn));
  }
  wake_.notify_one();
  return true;
}

size_t WorkerPool::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tasks_.size();
}

}  // namespace b2ndfs::store
