// util/latency: a lock-free latency histogram with percentile estimates.
// Buckets grow by 2^(1/4) from 1 µs, so percentiles are within ~19%.
// Thread-safety: Record() and Snapshot() may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace b2ndfs {

class LatencyHistogram {
 public:
  static constexpr int kBuckets = 128;  // 1 µs .. ~2^32 µs

  void Record(uint64_t microseconds);

  struct Summary {
    uint64_t count = 0;
    uint64_t p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
    double mean_us = 0;
  };
  Summary Summarize() const;

 private:
  static int BucketOf(uint64_t microseconds);
  static uint64_t UpperBoundOf(int bucket);
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_us_{0};
  std::atomic<uint64_t> max_us_{0};
};

}  // namespace b2ndfs
