// store/box_reader (private to store): reads any box of the array out of
// the block cache, and reads ahead.
//
// ReadBox() maps items of a box to the pieces of blocks they touch. A warm
// read (every block cached) copies them straight out of the cache; any other
// read looks each block up once, has the missing ones loaded together
// (BlockLoader) in batches that fit the pinning budget, copies, releases,
// repeats. Prefetch() starts read-ahead tasks that load a range's missing
// blocks on the workers; Cached() says whether a box would decompress
// nothing.
// Lifetime: owned by its Container, made once the layout is known; refers to
// the Container's loader, layout and policy and to the mount's StoreContext,
// which outlive it. A read-ahead task holds the `owner` it was given (the
// Container), so that all of them live until it ends.
// Errors: Status of the first block that failed (its chunk and block named).
// Thread-safety: const methods from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "b2ndfs/geometry/geometry.h"
#include "b2ndfs/store/container.h"
#include "block_loader.h"
#include "read_policy.h"

namespace b2ndfs::store {

// While one is alive on a thread, the reads that thread makes are part of a
// read already admitted by the mount's PinBudget (a block computed from
// other containers' reads, asked for by a read that holds its pins): they
// pin without queueing at the budget again, since waiting there behind
// readers that wait for the pins this read holds would never end
// (pin_budget.h, "Nested reads").
class NestedReadScope {
 public:
  NestedReadScope();
  ~NestedReadScope();
  NestedReadScope(const NestedReadScope&) = delete;
  NestedReadScope& operator=(const NestedReadScope&) = delete;
  // Whether the calling thread is inside one.
  static bool active();
};

class BoxReader {
 public:
  BoxReader(StoreContext& context, uint64_t cache_id, const ReadPolicy& policy,
            const geometry::ArrayLayout& layout, const BlockLoader& loader);
  BoxReader(const BoxReader&) = delete;
  BoxReader& operator=(const BoxReader&) = delete;

  // Items [item_begin, item_end) of `box`, in C order, into `out`.
  Status ReadBox(const geometry::Box& box, int64_t item_begin, int64_t item_end,
                 uint8_t* out) const;
  // Bytes [offset, offset + length) of the box's C-order bytes.
  Status ReadBytes(const geometry::Box& box, int64_t offset, size_t length, uint8_t* out) const;
  // Starts loading, on the workers, the blocks that bytes [offset, offset +
  // length) of the box's C-order bytes need and the cache lacks. Best
  // effort: stops when the workers' queue is full.
  void Prefetch(const geometry::Box& box, int64_t offset, int64_t length,
                std::shared_ptr<const void> owner) const;
  // Every block the box touches is cached now.
  bool Cached(const geometry::Box& box) const;

 private:
  // ReadBox's warm path: copies the listed pieces (of sub-box p.tag, which
  // starts at sub_dst[p.tag]); false, having copied part, when a block is
  // not cached.
  bool CopyIfCached(const std::vector<geometry::Box>& boxes,
                    std::span<const geometry::BlockPiece> pieces, std::span<const int64_t> coords,
                    std::span<uint8_t* const> sub_dst) const;

  StoreContext& context_;
  const uint64_t cache_id_;
  const ReadPolicy& policy_;
  const geometry::ArrayLayout& layout_;
  const BlockLoader& loader_;
};

}  // namespace b2ndfs::store
