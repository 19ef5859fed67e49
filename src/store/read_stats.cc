#include "b2ndfs/store/read_stats.h"

#include <atomic>

namespace b2ndfs::store {

size_t NextStatShard() noexcept {
  static std::atomic<size_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) % kStatShards;
}

ReadStats& GlobalReadStats() {
  static ReadStats stats;
  return stats;
}

}  // namespace b2ndfs::store
