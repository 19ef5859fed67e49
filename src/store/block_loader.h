// store/block_loader (private to store): turns blocks a read misses into
// decompressed blocks in the cache.
//
// Plan() finds the compressed spans of a set of blocks from their chunks'
// heads (ChunkDirectory) and groups them into few source reads
// (read_plan.h; block_plan.cc); Run() reads them (each byte range once
// however many plans want it at once: SpanFlights) and decodes every block
// straight from the read buffers into its cache entry, single-flight per
// block, on the workers when given (a PlanRun, plan_run.h: one method per
// step, the local and network strategies apart). A network source's bytes
// are waited for by the thread that runs the plan (a reader's, or an I/O
// worker's), and only the decoding of landed bytes goes to the workers: a
// decoder never waits a round trip. Blocks a plan cannot serve (special
// chunks, chunks decoded whole, memcpyed chunks, errors) are decoded alone
// (DecodeBlock, block_decode.cc); a chunk whose blocks cannot be decoded
// alone is decoded once, whole, and shared by every reader of its blocks.
// Decompressors: the mount's pool, or a pool bound to this array for
// pipelines that read the super-chunk (codec/binding.h), made on first use.
// Lifetime: owned by its Container, made once the layout is known; refers to
// the Container's directory, layout, source and policy, and to the mount's
// StoreContext, which outlive it. A BlockLoads lives for one plan, on the
// stack of the read (or read-ahead task) that runs it.
// Errors: a block's Status names its chunk and block.
// Thread-safety: const methods from any thread.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/codec/binding.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/geometry/geometry.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/store/read_plan.h"
#include "chunk_directory.h"
#include "counted_source.h"
#include "read_policy.h"
#include "span_flights.h"

namespace b2ndfs::store {

// Blocks loaded together. Plan() fills everything but the blocks' results;
// Run() allocates the reads' buffers (at most buffer_bytes in all), fills
// value or status of every block, and frees the buffers.
struct BlockLoads {
  struct Block {
    int64_t chunk = 0;
    int64_t block = 0;
    // Where its compressed bytes come from: views[view], or -1 when the
    // block is loaded alone (DecodeBlock).
    int64_t view = -1;
    int64_t first_byte = 0;  // decompressed bytes [first_byte, +stored) of the chunk
    int64_t stored = 0;
    codec::ChunkSpan span;  // its compressed bytes in the chunk
    cache::Value value;
    Status status;
  };
  struct Chunk {
    int64_t index = 0;
    ChunkRef ref;
    cache::Value head;
    codec::ChunkInfo info;
    bool planned = false;
  };
  // The blocks of one chunk inside one read: the chunk's head (rebased) sits
  // at head_pos of the read's buffer, its bytes `span` later in the buffer.
  struct View {
    size_t chunk = 0;
    size_t read = 0;
    int64_t head_pos = 0;
    codec::ChunkSpan span{INT64_MAX, 0};
    // The bytes a decoder of its blocks is given, from head_pos on: they end
    // where the view's fetched bytes end (the rebased head's cbytes).
    int64_t cbytes = 0;
    Status status;
  };
  // One source read of bytes [begin, end) of the part; its buffer holds the
  // heads of its views, then the bytes [fetched_begin, fetched_end).
  struct Read {
    int64_t part = 0;
    int64_t begin = 0;
    int64_t end = 0;
    int64_t heads_bytes = 0;
    size_t nblocks = 0;
    std::vector<size_t> views;
    std::vector<size_t> blocks;  // indices into `blocks`
    // The bytes of the part actually fetched: the blocks that another
    // reader had loaded by then are left out (fetched_begin == fetched_end:
    // nothing was).
    int64_t fetched_begin = 0;
    int64_t fetched_end = 0;
    SpanFlights::Owned owned;
    // Shared: the bytes it fetched are lent to other plans (SpanFlights).
    std::shared_ptr<cache::Bytes> buffer;
    Status status;
  };
  std::vector<Block> blocks;
  std::vector<Chunk> chunks;
  std::vector<View> views;
  std::vector<Read> reads;
  int64_t buffer_bytes = 0;
};

class WorkerPool;
class PlanRun;

// fn(0..n-1) on `workers` when given and n > 1, else here, in order.
void ForEachBlock(WorkerPool* workers, size_t n, const std::function<void(size_t)>& fn);

// Makes blocks instead of decompressing them: a carrier's evaluation
// (carrier.h). A loader given one reads nothing of its own source.
class BlockMaker {
 public:
  virtual ~BlockMaker() = default;
  virtual Result<cache::Value> Make(int64_t chunk, int64_t block) const = 0;
};

class BlockLoader {
 public:
  // `padded`: chunks hold the chunk shape padded to whole blocks (b2nd,
  // caterva); a plain super-chunk's are unpadded, its last one possibly
  // short. `geometry`: the array's, for decompressors bound to it.
  BlockLoader(StoreContext& context, uint64_t cache_id, const CountedSource& source,
              const ReadPolicy& policy, const ChunkDirectory& directory,
              const geometry::ArrayLayout& layout, bool padded,
              std::optional<codec::ArrayGeometry> geometry);
  BlockLoader(const BlockLoader&) = delete;
  BlockLoader& operator=(const BlockLoader&) = delete;

  // Fills `loads` (its blocks listed) with the plan; reads chunk heads the
  // cache lacks (on `workers` when given).
  void Plan(BlockLoads& loads, WorkerPool* workers) const;
  // Loads the planned blocks into the cache (and into loads.blocks).
  void Run(BlockLoads& loads, WorkerPool* workers) const;
  // From now on blocks are made by `maker` (which outlives the loader).
  void set_maker(const BlockMaker* maker) { maker_ = maker; }
  // Reads of the source wait for the network (CostProfile::network()).
  bool network() const { return network_; }
  // A network plan is waiting for the block's bytes (read-ahead skips it,
  // as it skips a block being decoded: BlockCache::ContainsOrLoading).
  bool Fetching(int64_t chunk, int64_t block) const;

 private:
  friend class PlanRun;  // plan_run.h: the state of one Run

  // Plan's steps (block_plan.cc).
  std::vector<size_t> CachedHeads(BlockLoads& loads) const;
  void FindHeads(BlockLoads& loads, WorkerPool* workers) const;
  void MarkPlannable(BlockLoads& loads) const;
  std::vector<SourceSpan> BlockSpans(BlockLoads& loads, const std::vector<size_t>& block_chunk,
                                     std::vector<size_t>* span_block) const;
  // Run with a maker: nothing is read.
  void RunMade(BlockLoads& loads, WorkerPool* workers) const;
  Result<cache::Value> DecodePlanned(const BlockLoads& loads, size_t index) const;
  Result<cache::Value> DecodeBlock(int64_t chunk, int64_t block) const;
  Result<cache::Value> DecodeWholeChunk(int64_t chunk, int64_t expected,
                                        const codec::ChunkInfo& info) const;
  // Decompressed bytes the chunk holds, as the layout says.
  int64_t ExpectedChunkBytes(int64_t chunk) const;
  // The pool to decode a chunk with: the mount's, or this array's bound one.
  Result<codec::DecompressorPool*> DecompressorsFor(const codec::ChunkInfo& info) const;

  StoreContext& context_;
  const uint64_t cache_id_;
  const CountedSource& source_;
  const bool network_ = source_.source().cost().network();
  const ReadPolicy& policy_;
  const ChunkDirectory& directory_;
  const geometry::ArrayLayout& layout_;
  const bool padded_;
  const std::optional<codec::ArrayGeometry> geometry_;
  const BlockMaker* maker_ = nullptr;
  // Block reads in flight (or landed, not yet decoded): fetched once however
  // many plans want their bytes at once.
  mutable SpanFlights flights_;
  // The blocks of the network plans running now, with how many plans each.
  mutable std::mutex fetching_mutex_;  // leaf lock
  mutable std::map<std::pair<int64_t, int64_t>, int> fetching_;
  // Decompressors bound to this array, made on the first chunk whose
  // pipeline reads the super-chunk (ZFP, NDCELL, NDMEAN, BYTEDELTA meta 0);
  // other containers never pay for them. bound_status_ keeps the reason
  // when the array cannot be bound.
  mutable std::once_flag bound_once_;
  mutable std::unique_ptr<codec::DecompressorPool> bound_pool_;
  mutable Status bound_status_;
};

}  // namespace b2ndfs::store
