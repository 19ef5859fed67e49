// store/stat_counter: a statistics counter that many threads bump without
// sharing a cache line.
//
// Every read bumps a few counters (requests, bytes served, ...). Adjacent
// std::atomic counters bumped by every thread bounce their cache line
// between cores on every read, a cost that grows with the threads reading
// at once (false sharing). A StatCounter keeps kStatShards slots, each on a
// cache line of its own; a thread adds to its own slot (threads are given
// slots in turn, so only more than kStatShards threads share one), and
// load() sums the slots.
// Semantics: exact (every add is counted once); relaxed (load() is not a
// snapshot taken with other counters, nor ordered with other memory).
// Thread-safety: every method from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace b2ndfs::store {

inline constexpr size_t kStatShards = 16;

// This thread's slot in every StatCounter.
size_t NextStatShard() noexcept;
inline size_t StatShard() noexcept {
  thread_local size_t shard = kStatShards;  // constant-initialized: no guard
  if (shard == kStatShards) [[unlikely]]
    shard = NextStatShard();
  return shard;
}

template <typename T>
class StatCounter {
  static_assert(std::is_integral_v<T>);

 public:
  StatCounter() = default;
  StatCounter(const StatCounter&) = delete;
  StatCounter& operator=(const StatCounter&) = delete;

  void operator++() noexcept { Add(1); }
  void operator++(int) noexcept { Add(1); }
  void operator--() noexcept { Add(static_cast<T>(-1)); }
  void operator--(int) noexcept { Add(static_cast<T>(-1)); }
  // Unsigned counters wrap as std::atomic's do: the sum is right modulo 2^N.
  template <typename U>
  void operator+=(U value) noexcept {
    Add(static_cast<T>(value));
  }
  template <typename U>
  void operator-=(U value) noexcept {
    Add(static_cast<T>(T{0} - static_cast<T>(value)));
  }
  T load() const noexcept {
    T sum = 0;
    for (const Slot& slot : slots_) sum += slot.value.load(std::memory_order_relaxed);
    return sum;
  }

 private:
  void Add(T value) noexcept {
    slots_[StatShard()].value.fetch_add(value, std::memory_order_relaxed);
  }
  struct alignas(64) Slot {
    std::atomic<T> value{0};
  };
  std::array<Slot, kStatShards> slots_;
};

}  // namespace b2ndfs::store
