// store/cache_keys (private to store): the block cache's keys of a
// container generation's entries (cache_id), shared by its parts.
#pragma once

#include <cstdint>

#include "b2ndfs/cache/block_cache.h"

namespace b2ndfs::store {

// Entries besides blocks (EntryKind::kOther), by their block number.
constexpr int64_t kIndexPageBlock = -1;  // chunk = page number
constexpr int64_t kChunkHeadBlock = -2;
constexpr int64_t kWholeChunkBlock = -3;
constexpr int64_t kDerivedBlock = -16;   // minus the variant, 0..15
constexpr int64_t kComputedBlock = -64;  // minus the space, 0..63 (Container::Computed)

// A decompressed block.
inline cache::Key BlockKey(uint64_t cache_id, int64_t chunk, int64_t block) {
  return cache::Key{cache_id, chunk, block, cache::EntryKind::kBlock};
}

// A chunk's head: its header and block offsets (ChunkDirectory::FetchHead).
inline cache::Key ChunkHeadKey(uint64_t cache_id, int64_t chunk) {
  return cache::Key{cache_id, chunk, kChunkHeadBlock, cache::EntryKind::kOther};
}

// A page of the decoded chunk index (ChunkDirectory::Locate).
inline cache::Key IndexPageKey(uint64_t cache_id, int64_t page) {
  return cache::Key{cache_id, page, kIndexPageBlock, cache::EntryKind::kOther};
}

// A chunk decoded whole (BlockLoader, chunks whose blocks cannot be decoded
// alone).
inline cache::Key WholeChunkKey(uint64_t cache_id, int64_t chunk) {
  return cache::Key{cache_id, chunk, kWholeChunkBlock, cache::EntryKind::kOther};
}

// Something made from a decompressed chunk (Container::DerivedFromChunk).
inline cache::Key DerivedKey(uint64_t cache_id, int64_t chunk, int variant) {
  return cache::Key{cache_id, chunk, kDerivedBlock - variant, cache::EntryKind::kOther};
}

// A chunk's compressed bytes (ChunkDirectory::FetchCompressed).
inline cache::Key CompressedChunkKey(uint64_t cache_id, int64_t chunk) {
  return cache::Key{cache_id, chunk, 0, cache::EntryKind::kCompressedChunk};
}

}  // namespace b2ndfs::store
