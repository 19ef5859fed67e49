// util/task_pool: a few threads running queued background tasks (the vfs's
// probes of remote sources; see util/single_flight.h, SingleFlight::Launch).
//
// Threads start with the first Submit(), not before: the daemon makes what
// owns a pool before it forks into the background, and threads do not
// survive a fork.
// Failures: a task that throws is logged (a warning naming the pool and the
// exception, at most a few a minute, README.md "Logs") and its thread goes
// on with the next task: a background task's failure is never fatal.
// Lifetime: Stop() refuses new tasks, lets each running task end, joins the
// threads, then destroys the queued tasks unrun (with no lock held: a
// SingleFlight task then answers its waiters). The destructor stops. Stop()
// must not be called from one of the pool's own tasks.
// Thread-safety: any thread. Lock order: mutex_ is a leaf lock; no task
// runs or is destroyed while it is held.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "b2ndfs/util/log.h"

namespace b2ndfs {

// Logs the exception being handled (call it only inside a catch block) as
// the failure of a background task of `pool`: a warning "POOL failed: WHAT
// (the mount goes on)", as often as `limit` lets through (the next one that
// passes says how many were not shown). Never throws. TaskPool and
// store::WorkerPool report through it.
void LogTaskFailure(const std::string& pool, LogRateLimit& limit) noexcept;

class TaskPool {
 public:
  // `name` appears in the log ("background probe").
  TaskPool(std::string name, int threads);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  // Queues `task`; false when the pool is stopping (the caller may run it).
  // Throws std::bad_alloc or std::system_error (no thread could start) with
  // the task not queued.
  bool Submit(std::function<void()> task);
  // See the header block. Idempotent.
  void Stop();
  // Tasks that threw (each logged, subject to the rate limit).
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }

 private:
  void Loop();

  const std::string name_;
  const int size_;
  std::mutex mutex_;  // leaf lock; guards what follows
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> failures_{0};
  LogRateLimit log_limit_{5, int64_t{60} * 1000000000};
};

}  // namespace b2ndfs
