// store/worker_pool: a fixed set of worker threads.
//
// The mount has two: the decoders (StoreContext::workers, as many as CPUs)
// and, for remote sources, the I/O workers (StoreContext::io_workers, as
// many as the client's connections), on which read-ahead and chunk-head
// prefetches wait for the network, so that no decoder waits a round trip.
// A read that misses many blocks hands the misses to the pool and helps out
// itself (ParallelFor), so a single reader uses every worker and many readers
// share them; read-ahead queues best-effort tasks (TrySubmit).
// Lifetime: tasks use whatever they captured (containers, and through them
// the StoreContext), so the owner calls Shutdown() before destroying any of
// that. Shutdown() stops accepting work, drops the queued best-effort tasks
// (read-ahead that nobody waits for) and joins the workers; the destructor
// calls it too, so a pool that is simply destroyed is still safe.
// Errors: an exception thrown by a ParallelFor item is rethrown on the
// calling thread once every item has finished; an exception thrown by a
// TrySubmit task is counted (failed_tasks()) and logged (util/task_pool.h,
// LogTaskFailure: "worker task failed: ...", a few a minute), never fatal.
// Thread-safety: every method except Shutdown() and the destructor may be
// called from any thread, concurrently; Shutdown() must not be called from a
// worker (it joins them).
// Lock order: shutdown_mutex_ (held through Shutdown) before mutex_, a leaf
// lock; tasks run with no lock held.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "b2ndfs/util/log.h"

namespace b2ndfs::store {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return size_; }
  // Starts the threads now rather than on first use, each bound to its
  // malloc arena (so that the first read after a mount does not pay for
  // either). Call it after any fork: threads do not survive one.
  void Start();
  // Runs fn(0) .. fn(n - 1) on the calling thread and up to size() - 1
  // workers (so at most size() at once); returns when all have finished.
  // If fn throws, the remaining items still run and the first exception is
  // rethrown here afterwards. After Shutdown() everything runs on the caller.
  void ParallelFor(size_t n, const std::function<void(size_t)>& fn);
  // Queues best-effort work (read-ahead) unless `max_queued` tasks already
  // wait or the pool is shut down; returns false when the task was dropped.
  // A task that throws is counted in failed_tasks() and logged.
  bool TrySubmit(std::function<void()> fn, size_t max_queued);
  // Stops accepting work, drops what is queued and joins the workers.
  // Idempotent. ParallelFor callers still in flight finish their items on
  // their own threads.
  void Shutdown();
  size_t queued() const;
  // Whether the calling thread is one of this pool's workers.
  bool OnWorker() const;
  // TrySubmit tasks that ended with an exception.
  uint64_t failed_tasks() const { return failed_tasks_.load(std::memory_order_relaxed); }

 private:
  void WorkerLoop();
  const int size_;
  std::mutex shutdown_mutex_;  // so that concurrent Shutdown() calls all join
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool started_ = false;                     // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::deque<std::function<void()>> tasks_;  // guarded by mutex_
  std::vector<std::thread> threads_;         // guarded by mutex_
  std::atomic<uint64_t> failed_tasks_{0};
  LogRateLimit failure_log_{5, int64_t{60} * 1000000000};
};

}  // namespace b2ndfs::store
