// store/worker_pool: a fixed set of decompression worker threads.
//
// A read that misses many blocks hands the misses to the pool and helps out
// itself, so a single reader uses every worker and many readers share them.
// Thread-safety: Run() may be called from any thread, concurrently.
// Lock order: mutex_ is a leaf lock; tasks run with no lock held.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace b2ndfs::store {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return size_; }
  // Runs fn(0) .. fn(n - 1) on the calling thread and up to size() - 1
  // workers (so at most size() at once); returns when all have finished.
  // fn must not throw.
  void ParallelFor(size_t n, const std::function<void(size_t)>& fn);
  // Queues best-effort work (read-ahead) unless `max_queued` tasks already
  // wait; returns false when the task was dropped. fn must not throw.
  bool TrySubmit(std::function<void()> fn, size_t max_queued);
  size_t queued() const;

 private:
  void WorkerLoop();
  void EnsureStarted();
  const int size_;
  bool started_ = false;  // guarded by mutex_
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace b2ndfs::store
