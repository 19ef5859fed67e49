// Private to vfs: questions to a remote source asked on threads of their
// own, so that FUSE request threads never wait on a server that does not
// answer for longer than they choose to.
//
// CallPool: a few threads running queued calls (each bounded by the source's
// own timeout). SingleFlight: at most one call per key in flight; everyone
// who asks meanwhile shares its answer. A caller with an answer of its own
// (a generation it knows, a name's last attributes) waits a grace period
// and goes on with what it has; the call lands later and updates what it
// concerns.
// Lifetime: ~CallPool waits for the running call of each thread and drops
// queued ones (at unmount; their waiters get a broken promise, which the
// FUSE layer answers EIO).
// Thread-safety: any thread. Lock order: both mutexes are leaf locks.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace b2ndfs::vfs {

// Its threads start with the first call, not before: the filesystem is made
// before the daemon forks into the background, and threads do not survive
// a fork.
class CallPool {
 public:
  explicit CallPool(int threads) : size_(threads > 0 ? threads : 1) {}
  ~CallPool();
  CallPool(const CallPool&) = delete;
  CallPool& operator=(const CallPool&) = delete;
  // Queues `call`; false when the pool is stopping (the caller runs it).
  bool Submit(std::function<void()> call);

 private:
  void Loop();
  const int size_;
  std::mutex mutex_;  // leaf lock
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

template <typename T>
class SingleFlight {
 public:
  // The call in flight for `key`, or `call` started on `pool` (on this
  // thread when the pool refuses it); `*joined` says which.
  std::shared_future<T> Run(const std::string& key, CallPool& pool, std::function<T()> call,
                            bool* joined = nullptr) {
    if (joined != nullptr) *joined = true;
    auto promise = std::make_shared<std::promise<T>>();
    std::shared_future<T> future;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = flights_.find(key);
      if (it != flights_.end()) return it->second;
      future = promise->get_future().share();
      flights_.emplace(key, future);
    }
    if (joined != nullptr) *joined = false;
    auto task = [this, key, promise, call = std::move(call)] {
      T value = call();
      {
        // Gone before it is answered: a caller after this starts afresh.
        std::lock_guard<std::mutex> lock(mutex_);
        flights_.erase(key);
      }
      promise->set_value(std::move(value));
    };
    if (!pool.Submit(task)) task();
    return future;
  }

 private:
  mutable std::mutex mutex_;  // leaf lock
  std::unordered_map<std::string, std::shared_future<T>> flights_;
};

}  // namespace b2ndfs::vfs
