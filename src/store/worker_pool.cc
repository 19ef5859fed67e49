#include "b2ndfs/store/worker_pool.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <memory>
#include <utility>

#include "b2ndfs/util/task_pool.h"

namespace b2ndfs::store {

namespace {

// The pool whose worker this thread is (nullptr: none).
thread_local const WorkerPool* current_pool = nullptr;

}  // namespace

WorkerPool::WorkerPool(int threads) : size_(threads > 0 ? threads : 0) {}

WorkerPool::~WorkerPool() { Shutdown(); }

// Threads start on first use or Start(): the daemon forks (fuse_daemonize)
// after the pool is built, and threads do not survive a fork.
void WorkerPool::Start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (started_ || stopping_) return;
  started_ = true;
  // If the system runs out of threads part way, the pool works with fewer.
  for (int i = 0; i < size_; ++i) threads_.emplace_back([this] { WorkerLoop(); });
}

void WorkerPool::Shutdown() {
  std::lock_guard<std::mutex> shutdown_lock(shutdown_mutex_);
  std::deque<std::function<void()>> dropped;
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    dropped.swap(tasks_);
    threads.swap(threads_);
  }
  wake_.notify_all();
  for (auto& t : threads) t.join();
  // Destroyed here, with no lock held: a dropped task may hold the last
  // reference to a container.
  dropped.clear();
}

void WorkerPool::WorkerLoop() {
  // A thread's first allocation attaches it to a malloc arena (creating one
  // maps and faults in its first pages): done here, not in a first read.
  // Through a volatile pointer: GCC deletes a malloc whose only use is free.
  void* volatile first = std::malloc(1);
  std::free(first);
  current_pool = this;
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    try {
      task();
    } catch (...) {
      // Best-effort work only reaches here (ParallelFor items catch their
      // own): an uncaught exception would end the daemon.
      failed_tasks_++;
      LogTaskFailure("worker task", failure_log_);
    }
  }
}

void WorkerPool::ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  // Work is claimed through a shared counter, so the caller and the helpers
  // split it dynamically; helpers that start late find nothing left to do.
  struct Shared {
    std::atomic<size_t> next{0};
    std::atomic<size_t> done{0};
    std::mutex mutex;  // leaf lock, guards `error` and the wait below
    std::condition_variable finished;
    std::exception_ptr error;
  };
  auto shared = std::make_shared<Shared>();
  auto work = [shared, n, &fn] {
    size_t finished_here = 0;
    for (size_t i; (i = shared->next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(shared->mutex);
        if (!shared->error) shared->error = std::current_exception();
      }
      ++finished_here;
    }
    if (finished_here > 0 && shared->done.fetch_add(finished_here) + finished_here == n) {
      std::lock_guard<std::mutex> lock(shared->mutex);
      shared->finished.notify_all();
    }
  };
  if (n > 1 && size_ > 1) {
    try {
      Start();
      const size_t helpers = std::min(n - 1, static_cast<size_t>(size_ - 1));
      std::lock_guard<std::mutex> lock(mutex_);
      // Helpers capture `fn` by reference: safe because we wait for
      // done == n below, and a helper that claims no index never touches fn.
      for (size_t i = 0; i < helpers && !stopping_ && !threads_.empty(); ++i)
        tasks_.emplace_back(work);
    } catch (...) {
      // No threads or no memory for the queue: the caller does the rest, and
      // must still wait for the helpers already queued.
    }
    wake_.notify_all();
  }
  work();
  {
    std::unique_lock<std::mutex> lock(shared->mutex);
    shared->finished.wait(lock, [&] { return shared->done.load() == n; });
  }
  // Taken out of `shared`: a helper may drop the last reference to it later,
  // and must not be the one that frees the exception the caller handles.
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(shared->mutex);
    error = std::move(shared->error);
  }
  if (error) std::rethrow_exception(error);
}

bool WorkerPool::TrySubmit(std::function<void()> fn, size_t max_queued) {
  if (size_ == 0) return false;
  try {
    Start();
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || threads_.empty() || tasks_.size() >= max_queued) return false;
    tasks_.push_back(std::move(fn));
  } catch (...) {
    return false;  // best effort: no thread or no memory means no read-ahead
  }
  wake_.notify_one();
  return true;
}

bool WorkerPool::OnWorker() const { return current_pool == this; }

size_t WorkerPool::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tasks_.size();
}

}  // namespace b2ndfs::store
