// Private to stores: what a store index costs in the block cache's budget
// (store_tree.h, "Memory"). What a parse holds before its index exists is
// charged while it runs (ParseCharge); an index is charged what
// IndexMemoryBytes() counts; one over kMaxIndexBytes becomes a small
// verdict (OversizeVerdict) that is kept instead, so that the store is not
// parsed again while its version stays. Counters for stats and tests.
// Thread-safety: ParseCharge is one parse's; the rest are pure or atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "b2ndfs/cache/block_cache.h"
#include "index_types.h"

namespace b2ndfs::stores::internal {

// A signature as text, every field: part of a block cache key's identity.
std::string SignatureText(const source::Signature& s);

// Parses of store indexes, process-wide.
struct StoreIndexStats {
  std::atomic<uint64_t> parsed{0};    // BuildStoreIndex calls
  std::atomic<uint64_t> oversize{0};  // of those, verdicts for indexes over kMaxIndexBytes
};
StoreIndexStats& GlobalStoreIndexStats();

// Bytes a parse holds before its index exists (a central directory read,
// its members), charged to `cache` (may be null) until the parse ends, so
// that the cache makes room for them; the finished index is charged as its
// entry.
class ParseCharge {
 public:
  explicit ParseCharge(cache::BlockCache* cache) : cache_(cache) {}
  ~ParseCharge();
  ParseCharge(const ParseCharge&) = delete;
  ParseCharge& operator=(const ParseCharge&) = delete;
  void Add(int64_t bytes);

 private:
  cache::BlockCache* const cache_;
  int64_t bytes_ = 0;
};

// What a parsed central directory holds.
int64_t MembersBytes(const ZipDirectory& zip);
// A lower bound of what the index of `zip`'s members will hold (each member
// a ZipMember, a node and a name in its directory's list), so that an
// archive whose index cannot be kept is refused before it is built.
int64_t EstimatedBytes(const ZipDirectory& zip);
// What a built index holds.
int64_t IndexMemoryBytes(const StoreIndex& index);

// Replaces `index` (of `bytes` bytes, or when `estimated` at least that
// many) by the verdict: a root whose meta.json says why, nothing else.
std::shared_ptr<const StoreIndex> OversizeVerdict(std::shared_ptr<StoreIndex> index, int64_t bytes,
                                                  bool estimated);

}  // namespace b2ndfs::stores::internal
