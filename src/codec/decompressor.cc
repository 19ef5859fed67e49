#include "b2ndfs/codec/decompressor.h"

#include <blosc2.h>
#include <blosc2/codecs-registry.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "b2ndfs/codec/builtin.h"

namespace b2ndfs::codec {

void EnsureInitialized() {
  static std::once_flag once;
  std::call_once(once, [] { blosc2_init(); });
}

Result<ChunkInfo> InspectChunkHeader(std::span<const uint8_t> header) {
  EnsureInitialized();
  if (header.size() < static_cast<size_t>(BLOSC_MIN_HEADER_LENGTH)) {
    return InvalidData("chunk is " + std::to_string(header.size()) +
                       " bytes, shorter than a Blosc header");
  }
  ChunkInfo info;
  int32_t nbytes = 0, cbytes = 0, blocksize = 0;
  if (blosc2_cbuffer_sizes(header.data(), &nbytes, &cbytes, &blocksize) < 0) {
    return InvalidData("chunk header is not a valid Blosc header");
  }
  if (nbytes < 0 || cbytes < BLOSC_MIN_HEADER_LENGTH || blocksize < 0) {
    return InvalidData("chunk header has impossible sizes (nbytes " + std::to_string(nbytes) +
                       ", cbytes " + std::to_string(cbytes) + ")");
  }
  // Before anything can hand the chunk to a decoder: a codec or filter that
  // is not built in would make c-blosc2 load and run a plugin (builtin.h).
  B2NDFS_RETURN_IF_ERROR(CheckChunkPipeline(header));
  info.nbytes = nbytes;
  info.cbytes = cbytes;
  info.blocksize = blocksize;
  info.typesize = header[3];
  const uint8_t flags = header[2];
  const bool extended = (flags & BLOSC_DOSHUFFLE) && (flags & BLOSC_DOBITSHUFFLE);
  info.memcpyed = (flags & BLOSC_MEMCPYED) != 0;
  info.header_size = extended ? BLOSC_EXTENDED_HEADER_LENGTH : BLOSC_MIN_HEADER_LENGTH;
  info.nblocks = blocksize > 0 ? (static_cast<int64_t>(nbytes) + blocksize - 1) / blocksize : 0;
  // A chunk stored uncompressed is its header and its bytes, nothing more:
  // c-blosc2 refuses any other size. Its 3.3.5 compressor with a dictionary
  // writes incompressible buffers flagged so but laid out as compressed
  // blocks (block offsets and sizes first, then the bytes: 8 bytes more
  // than that), which a reader taking the bytes after the header would serve
  // shifted.
  if (info.memcpyed &&
      !(extended && header.size() >= 32 && ((header[31] >> 4) & BLOSC2_SPECIAL_MASK) != 0) &&
      static_cast<int64_t>(cbytes) != info.header_size + static_cast<int64_t>(nbytes)) {
    return InvalidData("chunk is stored uncompressed but is " + std::to_string(cbytes) +
                       " bytes for " + std::to_string(nbytes) + " bytes of data");
  }
  if (extended && header.size() >= static_cast<size_t>(BLOSC_EXTENDED_HEADER_LENGTH)) {
    info.special = ((header[31] >> 4) & BLOSC2_SPECIAL_MASK) != 0;
    if ((header[30] & BLOSC2_VL_BLOCKS) && !info.special && !info.memcpyed) {
      // Chunk format 6: the blocksize field counts the blocks, which differ in
      // size (each one's length sits at its start). c-blosc2's getitem refuses
      // them; blosc2_decompress_ctx concatenates them. Shown as one block.
      // The field as stored: blosc2_cbuffer_sizes clamps it to nbytes.
      int32_t count;
      std::memcpy(&count, header.data() + 8, 4);  // little endian
      if (count <= 0 && nbytes > 0) {
        return InvalidData("chunk with variable-length blocks holds " + std::to_string(nbytes) +
                           " bytes in " + std::to_string(count) + " blocks");
      }
      info.vl_blocks = true;
      info.nblocks = count;
      info.blocksize = nbytes;
      info.needs_whole_chunk = true;
    }
    // getitem never loads a chunk's dictionary (it uses whichever the
    // context holds), so dictionary blocks cannot be decoded alone.
    if ((header[31] & BLOSC2_USEDICT) && !info.special && !(flags & BLOSC_MEMCPYED)) {
      info.needs_whole_chunk = true;
    }
    for (int i = 16; i < 16 + BLOSC2_MAX_FILTERS; ++i) {
      if (header[i] == BLOSC_DELTA) info.needs_whole_chunk = true;
    }
    // getitem of a fixed-rate ZFP chunk goes to ZFP's cell decoder (see
    // ChunkInfo), whatever the chunk's flags say.
    if ((flags >> 5) == BLOSC_UDCODEC_FORMAT && header[22] == BLOSC_CODEC_ZFP_FIXED_RATE) {
      info.needs_whole_chunk = true;
    }
    info.needs = NeedsOfChunk(header);
  } else if (!extended && (flags & BLOSC_DODELTA)) {
    info.needs_whole_chunk = true;
  }
  return info;
}

namespace {

// c-blosc2 2.17 freed a context's zstd dictionary before it validated the
// next chunk's dictionary section, and returned on error with the pointer
// left dangling: the context's next use (or blosc2_free_ctx) freed it again.
// 3.3.5 survives that input (docs/blosc2-3.3-notes.md), but a dictionary
// chunk still reaches c-blosc2 only after passing the same checks, which
// also give a clear message.
Status CheckDictionary(std::span<const uint8_t> chunk, const ChunkInfo& info) {
  const uint8_t flags = chunk[2];
  const bool extended = (flags & BLOSC_DOSHUFFLE) && (flags & BLOSC_DOBITSHUFFLE);
  if (!extended || chunk.size() < static_cast<size_t>(BLOSC_EXTENDED_HEADER_LENGTH)) {
    return Status::Ok();
  }
  if (!(chunk[31] & BLOSC2_USEDICT)) return Status::Ok();
  if (info.special || (flags & BLOSC_MEMCPYED)) {
    // c-blosc2 frees the dictionary for these too, then misreads them.
    return InvalidData("chunk is marked both as holding a dictionary and as stored uncompressed");
  }
  if (info.blocksize <= 0) return InvalidData("dictionary chunk has no block size");
  const int64_t bstarts_end = BLOSC_EXTENDED_HEADER_LENGTH + info.nblocks * 4;
  const int64_t size = static_cast<int64_t>(chunk.size());
  if (size < bstarts_end + 4) return InvalidData("chunk too short for its dictionary size");
  int32_t dict_size;
  std::memcpy(&dict_size, chunk.data() + bstarts_end, 4);  // little endian
  if (dict_size <= 0 || dict_size > BLOSC2_MAXDICTSIZE) {
    return InvalidData("chunk's dictionary size " + std::to_string(dict_size) + " is out of range");
  }
  if (size - bstarts_end - 4 < dict_size) return InvalidData("chunk's dictionary is truncated");
  return Status::Ok();
}

}  // namespace

Result<ChunkInfo> InspectChunk(std::span<const uint8_t> chunk) {
  B2NDFS_ASSIGN_OR_RETURN(ChunkInfo info, InspectChunkHeader(chunk));
  if (static_cast<size_t>(info.cbytes) != chunk.size()) {
    return InvalidData("chunk header says " + std::to_string(info.cbytes) +
                       " compressed bytes but " + std::to_string(chunk.size()) + " are stored");
  }
  size_t nbytes = 0;
  if (blosc1_cbuffer_validate(chunk.data(), chunk.size(), &nbytes) < 0) {
    return InvalidData("chunk fails Blosc validation");
  }
  B2NDFS_RETURN_IF_ERROR(CheckDictionary(chunk, info));
  return info;
}

int64_t ChunkHeadSize(const ChunkInfo& info) {
  if (info.memcpyed || info.special) return info.header_size;
  return info.header_size + 4 * info.nblocks;
}

namespace {

int32_t LoadLe32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// End of each block's compressed bytes: the next larger block start (blocks
// may be stored out of order), or the end of the chunk.
int64_t BlockEnd(std::span<const uint8_t> head, const ChunkInfo& info, int64_t start) {
  int64_t end = info.cbytes;
  for (int64_t k = 0; k < info.nblocks; ++k) {
    const int64_t other = LoadLe32(head.data() + info.header_size + 4 * k);
    if (other > start && other < end) end = other;
  }
  return end;
}

}  // namespace

Result<ChunkSpan> SpanForRange(std::span<const uint8_t> head, const ChunkInfo& info, int64_t offset,
                               int64_t length) {
  if (info.memcpyed || info.special || info.blocksize <= 0 || length <= 0) {
    return InvalidData("chunk has no blocks to locate");
  }
  if (info.vl_blocks) return InvalidData("chunk has variable-length blocks: decode it whole");
  const int64_t head_size = ChunkHeadSize(info);
  if (static_cast<int64_t>(head.size()) < head_size) return InvalidData("chunk head is short");
  if (offset < 0 || offset + length > info.nbytes) return InvalidData("range outside the chunk");
  const int64_t first = offset / info.blocksize;
  const int64_t last = (offset + length - 1) / info.blocksize;
  ChunkSpan span{info.cbytes, 0};
  for (int64_t j = first; j <= last; ++j) {
    const int64_t start = LoadLe32(head.data() + info.header_size + 4 * j);
    if (start < head_size || start >= info.cbytes) {
      return InvalidData("block " + std::to_string(j) + " starts at " + std::to_string(start) +
                         ", outside the chunk's data");
    }
    span.begin = std::min(span.begin, start);
    span.end = std::max(span.end, BlockEnd(head, info, start));
  }
  return span;
}

Status RebaseChunkHead(std::span<const uint8_t> head, const ChunkInfo& info, const ChunkSpan& span,
                       int64_t distance, int64_t cbytes, std::span<uint8_t> dest) {
  const int64_t head_size = ChunkHeadSize(info);
  if (info.memcpyed || info.special || info.vl_blocks ||
      static_cast<int64_t>(head.size()) < head_size ||
      static_cast<int64_t>(dest.size()) != head_size) {
    return InvalidData("chunk head cannot be rebased");
  }
  if (span.begin < head_size || span.end < span.begin || distance < head_size ||
      distance + (span.end - span.begin) > cbytes || cbytes > INT32_MAX) {
    return InvalidData("chunk part does not fit its buffer");
  }
  std::memcpy(dest.data(), head.data(), static_cast<size_t>(head_size));
  const int32_t new_cbytes = static_cast<int32_t>(cbytes);
  std::memcpy(dest.data() + 12, &new_cbytes, 4);
  for (int64_t k = 0; k < info.nblocks; ++k) {
    uint8_t* slot = dest.data() + info.header_size + 4 * k;
    int64_t start = LoadLe32(slot);
    if (start < span.begin || start >= span.end) start = span.begin;
    const int32_t rebased = static_cast<int32_t>(distance + (start - span.begin));
    std::memcpy(slot, &rebased, 4);
  }
  return Status::Ok();
}

Status Decompressor::DecompressRangeFromPart(std::span<const uint8_t> head, const ChunkInfo& info,
                                             const ChunkSpan& span, std::span<const uint8_t> part,
                                             int64_t byte_offset, std::span<uint8_t> out) {
  B2NDFS_RETURN_IF_ERROR(CheckChunkPipeline(head));
  // The assembled chunk holds only some blocks: never decoded whole.
  if (info.needs_whole_chunk) return InvalidData("chunk must be decoded whole");
  const int64_t head_size = ChunkHeadSize(info);
  if (static_cast<int64_t>(part.size()) != span.end - span.begin ||
      static_cast<int64_t>(head.size()) < head_size) {
    return InvalidData("chunk part does not match its span");
  }
  // A smaller chunk that c-blosc2 decodes like the original for these
  // blocks: the head, then the part (RebaseChunkHead).
  const int64_t size = head_size + static_cast<int64_t>(part.size());
  assembled_.resize(static_cast<size_t>(size));
  B2NDFS_RETURN_IF_ERROR(
      RebaseChunkHead(head, info, span, head_size, size,
                      std::span<uint8_t>(assembled_.data(), static_cast<size_t>(head_size))));
  std::memcpy(assembled_.data() + head_size, part.data(), part.size());
  return DecompressRange(assembled_, byte_offset, out);
}

Decompressor::Decompressor(std::shared_ptr<const ArrayBinding> binding)
    : binding_(std::move(binding)) {
  EnsureInitialized();
  blosc2_dparams params = BLOSC2_DPARAMS_DEFAULTS;
  params.nthreads = 1;
  if (binding_ != nullptr) params.schunk = binding_->schunk();
  context_ = blosc2_create_dctx(params);
}

Status Decompressor::CheckContext(std::span<const uint8_t> chunk, const ChunkInfo& info) const {
  if (binding_ != nullptr) {
    return binding_->CheckChunk(chunk.first(std::min<size_t>(chunk.size(), kChunkHeaderSize)),
                                info.nbytes, info.blocksize, info.typesize);
  }
  if (info.needs.geometry) {
    return InvalidData(
        "chunk's codec or filter (ZFP, NDCELL or NDMEAN) reads the array's shape from the "
        "super-chunk, and this context is not bound to an array");
  }
  if (info.needs.typesize) {
    return InvalidData(
        "chunk's BYTEDELTA filter (meta 0) reads the item size from the super-chunk, and this "
        "context is not bound to an array");
  }
  return Status::Ok();
}

Decompressor::~Decompressor() {
  if (context_ != nullptr) blosc2_free_ctx(context_);
}

Status Decompressor::DecompressAll(std::span<const uint8_t> chunk, std::span<uint8_t> out) {
  // Checked here as well as in InspectChunk: these are the bytes c-blosc2
  // decodes, whatever path led to them.
  B2NDFS_RETURN_IF_ERROR(CheckChunkPipeline(chunk));
  if (context_ == nullptr) return Status(ENOMEM, "cannot create a Blosc2 context");
  B2NDFS_ASSIGN_OR_RETURN(ChunkInfo info, InspectChunk(chunk));
  B2NDFS_RETURN_IF_ERROR(CheckContext(chunk, info));
  if (static_cast<size_t>(info.nbytes) != out.size()) {
    return InvalidData("chunk decompresses to " + std::to_string(info.nbytes) +
                       " bytes, expected " + std::to_string(out.size()));
  }
  if (out.empty()) return Status::Ok();
  int rc = blosc2_decompress_ctx(context_, chunk.data(), static_cast<int32_t>(chunk.size()),
                                 out.data(), static_cast<int32_t>(out.size()));
  if (rc != static_cast<int>(out.size())) {
    return InvalidData("Blosc2 decompression failed (code " + std::to_string(rc) + ")");
  }
  return Status::Ok();
}

Status Decompressor::DecompressRange(std::span<const uint8_t> chunk, int64_t byte_offset,
                                     std::span<uint8_t> out) {
  B2NDFS_RETURN_IF_ERROR(CheckChunkPipeline(chunk));
  if (context_ == nullptr) return Status(ENOMEM, "cannot create a Blosc2 context");
  B2NDFS_ASSIGN_OR_RETURN(ChunkInfo info, InspectChunk(chunk));
  const int64_t end = byte_offset + static_cast<int64_t>(out.size());
  if (byte_offset < 0 || end > info.nbytes) {
    return InvalidData("range [" + std::to_string(byte_offset) + ", " + std::to_string(end) +
                       ") lies outside the chunk's " + std::to_string(info.nbytes) + " bytes");
  }
  B2NDFS_RETURN_IF_ERROR(CheckContext(chunk, info));
  if (out.empty()) return Status::Ok();
  if (byte_offset == 0 && end == info.nbytes) return DecompressAll(chunk, out);
  if (info.needs_whole_chunk) {
    // getitem is wrong or unsafe here (ChunkInfo): decode all, keep the range.
    scratch_.resize(static_cast<size_t>(info.nbytes));
    B2NDFS_RETURN_IF_ERROR(DecompressAll(chunk, scratch_));
    std::memcpy(out.data(), scratch_.data() + byte_offset, out.size());
    return Status::Ok();
  }
  const int64_t typesize = info.typesize > 0 ? info.typesize : 1;
  // getitem counts in items of the chunk's typesize; unaligned ranges go
  // through a scratch buffer of whole items.
  const int64_t first_item = byte_offset / typesize;
  const int64_t end_item = (end + typesize - 1) / typesize;
  const int64_t nitems = end_item - first_item;
  const bool aligned = byte_offset % typesize == 0 && end % typesize == 0;
  uint8_t* dest = out.data();
  const int64_t dest_size = nitems * typesize;
  if (!aligned) {
    scratch_.resize(static_cast<size_t>(dest_size));
    dest = scratch_.data();
  }
  if (first_item > INT_MAX || nitems > INT_MAX) return InvalidData("chunk range too large");
  int rc = blosc2_getitem_ctx(context_, chunk.data(), static_cast<int32_t>(chunk.size()),
                              static_cast<int>(first_item), static_cast<int>(nitems), dest,
                              static_cast<int32_t>(dest_size));
  if (rc != dest_size) {
    return InvalidData("Blosc2 decompression of a block range failed (code " + std::to_string(rc) +
                       ")");
  }
  if (!aligned) {
    std::memcpy(out.data(), scratch_.data() + (byte_offset - first_item * typesize), out.size());
  }
  return Status::Ok();
}

DecompressorPool::Lease::~Lease() {
  if (pool_ != nullptr && decompressor_ != nullptr) pool_->Return(std::move(decompressor_));
}

DecompressorPool::Lease DecompressorPool::Acquire() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    returned_.wait(lock, [this] { return !idle_.empty() || live_ < max_contexts_; });
    if (!idle_.empty()) {
      auto d = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(d));
    }
    ++live_;
  }
  return Lease(this, MakeCounted());
}

std::unique_ptr<Decompressor> DecompressorPool::MakeCounted() {
  // Made without the lock held (it is a leaf lock; making one allocates).
  try {
    return std::make_unique<Decompressor>(binding_);
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --live_;
    }
    returned_.notify_one();
    throw;
  }
}

void DecompressorPool::Prepare(size_t count) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (idle_.size() >= count || live_ >= max_contexts_) return;
      ++live_;
    }
    Return(MakeCounted());
  }
}

size_t DecompressorPool::live_contexts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_;
}

void DecompressorPool::Return(std::unique_ptr<Decompressor> d) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(std::move(d));
  }
  returned_.notify_one();
}

}  // namespace b2ndfs::codec
