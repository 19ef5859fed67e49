// Decoding one block at a time (or a whole chunk, once, where blocks cannot
// be decoded alone), and the decompressors to do it with.
#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>

#include "b2ndfs/util/checked_math.h"
#include "block_loader.h"
#include "cache_keys.h"

namespace b2ndfs::store {

namespace {

Status FillSpecial(format::ChunkKind kind, int64_t itemsize, uint8_t* out, size_t size) {
  switch (kind) {
    case format::ChunkKind::kZeros:
    case format::ChunkKind::kUninitialized:  // undefined content: zeros, like c-blosc2
      std::memset(out, 0, size);
      return Status::Ok();
    case format::ChunkKind::kNaN:
      if (itemsize == 4) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        for (size_t i = 0; i + 4 <= size; i += 4) std::memcpy(out + i, &nan, 4);
      } else if (itemsize == 8) {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        for (size_t i = 0; i + 8 <= size; i += 8) std::memcpy(out + i, &nan, 8);
      } else {
        return InvalidData("NaN chunk with " + std::to_string(itemsize) + "-byte items");
      }
      return Status::Ok();
    case format::ChunkKind::kStored:
      break;
  }
  return InvalidData("not a special chunk");
}

}  // namespace

BlockLoader::BlockLoader(StoreContext& context, uint64_t cache_id, const CountedSource& source,
                         const ReadPolicy& policy, const ChunkDirectory& directory,
                         const geometry::ArrayLayout& layout, bool padded,
                         std::optional<codec::ArrayGeometry> geometry)
    : context_(context),
      cache_id_(cache_id),
      source_(source),
      policy_(policy),
      directory_(directory),
      layout_(layout),
      padded_(padded),
      geometry_(std::move(geometry)) {}

int64_t BlockLoader::ExpectedChunkBytes(int64_t chunk) const {
  return (padded_ ? layout_.ChunkStoredItems(chunk) : layout_.ChunkBox(chunk).NumItems()) *
         layout_.itemsize();
}

Result<codec::DecompressorPool*> BlockLoader::DecompressorsFor(const codec::ChunkInfo& info) const {
  if (!info.needs.any()) return context_.decompressors;
  std::call_once(bound_once_, [&] {
    int64_t blocksize = layout_.itemsize();
    if (geometry_) {
      for (int64_t b : geometry_->blockshape) {
        auto next = CheckedMul(blocksize, b);
        blocksize = next && *next <= INT32_MAX ? *next : int64_t{INT32_MAX} + 1;
      }
    }
    if (layout_.itemsize() > INT32_MAX || blocksize > INT32_MAX) {
      bound_status_ = InvalidData("blocks are too large to bind the array");
      return;
    }
    auto binding = codec::ArrayBinding::Create(static_cast<int32_t>(layout_.itemsize()),
                                               static_cast<int32_t>(blocksize), geometry_);
    if (!binding.ok()) {
      bound_status_ = binding.status();
      return;
    }
    // As many decoders as the mount's own pool allows.
    bound_pool_ = std::make_unique<codec::DecompressorPool>(context_.decompressors->max_contexts(),
                                                            std::move(binding).value());
  });
  if (bound_pool_ == nullptr) return bound_status_;
  return bound_pool_.get();
}

Result<cache::Value> BlockLoader::DecodeWholeChunk(int64_t chunk_index, int64_t expected,
                                                   const codec::ChunkInfo& info) const {
  return context_.cache->GetOrLoad(
      WholeChunkKey(cache_id_, chunk_index), [&]() -> Result<cache::Value> {
        B2NDFS_ASSIGN_OR_RETURN(cache::Value chunk, directory_.FetchCompressed(chunk_index));
        B2NDFS_ASSIGN_OR_RETURN(codec::DecompressorPool * pool, DecompressorsFor(info));
        auto whole = std::make_shared<cache::Bytes>(static_cast<size_t>(expected));
        {
          auto lease = pool->Acquire();
          B2NDFS_RETURN_IF_ERROR(lease->DecompressAll(*chunk, *whole));
        }
        GlobalReadStats().whole_chunk_decodes++;
        GlobalReadStats().bytes_decompressed += whole->size();
        return cache::Value(std::move(whole));
      });
}

Result<cache::Value> BlockLoader::DecodeBlock(int64_t chunk_index, int64_t block_index) const {
  const int64_t itemsize = layout_.itemsize();
  const int64_t block_bytes = layout_.BlockItems(chunk_index, block_index) * itemsize;
  const int64_t first_byte = layout_.BlockFirstItem(chunk_index, block_index) * itemsize;
  auto block = std::make_shared<cache::Bytes>(static_cast<size_t>(block_bytes));
  B2NDFS_ASSIGN_OR_RETURN(const ChunkRef ref, directory_.Locate(chunk_index));
  if (ref.kind != format::ChunkKind::kStored) {
    B2NDFS_RETURN_IF_ERROR(FillSpecial(ref.kind, itemsize, block->data(), block->size()));
    return cache::Value(std::move(block));
  }
  B2NDFS_ASSIGN_OR_RETURN(cache::Value head, directory_.FetchHead(chunk_index));
  B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, codec::InspectChunkHeader(*head));
  const int64_t expected = ExpectedChunkBytes(chunk_index);
  if (ci.nbytes != expected) {
    return InvalidData("chunk decompresses to " + std::to_string(ci.nbytes) +
                       " bytes but the layout needs " + std::to_string(expected));
  }
  // The part of this block that the chunk really stores; the rest (only in a
  // short last chunk) is never copied out.
  const int64_t stored = std::clamp<int64_t>(expected - first_byte, 0, block_bytes);
  if (stored < block_bytes) std::memset(block->data() + stored, 0, block_bytes - stored);
  if (ci.needs_whole_chunk) {
    // Decoding any block costs the whole chunk: decode it once, shared by
    // every reader of its blocks, and copy blocks out of it.
    B2NDFS_ASSIGN_OR_RETURN(cache::Value whole, DecodeWholeChunk(chunk_index, expected, ci));
    std::memcpy(block->data(), whole->data() + first_byte, static_cast<size_t>(stored));
    return cache::Value(std::move(block));
  }
  const std::span<uint8_t> out(block->data(), static_cast<size_t>(stored));
  if (stored == 0) {
    // Only padding of a short last chunk: nothing stored to decode.
  } else if (ci.special) {
    // A run of one value: the chunk is just its header (and the value).
    B2NDFS_ASSIGN_OR_RETURN(cache::Value chunk, directory_.FetchCompressed(chunk_index));
    B2NDFS_ASSIGN_OR_RETURN(codec::DecompressorPool * pool, DecompressorsFor(ci));
    auto lease = pool->Acquire();
    B2NDFS_RETURN_IF_ERROR(lease->DecompressRange(*chunk, first_byte, out));
  } else if (ci.memcpyed) {
    // Stored as is after the header: read the bytes, nothing to decode.
    if (ci.header_size + ci.nbytes > ci.cbytes) return InvalidData("memcpyed chunk is truncated");
    B2NDFS_RETURN_IF_ERROR(
        directory_.ReadBytes(ref, ci.header_size + first_byte, stored, out.data()));
  } else {
    // Read only the compressed bytes of the blocks needed, not the chunk.
    B2NDFS_ASSIGN_OR_RETURN(codec::ChunkSpan span,
                            codec::SpanForRange(*head, ci, first_byte, stored));
    cache::Bytes part(static_cast<size_t>(span.end - span.begin));
    B2NDFS_RETURN_IF_ERROR(
        directory_.ReadBytes(ref, span.begin, span.end - span.begin, part.data()));
    GlobalReadStats().bytes_fetched += part.size();
    B2NDFS_ASSIGN_OR_RETURN(codec::DecompressorPool * pool, DecompressorsFor(ci));
    auto lease = pool->Acquire();
    B2NDFS_RETURN_IF_ERROR(lease->DecompressRangeFromPart(*head, ci, span, part, first_byte, out));
  }
  GlobalReadStats().blocks_decompressed++;
  GlobalReadStats().bytes_decompressed += block->size();
  return cache::Value(std::move(block));
}

Result<cache::Value> BlockLoader::DecodePlanned(const BlockLoads& loads, size_t index) const {
  const BlockLoads::Block& b = loads.blocks[index];
  const BlockLoads::View& view = loads.views[static_cast<size_t>(b.view)];
  const BlockLoads::Read& read = loads.reads[view.read];
  const BlockLoads::Chunk& chunk = loads.chunks[view.chunk];
  B2NDFS_RETURN_IF_ERROR(read.status);
  B2NDFS_RETURN_IF_ERROR(view.status);
  const int64_t block_bytes = layout_.BlockItems(b.chunk, b.block) * layout_.itemsize();
  auto block = std::make_shared<cache::Bytes>(static_cast<size_t>(block_bytes));
  // Only a short last chunk stores less than the block: the rest is never
  // copied out (as in DecodeBlock).
  if (b.stored < block_bytes) std::memset(block->data() + b.stored, 0, block_bytes - b.stored);
  // The rebased head, the later views' heads, and the view's fetched bytes
  // (PlanRun::RebaseHeads, block_run.cc): nothing else.
  const std::span<const uint8_t> bytes(read.buffer->data() + view.head_pos,
                                       static_cast<size_t>(view.cbytes));
  B2NDFS_ASSIGN_OR_RETURN(codec::DecompressorPool * pool, DecompressorsFor(chunk.info));
  {
    auto lease = pool->Acquire();
    B2NDFS_RETURN_IF_ERROR(lease->DecompressRange(
        bytes, b.first_byte, std::span<uint8_t>(block->data(), static_cast<size_t>(b.stored))));
  }
  GlobalReadStats().blocks_decompressed++;
  GlobalReadStats().bytes_decompressed += block->size();
  return cache::Value(std::move(block));
}

}  // namespace b2ndfs::store
