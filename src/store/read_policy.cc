#include "read_policy.h"

#include <algorithm>

namespace b2ndfs::store {

namespace {

// The frame's ends a remote container reads when it opens: its header, its
// trailer and (but for arrays of tens of thousands of chunks) its chunk index
// lie in them.
constexpr int64_t kFrameHeadWindow = int64_t{16} << 10;
constexpr int64_t kFrameTailWindow = int64_t{64} << 10;

// Read-ahead per task; a remote one is larger, as every request costs a
// round trip (and a server's per-request work).
constexpr int64_t kPrefetchBytesPerTask = int64_t{2} << 20;
constexpr int64_t kRemotePrefetchBytesPerTask = int64_t{4} << 20;

}  // namespace

ReadPolicy MakeReadPolicy(const source::CostProfile& cost, const StoreContext& context) {
  ReadPolicy policy;
  const bool network = cost.network();
  if (network) {
    policy.frame_head_window = kFrameHeadWindow;
    policy.frame_tail_window = kFrameTailWindow;
    policy.heads_prefetch_max_chunks = std::max<int64_t>(context.remote_heads_max_chunks, 0);
    policy.prefetch_task_bytes = kRemotePrefetchBytesPerTask;
  } else {
    policy.prefetch_task_bytes = kPrefetchBytesPerTask;
  }
  policy.batch_heads = cost.batch_reads;
  policy.batch_plan_reads = cost.batch_reads;
  policy.coalesce.max_gap = std::max<int64_t>(0, cost.merge_gap);
  // A local read's buffer fits a slot of the block memory's slabs
  // (read_plan.h, kMaxLocalReadBytes); a request is worth its length.
  policy.coalesce.max_read_bytes =
      network ? cost.max_read : std::min(cost.max_read, kMaxLocalReadBytes);
  return policy;
}

}  // namespace b2ndfs::store
