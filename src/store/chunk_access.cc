// Finding chunks and decoding blocks: the chunk index (paged through the
// cache), chunk heads, and one block at a time (or a whole chunk, once, where
// blocks cannot be decoded alone).
#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>

#include "b2ndfs/store/worker_pool.h"
#include "b2ndfs/util/checked_math.h"
#include "container_internal.h"

namespace b2ndfs::store {

using geometry::ArrayLayout;

Status Container::LoadChunkIndex(std::vector<uint8_t> offsets_chunk) {
  Metadata& src = *meta_;
  const int64_t nchunks = src.frame_info.nchunks;
  src.nchunks = nchunks;
  if (nchunks == 0) return Status::Ok();
  if (offsets_chunk.empty()) return InvalidData("frame has chunks but no chunk index");
  B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo info, codec::InspectChunk(offsets_chunk));
  auto need = CheckedMul(nchunks, 8);
  if (!need || info.nbytes != *need) {
    return InvalidData("chunk index holds " + std::to_string(info.nbytes) + " bytes for " +
                       std::to_string(nchunks) + " chunks");
  }
  src.offsets_chunk = std::move(offsets_chunk);
  // Pages of whole index blocks keep getitem from decoding a block twice.
  const int64_t block_entries = std::max<int64_t>(info.blocksize / 8, 1);
  src.index_page_entries =
      std::max<int64_t>(1, (int64_t{32} << 10) / 8 / block_entries) * block_entries;
  // Decode the first page now: a corrupt index is reported at open.
  return LocateChunk(0).status();
}

Result<Container::ChunkRef> Container::LocateChunk(int64_t chunk_index) const {
  const Metadata& src = *meta_;
  if (chunk_index < 0 || chunk_index >= src.nchunks) {
    return InvalidData("chunk " + std::to_string(chunk_index) + " is not in the chunk index");
  }
  const int64_t page = chunk_index / src.index_page_entries;
  const cache::Key key{cache_id_, page, kIndexPageBlock, cache::EntryKind::kOther};
  auto entries = context_->cache->GetOrLoad(key, [&]() -> Result<cache::Value> {
    const int64_t first = page * src.index_page_entries;
    const int64_t count = std::min(src.index_page_entries, src.nchunks - first);
    auto raw = std::make_shared<cache::Bytes>(static_cast<size_t>(count * 8));
    {
      auto lease = context_->decompressors->Acquire();
      B2NDFS_RETURN_IF_ERROR(lease->DecompressRange(src.offsets_chunk, first * 8, *raw));
    }
    // Validate the whole page once; lookups then only read it.
    const int64_t chunks_size = src.chunks_end - src.frame_info.header_size;
    for (int64_t i = 0; i < count; ++i) {
      int64_t value;
      std::memcpy(&value, raw->data() + 8 * i, 8);  // little endian on disk and here
      auto location = format::DecodeChunkOffset(value);
      if (!location.ok())
        return location.status().WithContext("chunk " + std::to_string(first + i));
      if (!source_->sparse() && location->kind == format::ChunkKind::kStored &&
          (location->offset < 0 || location->offset >= chunks_size)) {
        return InvalidData("chunk " + std::to_string(first + i) + " offset " +
                           std::to_string(location->offset) + " lies outside the " +
                           std::to_string(chunks_size) + "-byte chunks section");
      }
    }
    return cache::Value(std::move(raw));
  });
  if (!entries.ok()) return entries.status().WithContext("chunk index");
  int64_t value;
  std::memcpy(&value, (*entries)->data() + 8 * (chunk_index - page * src.index_page_entries), 8);
  auto location = format::DecodeChunkOffset(value);
  if (!location.ok()) return location.status();
  ChunkRef ref{location->kind, location->offset};
  // Contiguous frames count chunk offsets from the end of the header.
  if (!source_->sparse() && ref.kind == format::ChunkKind::kStored)
    ref.offset += src.frame_info.header_size;
  return ref;
}

Result<codec::ChunkInfo> Container::ReadChunkHeader(int64_t chunk_index) const {
  B2NDFS_ASSIGN_OR_RETURN(const ChunkRef ref, LocateChunk(chunk_index));
  uint8_t header[codec::kChunkHeaderSize];
  B2NDFS_RETURN_IF_ERROR(ReadChunkBytes(ref, 0, sizeof header, header));
  auto info = codec::InspectChunkHeader(header);
  if (!info.ok()) return info.status().WithContext("chunk " + std::to_string(chunk_index));
  return info;
}

Status Container::ReadChunkBytes(const ChunkRef& ref, int64_t offset, int64_t length,
                                 uint8_t* out) const {
  const Metadata& src = *meta_;
  if (offset < 0 || length < 0) return InvalidData("negative chunk range");
  const bool sparse = source_->sparse();
  if (!sparse && ref.offset + offset + length > src.chunks_end) {
    return InvalidData("chunk bytes [" + std::to_string(offset) + ", " +
                       std::to_string(offset + length) + ") pass the end of the chunks section");
  }
  return ReadSource(ref.Part(sparse), ref.Base(sparse) + offset, length, out);
}

Result<Container::HeadProbe> Container::PlanHeadProbe(int64_t chunk_index) const {
  HeadProbe probe;
  probe.chunk = chunk_index;
  B2NDFS_ASSIGN_OR_RETURN(probe.ref, LocateChunk(chunk_index));
  if (probe.ref.kind != format::ChunkKind::kStored) return InvalidData("chunk is not stored");
  if (source_->sparse()) {
    B2NDFS_ASSIGN_OR_RETURN(probe.available, source_->PartSize(probe.ref.offset));
  } else {
    probe.available = meta_->chunks_end - probe.ref.offset;
  }
  // One read brings the header and the block offsets: sized for the blocks
  // the layout says the chunk has (a remote request costs the same for a few
  // more bytes, a second one a round trip more); a second read only for a
  // chunk with more blocks than that, or beyond kMaxChunkHeadProbeBytes.
  int64_t wanted = kChunkHeadProbeBytes;
  if (layout_) {
    wanted = std::clamp<int64_t>(
        codec::kChunkHeaderSize + 4 * layout_->BlocksInChunk(chunk_index) + kChunkHeadSlackBytes,
        kChunkHeadProbeBytes, kMaxChunkHeadProbeBytes);
  }
  probe.size = std::clamp<int64_t>(probe.available, 0, wanted);
  if (probe.size < codec::kChunkHeaderSize) {
    return InvalidData("chunk is " + std::to_string(probe.size) +
                       " bytes, shorter than a Blosc2 header");
  }
  return probe;
}

Result<cache::Value> Container::HeadFromProbe(const HeadProbe& probe,
                                              std::span<const uint8_t> bytes) const {
  B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, codec::InspectChunkHeader(bytes));
  // The header's cbytes sizes every later read of this chunk: it must fit in
  // what is stored.
  if (ci.cbytes > probe.available) {
    return InvalidData("chunk claims " + std::to_string(ci.cbytes) + " bytes but only " +
                       std::to_string(probe.available) + " are stored");
  }
  const int64_t head_size = codec::ChunkHeadSize(ci);
  if (head_size > ci.cbytes) return InvalidData("chunk is shorter than its block offsets");
  auto head = std::make_shared<cache::Bytes>(static_cast<size_t>(head_size));
  if (head_size <= static_cast<int64_t>(bytes.size())) {
    std::memcpy(head->data(), bytes.data(), static_cast<size_t>(head_size));
  } else {
    B2NDFS_RETURN_IF_ERROR(ReadChunkBytes(probe.ref, 0, head_size, head->data()));
  }
  return cache::Value(std::move(head));
}

Result<cache::Value> Container::FetchChunkHead(int64_t chunk_index) const {
  const cache::Key key = ChunkHeadKey(cache_id_, chunk_index);
  return context_->cache->GetOrLoad(key, [&]() -> Result<cache::Value> {
    B2NDFS_ASSIGN_OR_RETURN(const HeadProbe probe, PlanHeadProbe(chunk_index));
    cache::Bytes bytes(static_cast<size_t>(probe.size));
    B2NDFS_RETURN_IF_ERROR(ReadChunkBytes(probe.ref, 0, probe.size, bytes.data()));
    return HeadFromProbe(probe, bytes);
  });
}

void Container::FetchChunkHeads(std::span<const int64_t> chunks) const {
  std::vector<HeadProbe> probes;
  for (int64_t c : chunks) {
    if (context_->cache->Contains(ChunkHeadKey(cache_id_, c))) continue;  // no hit counted
    auto probe = PlanHeadProbe(c);
    if (probe.ok()) probes.push_back(*probe);
  }
  if (probes.empty()) return;
  std::vector<cache::Bytes> bytes(probes.size());
  std::vector<source::PartRead> reads(probes.size());
  const bool sparse = source_->sparse();
  for (size_t i = 0; i < probes.size(); ++i) {
    const HeadProbe& p = probes[i];
    bytes[i].resize(static_cast<size_t>(p.size));
    // The probe lies inside the chunks section (PlanHeadProbe sized it so).
    reads[i] = source::PartRead{p.ref.Part(sparse), p.ref.Base(sparse), static_cast<size_t>(p.size),
                                bytes[i].data()};
  }
  std::vector<char> landed(probes.size(), 0);
  source_->ReadMany(reads, [&](size_t i, const Status& status) {
    CountSourceRead(status, reads[i].length);
    landed[i] = status.ok() ? 1 : 0;
  });
  for (size_t i = 0; i < probes.size(); ++i) {
    if (landed[i] == 0) continue;
    // Another reader may have fetched it meanwhile: then this one is dropped.
    (void)context_->cache->GetOrLoad(ChunkHeadKey(cache_id_, probes[i].chunk),
                                     [&]() { return HeadFromProbe(probes[i], bytes[i]); });
  }
}

// A remote read waits one round trip for the heads of its chunks before it
// can ask for their blocks. A container of few chunks fetches them all in the
// background when it opens (StartHeadsPrefetch), and each read that still
// waits for heads (that fetch failed, or was turned off) fetches those of
// other chunks with its own, in the same round trip, until every chunk's head
// was fetched once. Not for many chunks: a huge array would pay a request per
// chunk it may never read.
std::vector<int64_t> Container::OtherHeadsToFetch(const std::vector<int64_t>& wanted,
                                                  size_t room) const {
  std::vector<int64_t> others;
  if (!source_->cost().network() || meta_->nchunks > context_->remote_heads_max_chunks) return others;
  while (others.size() < room) {
    const int64_t c = meta_->next_other_head.fetch_add(1);
    if (c >= meta_->nchunks) break;
    if (std::find(wanted.begin(), wanted.end(), c) != wanted.end()) continue;
    if (context_->cache->Contains(ChunkHeadKey(cache_id_, c))) continue;  // no hit counted
    auto ref = LocateChunk(c);
    if (ref.ok() && ref->kind == format::ChunkKind::kStored) others.push_back(c);
  }
  return others;
}

// In the background, so that opening a container (meta.json, a listing)
// never waits for it; the requests (one a head for S3, a few multi-range
// ones for a web server) are what `remote_heads_max_chunks` bounds.
void Container::StartHeadsPrefetch() const {
  if (!ok() || !source_->cost().network() || context_->workers == nullptr) return;
  const int64_t nchunks = meta_->nchunks;
  if (nchunks == 0 || nchunks > context_->remote_heads_max_chunks) return;
  std::weak_ptr<const Container> weak = weak_from_this();
  const bool queued = context_->workers->TrySubmit(
      [weak, nchunks] {
        auto self = weak.lock();
        if (!self) return;  // closed before its turn
        // Reads wait only while this runs, never for a queued task: a
        // worker waiting for a task queued behind it would wait forever.
        Metadata& m = *self->meta_;
        {
          std::lock_guard<std::mutex> lock(m.heads_mutex);
          m.heads_in_flight = true;
        }
        struct Ended {
          Metadata& m;
          ~Ended() {
            {
              std::lock_guard<std::mutex> lock(m.heads_mutex);
              m.heads_in_flight = false;
            }
            m.heads_fetched.notify_all();
          }
        } ended{m};
        std::vector<int64_t> all(static_cast<size_t>(nchunks));
        for (int64_t c = 0; c < nchunks; ++c) all[static_cast<size_t>(c)] = c;
        self->FetchChunkHeads(all);
        GlobalReadStats().heads_prefetches++;
      },
      kHeadsPrefetchMaxQueued);
  // Reads then fetch only their own heads: the others are on their way.
  if (queued) meta_->next_other_head = nchunks;
}

void Container::WaitForHeadsPrefetch() const {
  Metadata& m = *meta_;
  std::unique_lock<std::mutex> lock(m.heads_mutex);
  m.heads_fetched.wait(lock, [&] { return !m.heads_in_flight; });
}

Result<cache::Value> Container::FetchCompressedChunk(int64_t chunk_index) const {
  const cache::Key key{cache_id_, chunk_index, 0, cache::EntryKind::kCompressedChunk};
  return context_->cache->GetOrLoad(key, [&]() -> Result<cache::Value> {
    // The head's cbytes was checked against what is stored.
    B2NDFS_ASSIGN_OR_RETURN(cache::Value head, FetchChunkHead(chunk_index));
    B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, codec::InspectChunkHeader(*head));
    B2NDFS_ASSIGN_OR_RETURN(const ChunkRef ref, LocateChunk(chunk_index));
    auto bytes = std::make_shared<cache::Bytes>(static_cast<size_t>(ci.cbytes));
    B2NDFS_RETURN_IF_ERROR(ReadChunkBytes(ref, 0, ci.cbytes, bytes->data()));
    GlobalReadStats().chunks_fetched++;
    GlobalReadStats().bytes_fetched += bytes->size();
    return cache::Value(std::move(bytes));
  });
}

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

Result<codec::DecompressorPool*> Container::DecompressorsFor(const codec::ChunkInfo& info) const {
  if (!info.needs.any()) return context_->decompressors;
  Metadata& src = *meta_;
  std::call_once(src.bound_once, [&] {
    std::optional<codec::ArrayGeometry> geometry;
    int64_t blocksize = layout_->itemsize();
    if (src.ndmeta) {
      const format::NdMeta& nd = *src.ndmeta;
      geometry = codec::ArrayGeometry{nd.shape, nd.chunkshape, nd.blockshape};
      for (int64_t b : nd.blockshape) {
        auto next = CheckedMul(blocksize, b);
        blocksize = next && *next <= INT32_MAX ? *next : int64_t{INT32_MAX} + 1;
      }
    }
    if (layout_->itemsize() > INT32_MAX || blocksize > INT32_MAX) {
      src.bound_status = InvalidData("blocks are too large to bind the array");
      return;
    }
    auto binding =
        codec::ArrayBinding::Create(static_cast<int32_t>(layout_->itemsize()),
                                    static_cast<int32_t>(blocksize), std::move(geometry));
    if (!binding.ok()) {
      src.bound_status = binding.status();
      return;
    }
    // As many decoders as the mount's own pool allows.
    src.bound_pool = std::make_unique<codec::DecompressorPool>(
        context_->decompressors->max_contexts(), std::move(binding).value());
  });
  if (src.bound_pool == nullptr) return src.bound_status;
  return src.bound_pool.get();
}

Result<cache::Value> Container::DecodeWholeChunk(int64_t chunk_index, int64_t expected,
                                                 const codec::ChunkInfo& info) const {
  const cache::Key key{cache_id_, chunk_index, kWholeChunkBlock, cache::EntryKind::kOther};
  return context_->cache->GetOrLoad(key, [&]() -> Result<cache::Value> {
    B2NDFS_ASSIGN_OR_RETURN(cache::Value chunk, FetchCompressedChunk(chunk_index));
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

Result<cache::Value> Container::DecodeBlock(int64_t chunk_index, int64_t block_index) const {
  const ArrayLayout& layout = *layout_;
  const int64_t itemsize = layout.itemsize();
  const int64_t block_bytes = layout.BlockItems(chunk_index, block_index) * itemsize;
  const int64_t first_byte = layout.BlockFirstItem(chunk_index, block_index) * itemsize;
  auto block = std::make_shared<cache::Bytes>(static_cast<size_t>(block_bytes));
  B2NDFS_ASSIGN_OR_RETURN(const ChunkRef ref, LocateChunk(chunk_index));
  if (ref.kind != format::ChunkKind::kStored) {
    B2NDFS_RETURN_IF_ERROR(FillSpecial(ref.kind, itemsize, block->data(), block->size()));
    return cache::Value(std::move(block));
  }
  B2NDFS_ASSIGN_OR_RETURN(cache::Value head, FetchChunkHead(chunk_index));
  B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, codec::InspectChunkHeader(*head));
  // b2nd chunks hold the chunk shape padded to whole blocks; a plain
  // super-chunk's are unpadded, its last one possibly short.
  const bool padded = format_name_ != "schunk";
  const int64_t expected =
      (padded ? layout.ChunkStoredItems(chunk_index) : layout.ChunkBox(chunk_index).NumItems()) *
      itemsize;
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
    B2NDFS_ASSIGN_OR_RETURN(cache::Value chunk, FetchCompressedChunk(chunk_index));
    B2NDFS_ASSIGN_OR_RETURN(codec::DecompressorPool * pool, DecompressorsFor(ci));
    auto lease = pool->Acquire();
    B2NDFS_RETURN_IF_ERROR(lease->DecompressRange(*chunk, first_byte, out));
  } else if (ci.memcpyed) {
    // Stored as is after the header: read the bytes, nothing to decode.
    if (ci.header_size + ci.nbytes > ci.cbytes) return InvalidData("memcpyed chunk is truncated");
    B2NDFS_RETURN_IF_ERROR(ReadChunkBytes(ref, ci.header_size + first_byte, stored, out.data()));
  } else {
    // Read only the compressed bytes of the blocks needed, not the chunk.
    B2NDFS_ASSIGN_OR_RETURN(codec::ChunkSpan span,
                            codec::SpanForRange(*head, ci, first_byte, stored));
    cache::Bytes part(static_cast<size_t>(span.end - span.begin));
    B2NDFS_RETURN_IF_ERROR(ReadChunkBytes(ref, span.begin, span.end - span.begin, part.data()));
    GlobalReadStats().bytes_fetched += part.size();
    B2NDFS_ASSIGN_OR_RETURN(codec::DecompressorPool * pool, DecompressorsFor(ci));
    auto lease = pool->Acquire();
    B2NDFS_RETURN_IF_ERROR(lease->DecompressRangeFromPart(*head, ci, span, part, first_byte, out));
  }
  GlobalReadStats().blocks_decompressed++;
  GlobalReadStats().bytes_decompressed += block->size();
  return cache::Value(std::move(block));
}

Result<cache::Value> Container::GetBlock(int64_t chunk_index, int64_t block_index) const {
  const cache::Key key = BlockKey(cache_id_, chunk_index, block_index);
  auto result =
      context_->cache->GetOrLoad(key, [&]() { return DecodeBlock(chunk_index, block_index); });
  if (!result.ok()) {
    return result.status().WithContext("chunk " + std::to_string(chunk_index) + " block " +
                                       std::to_string(block_index));
  }
  return result;
}

}  // namespace b2ndfs::store
