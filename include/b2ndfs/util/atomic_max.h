// util/atomic_max: raising an atomic to a value unless it already holds more
// (peaks and maxima counted by several threads at once).
#pragma once

#include <atomic>

namespace b2ndfs {

template <typename T>
void RaiseAtomic(std::atomic<T>& peak, T value) {
  T seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value)) {
  }
}

}  // namespace b2ndfs
