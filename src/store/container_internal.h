// Private to store: what a Container keeps of its frame, shared by the files
// that implement Container (container.cc opens, chunk_access.cc finds and
// decodes blocks, container_read.cc serves reads).
#pragma once

#include <atomic>
#include <climits>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/ndmeta.h"
#include "b2ndfs/store/container.h"
#include "span_flights.h"

namespace b2ndfs::store {

struct Container::ChunkRef {
  format::ChunkKind kind = format::ChunkKind::kStored;
  int64_t offset = 0;  // contiguous: byte offset in the frame; sparse: file number
  // Where its bytes are read from: a sparse frame's chunk is a part of its
  // own, from byte 0; a contiguous frame's lies at `offset` of the frame (so
  // neighbours can share a read).
  int64_t Part(bool sparse) const { return sparse ? offset : source::kFramePart; }
  int64_t Base(bool sparse) const { return sparse ? 0 : offset; }
};

struct Container::HeadProbe {
  int64_t chunk = 0;
  ChunkRef ref;
  int64_t available = 0;  // bytes stored from the head's start on
  int64_t size = 0;       // of the first read
};

struct Container::Metadata {
  int64_t chunks_end = 0;  // contiguous: where the chunk index starts
  format::FrameInfo frame_info;
  std::optional<format::NdMeta> ndmeta;
  // The chunk index stays compressed; pages of it are decoded on demand
  // (through the block cache), so a huge index costs no memory up front.
  std::vector<uint8_t> offsets_chunk;
  int64_t nchunks = 0;
  int64_t index_page_entries = 0;
  std::vector<format::NamedBytes> vlmeta;  // decompressed contents, until rendered
  // Decompressors bound to this array (codec/binding.h), made on the first
  // chunk whose pipeline reads the super-chunk (ZFP, NDCELL, NDMEAN,
  // BYTEDELTA meta 0); other containers never pay for them. bound_status
  // keeps the reason when the array cannot be bound.
  std::once_flag bound_once;
  std::unique_ptr<codec::DecompressorPool> bound_pool;
  Status bound_status;
  // Block reads in flight (or landed, not yet decoded): fetched once however
  // many plans want their bytes at once.
  SpanFlights flights;
  // The next chunk whose head a read may fetch besides its own (remote
  // containers of few chunks: chunk_access.cc OtherHeadsToFetch).
  std::atomic<int64_t> next_other_head{0};
  // A background fetch of every head (StartHeadsPrefetch) is in flight:
  // reads wait for it rather than ask for the same heads again.
  std::mutex heads_mutex;
  std::condition_variable heads_fetched;
  bool heads_in_flight = false;  // guarded by heads_mutex
};

// Blocks loaded together (block_loads.cc). PlanLoads fills everything but
// the blocks' results; RunPlan allocates the reads' buffers (buffer_bytes in
// all), fills value or status of every block, and frees the buffers.
struct Container::BlockLoads {
  struct Block {
    int64_t chunk = 0;
    int64_t block = 0;
    // Where its compressed bytes come from: views[view], or -1 when the
    // block is loaded alone (DecodeBlock: special chunks, chunks decoded
    // whole, memcpyed chunks, errors, which it reports).
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

// The first read of a chunk's head: at least this (its header and the
// offsets of up to ~500 blocks), else the header and the offsets of the
// blocks the layout gives the chunk, plus a little (a longer header), up to
// the maximum (16,000 blocks).
constexpr int64_t kChunkHeadProbeBytes = 2048;
constexpr int64_t kChunkHeadSlackBytes = 32;
constexpr int64_t kMaxChunkHeadProbeBytes = int64_t{64} << 10;

// A container's background fetch of its chunk heads is dropped rather than
// queued behind this many other tasks (its reads then fetch the heads).
constexpr size_t kHeadsPrefetchMaxQueued = 64;

// Decompressed bytes of blocks one read-ahead task loads together: their
// compressed bytes come in few large reads (a remote request per few hundred
// KiB rather than per block), and a window of read-ahead still makes a few
// tasks to run in parallel.
constexpr int64_t kPrefetchBytesPerTask = int64_t{2} << 20;
// Remote: larger, as every request costs a round trip (and a server's
// per-request work).
constexpr int64_t kRemotePrefetchBytesPerTask = int64_t{4} << 20;

// Cache keys of a container's entries besides its blocks (EntryKind::kOther).
constexpr int64_t kIndexPageBlock = -1;  // chunk = page number
constexpr int64_t kChunkHeadBlock = -2;
constexpr int64_t kWholeChunkBlock = -3;

// The cache key of a decompressed block.
inline cache::Key BlockKey(uint64_t container_id, int64_t chunk, int64_t block) {
  return cache::Key{container_id, chunk, block, cache::EntryKind::kBlock};
}

// The cache key of a chunk's head (FetchChunkHead).
inline cache::Key ChunkHeadKey(uint64_t container_id, int64_t chunk) {
  return cache::Key{container_id, chunk, kChunkHeadBlock, cache::EntryKind::kOther};
}

}  // namespace b2ndfs::store
