// store/read_plan: which source reads fetch the compressed bytes of a set of
// blocks.
//
// A read of the array needs the compressed bytes of many blocks, each a byte
// span of one part of the source (the frame, or a sparse frame's chunk
// file). CoalesceSpans() groups them into few reads: spans sorted, and a span
// joined to the read before it when the gap between them is at most the
// source's CostProfile::merge_gap and the bytes the read would fetch but not use stay
// within kMaxWasteFraction of the bytes it uses, and the read stays within
// max_read_bytes. So a plan never fetches more than (1 + kMaxWasteFraction)
// times the bytes of its spans (their union), whatever the gap threshold.
// Pure functions: no I/O, no state. Thread-safety: any.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "b2ndfs/cache/buffer_memory.h"

namespace b2ndfs::store {

// The most a read may fetch that no span needs, as a fraction of what it
// needs: the bound on the plan's read amplification.
constexpr int64_t kMaxWasteNumerator = 1;
constexpr int64_t kMaxWasteDenominator = 4;

// Bytes [begin, end) of a part of the source.
struct SourceSpan {
  int64_t part = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

// One source read: bytes [begin, end) of a part, covering `members` (indices
// into the spans given to CoalesceSpans, in ascending order of begin).
struct CoalescedRead {
  int64_t part = 0;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t useful = 0;  // bytes of the read inside some member span
  std::vector<size_t> members;
};

struct CoalesceOptions {
  int64_t max_gap = 0;  // source::CostProfile::merge_gap
  // Spans are not joined into reads longer than this (a span longer than it
  // is read alone): keeps buffers and the parallelism of a plan reasonable.
  int64_t max_read_bytes = int64_t{16} << 20;
};

// The longest read a container's plan joins blocks into (a single longer
// block span is read alone): bounds a read's buffer, and leaves reads to run
// in parallel. A remote read costs a request, so it may be long. A local one
// costs a syscall, and its buffer lives until its last block is decoded: it
// fits a slot of the block memory's slabs (with room for the chunk heads
// copied in front of its bytes), memory the cache reuses. Longer buffers came
// from malloc, whose arenas kept them resident once freed (45 MiB more than
// the cache after random 1 MiB reads of 1 MiB blocks).
constexpr int64_t kMaxRemoteReadBytes = int64_t{8} << 20;
constexpr int64_t kMaxLocalReadBytes =
    static_cast<int64_t>(cache::kSlabSlotMaxBytes) - (int64_t{64} << 10);

// Reads covering every span (empty spans included, as zero-length members),
// ordered by (part, begin). Reads of one part never overlap.
std::vector<CoalescedRead> CoalesceSpans(std::span<const SourceSpan> spans,
                                         const CoalesceOptions& options);

}  // namespace b2ndfs::store
