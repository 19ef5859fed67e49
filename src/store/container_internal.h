// Private to store: what a Container keeps of its frame, shared by the files
// that implement Container (container.cc opens, chunk_access.cc finds and
// decodes blocks, container_read.cc serves reads).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/ndmeta.h"
#include "b2ndfs/store/container.h"

namespace b2ndfs::store {

struct Container::ChunkRef {
  format::ChunkKind kind = format::ChunkKind::kStored;
  int64_t offset = 0;  // contiguous: byte offset in the frame; sparse: file number
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
};

// Idle bound decompressors kept per container: a few, since such containers
// are rare and each context holds the block buffers of its last chunk.
constexpr size_t kBoundPoolIdle = 4;

// Cache keys of a container's entries besides its blocks (EntryKind::kOther).
constexpr int64_t kIndexPageBlock = -1;  // chunk = page number
constexpr int64_t kChunkHeadBlock = -2;
constexpr int64_t kWholeChunkBlock = -3;

}  // namespace b2ndfs::store
