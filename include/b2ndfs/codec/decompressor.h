// codec: a thin RAII layer over c-blosc2 decompression.
//
// A Decompressor owns one blosc2 decompression context and is used by one
// thread at a time (c-blosc2 contexts carry per-call state). A pool lends them
// to worker threads so that no context is ever shared, and bounds how many
// exist. A Decompressor made
// for an ArrayBinding (binding.h) gives c-blosc2 the array's geometry for the
// codecs and filters that read it from the super-chunk (ZFP, NDCELL, NDMEAN,
// BYTEDELTA with meta 0); one made without refuses such chunks, and one made
// with refuses chunks that do not fit the binding, before c-blosc2 sees them. Chunks are untrusted:
// InspectChunk() checks the header against the bytes actually present before
// any decompression is attempted, and InspectChunkHeader(), InspectChunk() and
// every Decompressor method refuse a chunk that names a codec or filter c-blosc2
// does not have built in (it would load a plugin for it: see builtin.h).
// Errors: Status(EIO) naming what is wrong with the chunk.
// Thread-safety: Decompressor: one thread at a time; DecompressorPool: any.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "b2ndfs/codec/binding.h"
#include "b2ndfs/util/status.h"

struct blosc2_context_s;

namespace b2ndfs::codec {

// Calls blosc2_init() once per process; every entry point below does it too.
void EnsureInitialized();

// Blosc2 chunk header length: what must be read to learn a chunk's sizes.
constexpr int64_t kChunkHeaderSize = 32;

struct ChunkInfo {
  int32_t nbytes = 0;  // decompressed size
  int32_t cbytes = 0;  // size of the compressed chunk, header included
  // Bytes per block; nbytes for a chunk with variable-length blocks, which is
  // treated as one block.
  int32_t blocksize = 0;
  int32_t typesize = 0;
  bool special = false;  // a run of zeros / NaN / a value / uninitialised
  // Blocks cannot be decoded on their own: the delta filter codes every block
  // against block 0, and c-blosc2's partial decoders (2.17 and 3.3) skip it
  // (wrong bytes); its getitem fails on dictionary chunks (zstd, lz4, lz4hc)
  // and on chunks with variable-length blocks, and on ZFP fixed-rate chunks
  // takes ZFP's cell decoder, which fails on 4-D blocks and dereferences the
  // super-chunk unchecked. Such chunks are always decompressed whole.
  bool needs_whole_chunk = false;
  // The pipeline reads the array's geometry or item size from the context's
  // super-chunk: decode with a Decompressor bound to the array (binding.h).
  ChunkNeeds needs;
  // Chunk format 6 (c-blosc2 3.3, flags2 BLOSC2_VL_BLOCKS): the header's
  // blocksize field holds nblocks, and each block has its own length.
  bool vl_blocks = false;
  bool memcpyed = false;    // stored uncompressed right after the header
  int32_t header_size = 0;  // 32 (Blosc2 extended header) or 16
  int64_t nblocks = 0;
};

// How much of a chunk's start holds what is needed to find its blocks: the
// header, and the block offsets of a compressed chunk.
int64_t ChunkHeadSize(const ChunkInfo& info);

// The bytes [begin, end) of a compressed (not memcpyed, not special) chunk
// that hold the blocks covering decompressed bytes [offset, offset + length),
// found from the chunk's head (ChunkHeadSize bytes).
struct ChunkSpan {
  int64_t begin = 0;
  int64_t end = 0;
};
Result<ChunkSpan> SpanForRange(std::span<const uint8_t> head, const ChunkInfo& info, int64_t offset,
                               int64_t length);

// Writes to `dest` (ChunkHeadSize(info) bytes) the chunk's head rebased for a
// buffer in which the chunk's bytes [span.begin, span.end) begin `distance`
// bytes after the head's start and the buffer ends `cbytes` bytes after it:
// block offsets inside the span move with it, the others point at its start
// (they are never decoded), and cbytes is set. Those `cbytes` bytes from the
// head on then decode like the original chunk for the blocks inside the span
// (Decompressor::DecompressRange), whatever lies between head and span, so
// one source read can serve the blocks of several chunks without a copy.
Status RebaseChunkHead(std::span<const uint8_t> head, const ChunkInfo& info, const ChunkSpan& span,
                       int64_t distance, int64_t cbytes, std::span<uint8_t> dest);

// Reads sizes from the first kChunkHeaderSize bytes of a chunk (at least 16,
// and 32 for an extended header); EIO also for a codec or filter that is not
// built in (CheckChunkPipeline).
Result<ChunkInfo> InspectChunkHeader(std::span<const uint8_t> header);
// Validates a whole chunk: header sane and cbytes == chunk.size().
Result<ChunkInfo> InspectChunk(std::span<const uint8_t> chunk);

class Decompressor {
 public:
  // Without a binding, chunks whose `needs` are not empty are refused (EIO).
  explicit Decompressor(std::shared_ptr<const ArrayBinding> binding = nullptr);
  ~Decompressor();
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  // Decompresses the whole chunk; out.size() must equal its nbytes.
  Status DecompressAll(std::span<const uint8_t> chunk, std::span<uint8_t> out);
  // Decompresses bytes [byte_offset, byte_offset + out.size()) of the chunk,
  // touching only the blocks that hold them.
  Status DecompressRange(std::span<const uint8_t> chunk, int64_t byte_offset,
                         std::span<uint8_t> out);
  // The same from the chunk's head and only the span of it that
  // SpanForRange() named (`part` = chunk bytes [span.begin, span.end)), so
  // that a read of a few blocks never reads the whole compressed chunk.
  Status DecompressRangeFromPart(std::span<const uint8_t> head, const ChunkInfo& info,
                                 const ChunkSpan& span, std::span<const uint8_t> part,
                                 int64_t byte_offset, std::span<uint8_t> out);

 private:
  // OK when this context may hand the chunk to c-blosc2 (see the class comment).
  Status CheckContext(std::span<const uint8_t> chunk, const ChunkInfo& info) const;
  std::shared_ptr<const ArrayBinding> binding_;
  blosc2_context_s* context_ = nullptr;
  std::vector<uint8_t> scratch_;    // for ranges not aligned to the typesize
  std::vector<uint8_t> assembled_;  // head + part, rebased: see DecompressRangeFromPart
};

class DecompressorPool {
 public:
  class Lease {
   public:
    Lease(DecompressorPool* pool, std::unique_ptr<Decompressor> d)
        : pool_(pool), decompressor_(std::move(d)) {}
    Lease(Lease&&) = default;
    ~Lease();
    Decompressor* operator->() { return decompressor_.get(); }
    Decompressor& operator*() { return *decompressor_; }

   private:
    DecompressorPool* pool_;
    std::unique_ptr<Decompressor> decompressor_;
  };

  // At most `max_contexts` contexts exist at once, lent or idle; Acquire()
  // waits for one to come back beyond that. A context keeps c-blosc2's
  // scratch for the largest block it decoded (about four blocks: 4 MiB for
  // 1 MiB blocks), so the bound is what decompression costs outside the block
  // cache; more decoders than CPUs would only take turns anyway. No thread
  // may hold two leases of one pool (the second would wait for itself).
  // Contexts are bound to `binding` when given.
  explicit DecompressorPool(size_t max_contexts,
                            std::shared_ptr<const ArrayBinding> binding = nullptr)
      : max_contexts_(std::max<size_t>(max_contexts, 1)), binding_(std::move(binding)) {}
  Lease Acquire();
  // Creates contexts until `count` are idle (within max_contexts): the first
  // reads then find them made.
  void Prepare(size_t count);
  size_t max_contexts() const { return max_contexts_; }
  // Contexts made so far and not freed (lent or idle).
  size_t live_contexts() const;

 private:
  // A new context, counted in live_ by the caller; uncounted if making it throws.
  std::unique_ptr<Decompressor> MakeCounted();
  void Return(std::unique_ptr<Decompressor> d);
  const size_t max_contexts_;
  std::shared_ptr<const ArrayBinding> binding_;
  mutable std::mutex mutex_;  // leaf lock
  std::condition_variable returned_;
  size_t live_ = 0;  // guarded by mutex_, as idle_
  std::vector<std::unique_ptr<Decompressor>> idle_;
};

}  // namespace b2ndfs::codec
