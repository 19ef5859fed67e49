// store/chunk_directory (private to store): where a container's chunks are,
// and what their heads say.
//
// Owns the chunk index, kept compressed (a huge index costs no memory up
// front): pages of it are decoded on demand through the block cache and
// validated once per page. Locate() finds a chunk's bytes; FetchHead() reads
// a chunk's head (header and block offsets: what a read needs before it can
// ask for blocks) into the cache; FetchHeads() reads many in one ReadMany.
// A container of few chunks on a network source has every head fetched with
// its first data read's (OtherHeadsToFetch: one round trip for them all),
// never at open (meta.json and stat need no head).
// Lifetime: owned by its Container, made when the frame has been parsed; it
// refers to the Container's CountedSource and ReadPolicy and to the mount's
// StoreContext, which outlive it. The layout, once decoded, sizes head
// probes (set_layout, before any read).
// Errors: Status; EIO for data that is not a valid chunk index or head.
// Thread-safety: const methods from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/format/frame.h"
#include "b2ndfs/geometry/geometry.h"
#include "b2ndfs/store/container.h"
#include "counted_source.h"
#include "read_policy.h"

namespace b2ndfs::store {

// Where a chunk is.
struct ChunkRef {
  format::ChunkKind kind = format::ChunkKind::kStored;
  int64_t offset = 0;  // contiguous: byte offset in the frame; sparse: file number
  // Where its bytes are read from: a sparse frame's chunk is a part of its
  // own, from byte 0; a contiguous frame's lies at `offset` of the frame (so
  // neighbours can share a read).
  int64_t Part(bool sparse) const { return sparse ? offset : source::kFramePart; }
  int64_t Base(bool sparse) const { return sparse ? 0 : offset; }
};

class ChunkDirectory {
 public:
  ChunkDirectory(StoreContext& context, uint64_t cache_id, const CountedSource& source,
                 const ReadPolicy& policy);
  ChunkDirectory(const ChunkDirectory&) = delete;
  ChunkDirectory& operator=(const ChunkDirectory&) = delete;

  // Takes the frame's compressed chunk index (of `nchunks` entries; empty
  // when there are none). Contiguous frames: chunk offsets count from
  // `header_size`, and chunks lie before `chunks_end` (where the index
  // starts). Decodes the first page: a corrupt index is reported at open.
  Status LoadIndex(std::vector<uint8_t> offsets_chunk, int64_t nchunks, int64_t header_size,
                   int64_t chunks_end);
  void set_layout(const geometry::ArrayLayout* layout) { layout_ = layout; }
  int64_t nchunks() const { return nchunks_; }
  // Memory the compressed index holds.
  int64_t index_bytes() const { return static_cast<int64_t>(offsets_chunk_.capacity()); }

  // A proxy cache's chunks that hold data (README.md, "Variable-length
  // data, carriers and caches"): Locate() refuses the others with EIO. Set once, at open,
  // before any read; empty: every chunk is there.
  void set_present(std::vector<bool> present) { present_ = std::move(present); }
  Result<ChunkRef> Locate(int64_t chunk) const;
  // A stored chunk's header (one small read, not cached).
  Result<codec::ChunkInfo> ReadHeader(int64_t chunk) const;
  // Bytes [offset, offset + length) of a chunk, checked to lie in the
  // chunks section.
  Status ReadBytes(const ChunkRef& ref, int64_t offset, int64_t length, uint8_t* out) const;
  // The chunk's head, from the cache or read (its cbytes checked against
  // what is stored).
  Result<cache::Value> FetchHead(int64_t chunk) const;
  // The heads of CHUNKS that the cache lacks, into the cache, in one
  // ReadMany (one round trip for them all from a network source). Best
  // effort: a head not had is left to FetchHead, which says why.
  void FetchHeads(std::span<const int64_t> chunks) const;
  // Up to heads_prefetch_max_chunks chunks besides WANTED whose heads a
  // read fetches with its own, each chunk once in the directory's life
  // (none beyond that bound of chunks).
  std::vector<int64_t> OtherHeadsToFetch(const std::vector<int64_t>& wanted) const;
  // The chunk's whole compressed bytes, through the cache.
  Result<cache::Value> FetchCompressed(int64_t chunk) const;

 private:
  // Where a chunk's head is, and how much its first read takes.
  struct HeadProbe {
    int64_t chunk = 0;
    ChunkRef ref;
    int64_t available = 0;  // bytes stored from the head's start on
    int64_t size = 0;       // of the first read
  };
  Result<HeadProbe> PlanHeadProbe(int64_t chunk) const;
  // The head from the first bytes of the chunk (a second read when the head
  // is longer than the probe).
  Result<cache::Value> HeadFromProbe(const HeadProbe& probe, std::span<const uint8_t> bytes) const;

  StoreContext& context_;
  const uint64_t cache_id_;
  const CountedSource& source_;
  const ReadPolicy& policy_;
  const bool sparse_;
  const geometry::ArrayLayout* layout_ = nullptr;
  int64_t header_size_ = 0;
  int64_t chunks_end_ = 0;
  std::vector<uint8_t> offsets_chunk_;
  int64_t nchunks_ = 0;
  int64_t index_page_entries_ = 1;
  std::vector<bool> present_;
  // The next chunk whose head a read may fetch besides its own.
  mutable std::atomic<int64_t> next_other_head_{0};
};

}  // namespace b2ndfs::store
