#include "chunk_directory.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "b2ndfs/util/checked_math.h"
#include "cache_keys.h"

namespace b2ndfs::store {

namespace {

// The first read of a chunk's head: at least this (its header and the
// offsets of up to ~500 blocks), else the header and the offsets of the
// blocks the layout gives the chunk, plus a little (a longer header), up to
// the maximum (16,000 blocks).
constexpr int64_t kChunkHeadProbeBytes = 2048;
constexpr int64_t kChunkHeadSlackBytes = 32;
constexpr int64_t kMaxChunkHeadProbeBytes = int64_t{64} << 10;

}  // namespace

ChunkDirectory::ChunkDirectory(StoreContext& context, uint64_t cache_id,
                               const CountedSource& source, const ReadPolicy& policy)
    : context_(context),
      cache_id_(cache_id),
      source_(source),
      policy_(policy),
      sparse_(source.sparse()) {}

Status ChunkDirectory::LoadIndex(std::vector<uint8_t> offsets_chunk, int64_t nchunks,
                                 int64_t header_size, int64_t chunks_end) {
  header_size_ = header_size;
  chunks_end_ = chunks_end;
  nchunks_ = nchunks;
  if (nchunks == 0) return Status::Ok();
  if (offsets_chunk.empty()) return InvalidData("frame has chunks but no chunk index");
  B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo info, codec::InspectChunk(offsets_chunk));
  auto need = CheckedMul(nchunks, 8);
  if (!need || info.nbytes != *need) {
    return InvalidData("chunk index holds " + std::to_string(info.nbytes) + " bytes for " +
                       std::to_string(nchunks) + " chunks");
  }
  offsets_chunk_ = std::move(offsets_chunk);
  // Pages of whole index blocks keep getitem from decoding a block twice.
  const int64_t block_entries = std::max<int64_t>(info.blocksize / 8, 1);
  index_page_entries_ =
      std::max<int64_t>(1, (int64_t{32} << 10) / 8 / block_entries) * block_entries;
  return Locate(0).status();
}

Result<ChunkRef> ChunkDirectory::Locate(int64_t chunk_index) const {
  if (chunk_index < 0 || chunk_index >= nchunks_) {
    return InvalidData("chunk " + std::to_string(chunk_index) + " is not in the chunk index");
  }
  if (!present_.empty() && !present_[chunk_index]) {
    return Status(
        EIO, "chunk " + std::to_string(chunk_index) + " was never fetched into this proxy cache");
  }
  const int64_t page = chunk_index / index_page_entries_;
  auto entries =
      context_.cache->GetOrLoad(IndexPageKey(cache_id_, page), [&]() -> Result<cache::Value> {
        const int64_t first = page * index_page_entries_;
        const int64_t count = std::min(index_page_entries_, nchunks_ - first);
        auto raw = std::make_shared<cache::Bytes>(static_cast<size_t>(count * 8));
        {
          auto lease = context_.decompressors->Acquire();
          B2NDFS_RETURN_IF_ERROR(lease->DecompressRange(offsets_chunk_, first * 8, *raw));
        }
        // Validate the whole page once; lookups then only read it.
        const int64_t chunks_size = chunks_end_ - header_size_;
        for (int64_t i = 0; i < count; ++i) {
          int64_t value;
          std::memcpy(&value, raw->data() + 8 * i, 8);  // little endian on disk and here
          auto location = format::DecodeChunkOffset(value);
          if (!location.ok())
            return location.status().WithContext("chunk " + std::to_string(first + i));
          if (!sparse_ && location->kind == format::ChunkKind::kStored &&
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
  std::memcpy(&value, (*entries)->data() + 8 * (chunk_index - page * index_page_entries_), 8);
  auto location = format::DecodeChunkOffset(value);
  if (!location.ok()) return location.status();
  ChunkRef ref{location->kind, location->offset};
  // Contiguous frames count chunk offsets from the end of the header.
  if (!sparse_ && ref.kind == format::ChunkKind::kStored) ref.offset += header_size_;
  return ref;
}

Result<codec::ChunkInfo> ChunkDirectory::ReadHeader(int64_t chunk_index) const {
  B2NDFS_ASSIGN_OR_RETURN(const ChunkRef ref, Locate(chunk_index));
  uint8_t header[codec::kChunkHeaderSize];
  B2NDFS_RETURN_IF_ERROR(ReadBytes(ref, 0, sizeof header, header));
  auto info = codec::InspectChunkHeader(header);
  if (!info.ok()) return info.status().WithContext("chunk " + std::to_string(chunk_index));
  return info;
}

Status ChunkDirectory::ReadBytes(const ChunkRef& ref, int64_t offset, int64_t length,
                                 uint8_t* out) const {
  if (offset < 0 || length < 0) return InvalidData("negative chunk range");
  if (!sparse_ && ref.offset + offset + length > chunks_end_) {
    return InvalidData("chunk bytes [" + std::to_string(offset) + ", " +
                       std::to_string(offset + length) + ") pass the end of the chunks section");
  }
  return source_.Read(ref.Part(sparse_), ref.Base(sparse_) + offset, length, out);
}

Result<ChunkDirectory::HeadProbe> ChunkDirectory::PlanHeadProbe(int64_t chunk_index) const {
  HeadProbe probe;
  probe.chunk = chunk_index;
  B2NDFS_ASSIGN_OR_RETURN(probe.ref, Locate(chunk_index));
  if (probe.ref.kind != format::ChunkKind::kStored) return InvalidData("chunk is not stored");
  if (sparse_) {
    B2NDFS_ASSIGN_OR_RETURN(probe.available, source_.source().PartSize(probe.ref.offset));
  } else {
    probe.available = chunks_end_ - probe.ref.offset;
  }
  // One read brings the header and the block offsets: sized for the blocks
  // the layout says the chunk has (a remote request costs the same for a few
  // more bytes, a second one a round trip more); a second read only for a
  // chunk with more blocks than that, or beyond kMaxChunkHeadProbeBytes.
  int64_t wanted = kChunkHeadProbeBytes;
  if (layout_ != nullptr) {
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

Result<cache::Value> ChunkDirectory::HeadFromProbe(const HeadProbe& probe,
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
    B2NDFS_RETURN_IF_ERROR(ReadBytes(probe.ref, 0, head_size, head->data()));
  }
  return cache::Value(std::move(head));
}

Result<cache::Value> ChunkDirectory::FetchHead(int64_t chunk_index) const {
  return context_.cache->GetOrLoad(
      ChunkHeadKey(cache_id_, chunk_index), [&]() -> Result<cache::Value> {
        B2NDFS_ASSIGN_OR_RETURN(const HeadProbe probe, PlanHeadProbe(chunk_index));
        cache::Bytes bytes(static_cast<size_t>(probe.size));
        B2NDFS_RETURN_IF_ERROR(ReadBytes(probe.ref, 0, probe.size, bytes.data()));
        return HeadFromProbe(probe, bytes);
      });
}

void ChunkDirectory::FetchHeads(std::span<const int64_t> chunks) const {
  std::vector<HeadProbe> probes;
  for (int64_t c : chunks) {
    if (context_.cache->Contains(ChunkHeadKey(cache_id_, c))) continue;  // no hit counted
    auto probe = PlanHeadProbe(c);
    if (probe.ok()) probes.push_back(*probe);
  }
  if (probes.empty()) return;
  std::vector<cache::Bytes> bytes(probes.size());
  std::vector<source::PartRead> reads(probes.size());
  for (size_t i = 0; i < probes.size(); ++i) {
    const HeadProbe& p = probes[i];
    bytes[i].resize(static_cast<size_t>(p.size));
    // The probe lies inside the chunks section (PlanHeadProbe sized it so).
    reads[i] = source::PartRead{p.ref.Part(sparse_), p.ref.Base(sparse_),
                                static_cast<size_t>(p.size), bytes[i].data()};
  }
  std::vector<char> landed(probes.size(), 0);
  source_.ReadMany(reads, [&](size_t i, const Status& status) { landed[i] = status.ok() ? 1 : 0; });
  for (size_t i = 0; i < probes.size(); ++i) {
    if (landed[i] == 0) continue;
    // Another reader may have fetched it meanwhile: then this one is dropped.
    (void)context_.cache->GetOrLoad(ChunkHeadKey(cache_id_, probes[i].chunk),
                                    [&]() { return HeadFromProbe(probes[i], bytes[i]); });
  }
}

// A network read waits one round trip for the heads of its chunks before it
// can ask for their blocks. In a container of few chunks, the first read
// that waits for heads fetches those of every other chunk with its own, in
// the same round trip (later ones fetch what a failure left), until every
// chunk's head was fetched once.
std::vector<int64_t> ChunkDirectory::OtherHeadsToFetch(const std::vector<int64_t>& wanted) const {
  std::vector<int64_t> others;
  const int64_t room = policy_.heads_prefetch_max_chunks;
  if (nchunks_ > room) return others;
  while (static_cast<int64_t>(others.size()) < room) {
    const int64_t c = next_other_head_.fetch_add(1);
    if (c >= nchunks_) break;
    if (std::find(wanted.begin(), wanted.end(), c) != wanted.end()) continue;
    if (context_.cache->Contains(ChunkHeadKey(cache_id_, c))) continue;  // no hit counted
    auto ref = Locate(c);
    if (ref.ok() && ref->kind == format::ChunkKind::kStored) others.push_back(c);
  }
  return others;
}

// Heads are never fetched at open: meta.json, stat, `ls -l` and xattrs open
// containers too, and on a web server of small containers the heads fetched
// at open were six of a container's nine requests (docs/remote.md). The
// first data read fetches them instead, with its own, in one round trip
// (OtherHeadsToFetch).

Result<cache::Value> ChunkDirectory::FetchCompressed(int64_t chunk_index) const {
  return context_.cache->GetOrLoad(
      CompressedChunkKey(cache_id_, chunk_index), [&]() -> Result<cache::Value> {
        // The head's cbytes was checked against what is stored.
        B2NDFS_ASSIGN_OR_RETURN(cache::Value head, FetchHead(chunk_index));
        B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, codec::InspectChunkHeader(*head));
        B2NDFS_ASSIGN_OR_RETURN(const ChunkRef ref, Locate(chunk_index));
        auto bytes = std::make_shared<cache::Bytes>(static_cast<size_t>(ci.cbytes));
        B2NDFS_RETURN_IF_ERROR(ReadBytes(ref, 0, ci.cbytes, bytes->data()));
        GlobalReadStats().whole_chunks_fetched++;
        GlobalReadStats().bytes_fetched += bytes->size();
        return cache::Value(std::move(bytes));
      });
}

}  // namespace b2ndfs::store
