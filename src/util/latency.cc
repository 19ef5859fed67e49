#include "b2ndfs/util/latency.h"

#include <cmath>

#include "b2ndfs/util/atomic_max.h"

namespace b2ndfs {

int LatencyHistogram::BucketOf(uint64_t microseconds) {
  if (microseconds <= 1) return 0;
  // Four buckets per power of two.
  const int bucket = static_cast<int>(std::ceil(std::log2(static_cast<double>(microseconds)) * 4));
  return bucket >= kBuckets ? kBuckets - 1 : bucket;
}

uint64_t LatencyHistogram::UpperBoundOf(int bucket) {
  return static_cast<uint64_t>(std::llround(std::exp2(static_cast<double>(bucket) / 4)));
}

void LatencyHistogram::Record(uint64_t microseconds) {
  buckets_[static_cast<size_t>(BucketOf(microseconds))].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(microseconds, std::memory_order_relaxed);
  RaiseAtomic(max_us_, microseconds);
}

LatencyHistogram::Summary LatencyHistogram::Summarize() const {
  Summary s;
  std::array<uint64_t, kBuckets> counts;
  uint64_t total = 0;
  for (int i = 0; i < kBuckets; ++i) {
    counts[static_cast<size_t>(i)] = buckets_[static_cast<size_t>(i)].load();
    total += counts[static_cast<size_t>(i)];
  }
  s.count = total;
  s.max_us = max_us_.load();
  if (total == 0) return s;
  s.mean_us = static_cast<double>(sum_us_.load()) / static_cast<double>(count_.load());
  auto percentile = [&](double p) {
    const uint64_t rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(total)));
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts[static_cast<size_t>(i)];
      if (seen >= rank) return std::min(UpperBoundOf(i), s.max_us);
    }
    return s.max_us;
  };
  s.p50_us = percentile(0.50);
  s.p90_us = percentile(0.90);
  s.p99_us = percentile(0.99);
  return s;
}

}  // namespace b2ndfs
