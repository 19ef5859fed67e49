// store: one opened generation of a container, and reads of any box of its
// array.
//
// A Container is built from a ByteSource (one version of a frame file, a
// sparse frame, or later a remote object): its decoded metadata, chunk index
// and array layout, all immutable after Open(). Any virtual file that streams
// the array is an ArrayStream (a header, then a box of the array in C order);
// Read() maps a byte range of it to the blocks it touches, fetches them
// through the shared block cache (decompressing misses) and copies the pieces
// out. The container does not know which virtual files exist: a FileCatalog
// (the views module) describes them for meta.json, rendered once at open.
// Memory: what a container holds (metadata, its compressed chunk index,
// meta.json) is charged to the block cache's budget while it lives.
// Cache keys use the generation's cache_id, so a generation closed and
// reopened unchanged finds its blocks still cached.
// Errors: Open() never fails: an undecodable container carries error() and
// every data read returns EIO; transient() says the error came from reading
// the source (a descriptor limit, a vanished file, a flaky disk), so that the
// caller retries instead of remembering it. Read errors name the source.
// Thread-safety: all const methods may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/geometry/geometry.h"
#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::store {

class WorkerPool;
class PinBudget;
class Container;

// Services shared by every container of a mount.
struct StoreContext {
  cache::BlockCache* cache = nullptr;
  codec::DecompressorPool* decompressors = nullptr;
  WorkerPool* workers = nullptr;  // optional: parallel decompression of misses
  PinBudget* pins = nullptr;      // optional: mount-wide limit on pinned blocks
  // Bytes of blocks one read may pin at once before it copies them out.
  size_t max_pinned_bytes = 64u << 20;
  // A remote container of at most this many chunks has every chunk head
  // (the block offsets a read must have before it can ask for blocks)
  // fetched in the background when it opens, so that its first read waits
  // one round trip, not two; 0: each head with the first read of its chunk.
  int64_t remote_heads_max_chunks = 64;
};

// The bytes of a virtual file that streams the array: `header` (an .npy or
// NIfTI header, often empty), then the items of `box` in C order.
struct ArrayStream {
  std::string header;
  geometry::Box box;
};

// One kind of virtual file, as meta.json's "files" lists it.
struct FileDescription {
  std::string name;
  std::vector<int64_t> shape;
  int64_t size = 0;
  // Non-empty: the file is not offered, and this says why.
  std::string absent;
};

// Describes the virtual files of a container for meta.json.
class FileCatalog {
 public:
  virtual ~FileCatalog() = default;
  virtual std::vector<FileDescription> Describe(const Container& container) const = 0;
};

struct ReadStats {
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> bytes_served{0};
  std::atomic<uint64_t> read_errors{0};
  std::atomic<uint64_t> blocks_decompressed{0};
  std::atomic<uint64_t> bytes_decompressed{0};
  // Chunks decompressed whole (delta, dictionaries): once per chunk, shared
  // by every reader that waits for one of its blocks.
  std::atomic<uint64_t> whole_chunk_decodes{0};
  std::atomic<uint64_t> chunks_fetched{0};
  std::atomic<uint64_t> bytes_fetched{0};
  // Block bytes a plan took from another plan's read of them in flight
  // (store/span_flights.h) instead of fetching them again.
  std::atomic<uint64_t> bytes_shared{0};
  // Every read a container made of its source (metadata, chunk heads, block
  // bytes): for remote sources, requests and bytes transferred.
  std::atomic<uint64_t> source_reads{0};
  std::atomic<uint64_t> source_bytes_read{0};
  // Blocks whose bytes came in a read shared with other blocks
  // (store/read_plan.h), and such reads.
  std::atomic<uint64_t> coalesced_reads{0};
  std::atomic<uint64_t> coalesced_blocks{0};
  // Background fetches of a remote container's chunk heads at open.
  std::atomic<uint64_t> heads_prefetches{0};
  std::atomic<uint64_t> prefetch_requests{0};
  std::atomic<uint64_t> prefetched_blocks{0};
  std::atomic<int64_t> pinned_bytes{0};    // blocks held by readers right now
  std::atomic<int64_t> metadata_bytes{0};  // held by open containers (charged to the cache)
  std::atomic<int64_t> containers_open{0};
  std::atomic<uint64_t> containers_opened{0};
};
ReadStats& GlobalReadStats();

class Container : public std::enable_shared_from_this<Container> {
 public:
  static std::shared_ptr<const Container> Open(std::shared_ptr<const source::ByteSource> source,
                                               StoreContext* context, uint64_t cache_id,
                                               const FileCatalog* catalog);
  ~Container();
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  // The error came from reading the source, not from its content.
  bool transient() const { return transient_; }
  const std::string& name() const { return source_->name(); }
  const source::ByteSource& source() const { return *source_; }
  uint64_t cache_id() const { return cache_id_; }
  // meta.json, rendered on first use (a read of `data` never needs it);
  // throws only std::bad_alloc, and renders again on the next call then.
  const std::string& meta_json() const;
  // Bytes of memory this container holds (charged to the cache).
  int64_t memory_bytes() const { return memory_bytes_.load(std::memory_order_relaxed); }
  // Valid only when ok().
  const geometry::ArrayLayout& layout() const { return *layout_; }
  const std::string& format_name() const { return format_name_; }
  // The NumPy descr of the items ('<f4', "[('a', '<i4')]", '|V8', ...).
  const std::string& npy_descr() const { return npy_descr_; }
  // c-blosc2's name of the frame's codec, as meta.json's "codec" ("zstd",
  // "lz4", "user:200", ...).
  std::string CodecName() const;

  int64_t StreamSize(const ArrayStream& stream) const;
  // Reads up to `length` bytes at `offset` of the stream; fewer only at its end.
  Result<size_t> Read(const ArrayStream& stream, int64_t offset, size_t length, uint8_t* out) const;
  // Reads any box of the array (inside its shape) as C-order bytes into
  // `out`, which holds box.NumItems() * itemsize bytes.
  Status ReadArrayBox(const geometry::Box& box, uint8_t* out) const;
  // Starts decompressing, on the background workers, the blocks that bytes
  // [offset, offset + length) of the stream need and the cache lacks. Best
  // effort: does nothing without workers or when their queue is full.
  void Prefetch(const ArrayStream& stream, int64_t offset, int64_t length) const;
  // Every block the stream's box touches is in the block cache now: reading
  // it would decompress nothing.
  bool StreamCached(const ArrayStream& stream) const;

 private:
  Container(std::shared_ptr<const source::ByteSource> source, StoreContext* context,
            uint64_t cache_id);
  Status Load(const FileCatalog* catalog);
  void AddCharge(int64_t delta) const;
  void DecodeVlmeta() const;
  int64_t VlmetaBytes() const;
  Status LoadLayout();
  Status LoadChunkIndex(std::vector<uint8_t> offsets_chunk);
  Status ReadSource(int64_t part, int64_t offset, int64_t length, uint8_t* out) const;
  // Counts one read of the source (ReadSource's, or one of a ReadMany) as it
  // ends: stats, and source_failed_ when it failed.
  void CountSourceRead(const Status& status, size_t length) const;
  void Charge();
  struct ChunkRef;
  Result<ChunkRef> LocateChunk(int64_t chunk_index) const;
  Result<codec::ChunkInfo> ReadChunkHeader(int64_t chunk_index) const;
  Status ReadChunkBytes(const ChunkRef& ref, int64_t offset, int64_t length, uint8_t* out) const;
  Result<cache::Value> FetchChunkHead(int64_t chunk_index) const;
  // Where a chunk's head is, and how much its first read takes.
  struct HeadProbe;
  Result<HeadProbe> PlanHeadProbe(int64_t chunk_index) const;
  // The head from the first bytes of the chunk (a second read when the
  // head is longer than the probe).
  Result<cache::Value> HeadFromProbe(const HeadProbe& probe, std::span<const uint8_t> bytes) const;
  // The heads of CHUNKS that the cache lacks, into the cache, in one
  // ReadMany (one round trip for them all from a remote source). Best
  // effort: a head not had is left to FetchChunkHead, which says why.
  void FetchChunkHeads(std::span<const int64_t> chunks) const;
  // Remote containers of few chunks: every head, on a background worker.
  void StartHeadsPrefetch() const;
  // Returns once no background fetch of heads is in flight.
  void WaitForHeadsPrefetch() const;
  // Up to ROOM chunks besides WANTED whose heads a remote container of few
  // chunks fetches with a read's own, each once (chunk_access.cc).
  std::vector<int64_t> OtherHeadsToFetch(const std::vector<int64_t>& wanted, size_t room) const;
  Result<cache::Value> FetchCompressedChunk(int64_t chunk_index) const;
  // The pool to decode a chunk with: the mount's, or this array's bound one.
  Result<codec::DecompressorPool*> DecompressorsFor(const codec::ChunkInfo& info) const;
  Result<cache::Value> DecodeWholeChunk(int64_t chunk_index, int64_t expected,
                                        const codec::ChunkInfo& info) const;
  Result<cache::Value> DecodeBlock(int64_t chunk_index, int64_t block_index) const;
  Result<cache::Value> GetBlock(int64_t chunk_index, int64_t block_index) const;
  // Loads missing blocks together (block_loads.cc): PlanLoads finds their
  // compressed spans and groups them into few source reads; RunPlan reads
  // and decodes them into the cache (single-flight per block), on `workers`
  // when given.
  struct BlockLoads;
  void PlanLoads(BlockLoads& loads, WorkerPool* workers) const;
  void RunPlan(BlockLoads& loads, WorkerPool* workers) const;
  Result<cache::Value> DecodePlanned(const BlockLoads& loads, size_t index) const;
  Status ReadBox(const geometry::Box& box, int64_t item_begin, int64_t item_end,
                 uint8_t* out) const;
  // ReadBox's warm path (container_read.cc): copies the listed pieces (of
  // sub-box p.tag, which starts at sub_dst[p.tag]); false, having copied
  // part, when a block is not cached.
  bool CopyIfCached(const std::vector<geometry::Box>& boxes,
                    std::span<const geometry::BlockPiece> pieces, std::span<const int64_t> coords,
                    std::span<uint8_t* const> sub_dst) const;
  Status ReadBoxBytes(const geometry::Box& box, int64_t offset, size_t length, uint8_t* out) const;
  std::string RenderMeta(const FileCatalog* catalog) const;

  struct Metadata;

  std::shared_ptr<const source::ByteSource> source_;
  StoreContext* context_;
  uint64_t cache_id_;
  std::string error_;
  bool transient_ = false;
  mutable std::atomic<bool> source_failed_{false};  // set while loading
  std::string format_name_;
  const FileCatalog* catalog_ = nullptr;  // for meta.json's "files"
  mutable std::mutex meta_json_mutex_;    // leaf lock; guards rendering
  mutable std::atomic<bool> meta_json_ready_{false};
  mutable std::string meta_json_;  // written once, before meta_json_ready_
  std::string npy_descr_;
  // Charged to the cache; grows or shrinks once, when meta.json is rendered.
  mutable std::atomic<int64_t> memory_bytes_{0};
  std::optional<geometry::ArrayLayout> layout_;
  std::unique_ptr<Metadata> meta_;
};

}  // namespace b2ndfs::store
