#pragma once
// std::call_once for an array of flags, without a system call when nobody
// waits: glibc's pthread_once (under std::call_once) wakes futex waiters on
// every completion, waiters or not, and a read plan completes one flag per
// source read (hundreds for a slice across small blocks; each system call
// costs microseconds in a virtual machine).
// Not a single flight (util/single_flight.h), on purpose: a flag hands no
// outcome to its waiters (the call writes the plan's own buffers, and each
// waiter reads their status there), and a call that throws hands the flag
// to a waiter, who calls again, rather than failing them all. So every
// waiter completes on every path and no flag is poisoned, as with a single
// flight, but with one atomic per flag and no table, lock or allocation on
// the path every block of a cold read takes.
#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

namespace b2ndfs::store {

class OnceFlags {
 public:
  explicit OnceFlags(size_t n) : state_(new std::atomic<int>[n]) {
    for (size_t k = 0; k < n; ++k) state_[k].store(kIdle, std::memory_order_relaxed);
  }

  // Runs fn(args...) if no call for flag k has completed, else waits for the
  // one running to end. As std::call_once: a call that throws leaves the
  // flag for another caller (one of those waiting, or the next).
  template <typename Fn, typename... Args>
  void Call(size_t k, Fn&& fn, Args&&... args) {
    std::atomic<int>& state = state_[k];
    for (;;) {
      int seen = kIdle;
      if (state.compare_exchange_strong(seen, kRunning, std::memory_order_acquire)) {
        try {
          std::forward<Fn>(fn)(std::forward<Args>(args)...);
        } catch (...) {
          state.store(kIdle, std::memory_order_release);
          state.notify_all();
          throw;
        }
        state.store(kDone, std::memory_order_release);
        state.notify_all();  // no system call unless a caller waits
        return;
      }
      if (seen == kDone) return;
      state.wait(kRunning, std::memory_order_acquire);
      if (state.load(std::memory_order_acquire) == kDone) return;
    }
  }

 private:
  static constexpr int kIdle = 0;
  static constexpr int kRunning = 1;
  static constexpr int kDone = 2;
  std::unique_ptr<std::atomic<int>[]> state_;
};

}  // namespace b2ndfs::store
