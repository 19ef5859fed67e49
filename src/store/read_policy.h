// store/read_policy (private to store): every decision a container makes
// from what its source's reads cost (source::CostProfile), in one place, so
// that the parts of a container ask the policy, never where the bytes live.
//
//  decision                       local (a syscall)        network (a round trip)
//  frame ends read at open        no (six small preads     yes: 16 KiB + 64 KiB in one
//                                 cost less than windows)  ReadMany (header, trailer, index)
//  cold chunk heads of a plan     in parallel on workers   in one ReadMany (batch_reads)
//  every head with a first read   no                       <= remote_heads_max_chunks chunks
//  longest coalesced read         a slab slot (the buffer  the source's max_read
//                                 is reused memory)
//  a plan's reads                 one by one, as needed    all in one ReadMany (batch_reads)
//  read-ahead bytes per task      2 MiB                    4 MiB (a request per task)
//
// Made once when a container opens (a source's cost never changes).
// Thread-safety: immutable.
#pragma once

#include <cstdint>

#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/store/read_plan.h"

namespace b2ndfs::store {

struct ReadPolicy {
  // Opening: the frame's first and last bytes (0: none), read together
  // because parsing would otherwise ask for header, trailer and chunk index
  // one after the other.
  int64_t frame_head_window = 0;
  int64_t frame_tail_window = 0;
  // A plan's chunk heads that the cache lacks come in one ReadMany (with
  // others' heads, see below); else each by its own read, in parallel.
  bool batch_heads = false;
  // In a container of at most this many chunks, a read that waits for heads
  // fetches other chunks' with its own (the first read: all of them), so
  // that later reads wait one round trip, not two (0: none; a huge array
  // would pay a request per chunk it may never read). Never at open.
  int64_t heads_prefetch_max_chunks = 0;
  // How a plan joins block spans into source reads (read_plan.h).
  CoalesceOptions coalesce;
  // A plan's reads go to the source at once (one ReadMany).
  bool batch_plan_reads = false;
  // Decompressed bytes of blocks one read-ahead task loads together: their
  // compressed bytes come in few large reads, and a window of read-ahead
  // still makes a few tasks to run in parallel.
  int64_t prefetch_task_bytes = int64_t{2} << 20;
};

ReadPolicy MakeReadPolicy(const source::CostProfile& cost, const StoreContext& context);

}  // namespace b2ndfs::store
