#include "b2ndfs/store/container.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/meta_json.h"
#include "b2ndfs/format/ndmeta.h"
#include "b2ndfs/store/pin_budget.h"
#include "b2ndfs/store/worker_pool.h"
#include "b2ndfs/util/checked_math.h"
#include "b2ndfs/util/file.h"
#include "b2ndfs/util/log.h"

namespace b2ndfs::store {

using geometry::ArrayLayout;
using geometry::BlockRef;
using geometry::Box;

ReadStats& GlobalReadStats() {
  static ReadStats stats;
  return stats;
}

namespace {

std::atomic<uint64_t> g_next_container_id{1};

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

struct Container::ChunkRef {
  format::ChunkKind kind = format::ChunkKind::kStored;
  int64_t offset = 0;  // contiguous: byte offset in the frame; sparse: file number
};

struct Container::Source {
  bool sparse = false;
  std::string frame_path;  // the frame file (chunks.b2frame for a sparse frame)
  File frame;
  int64_t chunks_end = 0;  // contiguous: where the chunk index starts
  format::FrameInfo frame_info;
  std::optional<format::NdMeta> ndmeta;
  // The chunk index stays compressed; pages of it are decoded on demand
  // (through the block cache), so a huge index costs no memory up front.
  std::vector<uint8_t> offsets_chunk;
  int64_t nchunks = 0;
  int64_t index_page_entries = 0;
  std::vector<format::NamedBytes> vlmeta;  // decompressed contents
};

namespace {

// A msgpack string saying that a variable-length metalayer is not shown.
std::vector<uint8_t> OmittedNote(int64_t size) {
  const std::string text = "(" + std::to_string(size) + " bytes, over b2ndfs's budget for vlmeta)";
  std::vector<uint8_t> out{0xd9, static_cast<uint8_t>(text.size())};  // str8
  out.insert(out.end(), text.begin(), text.end());
  return out;
}

}  // namespace

Container::Container(std::string source_path, StoreContext* context)
    : source_path_(std::move(source_path)),
      context_(context),
      id_(g_next_container_id.fetch_add(1)) {}

Container::~Container() {
  if (context_ != nullptr && context_->cache != nullptr) context_->cache->EraseContainer(id_);
}

std::shared_ptr<Container> Container::Open(const std::string& source_path, StoreContext* context) {
  std::shared_ptr<Container> container(new Container(source_path, context));
  Status status;
  try {
    status = container->Load();
  } catch (const std::bad_alloc&) {
    status = Status(ENOMEM, "out of memory while decoding the container");
  } catch (const std::exception& e) {
    status = InvalidData(std::string("unexpected error while decoding: ") + e.what());
  }
  if (!status.ok()) {
    container->error_ = status.message().empty() ? "cannot decode container" : status.message();
    container->layout_.reset();
    container->meta_json_ = format::RenderErrorJson(container->error_);
    LogOnce("open:" + source_path, LogLevel::kWarning,
            source_path + ": cannot decode container: " + container->error_);
  }
  return container;
}

Status Container::Load() {
  source_ = std::make_unique<Source>();
  Source& src = *source_;
  src.sparse = IsDirectory(source_path_);
  src.frame_path = src.sparse ? source_path_ + "/chunks.b2frame" : source_path_;
  B2NDFS_ASSIGN_OR_RETURN(src.frame, File::OpenReadOnly(src.frame_path));
  B2NDFS_ASSIGN_OR_RETURN(struct stat st, src.frame.Stat());
  const int64_t file_size = st.st_size;

  const File& frame = src.frame;
  format::ReadAt read_at = [&frame, file_size](int64_t offset,
                                               int64_t length) -> Result<std::vector<uint8_t>> {
    if (offset < 0 || length < 0 || offset > file_size || length > file_size - offset) {
      return InvalidData("read of " + std::to_string(length) + " bytes at " +
                         std::to_string(offset) + " passes the end of the " +
                         std::to_string(file_size) + "-byte frame file");
    }
    return frame.ReadExact(offset, static_cast<size_t>(length));
  };
  B2NDFS_ASSIGN_OR_RETURN(src.frame_info, format::ParseFrame(read_at, file_size));
  const format::FrameInfo& info = src.frame_info;
  if (info.sparse != src.sparse) {
    return InvalidData(src.sparse ? "chunks.b2frame is not a sparse-frame index"
                                  : "the frame is a sparse-frame index without its directory");
  }
  src.chunks_end = info.offsets_chunk_position;

  // The chunk index.
  std::vector<uint8_t> offsets_chunk;
  if (info.offsets_chunk_size > 0) {
    B2NDFS_ASSIGN_OR_RETURN(offsets_chunk,
                            read_at(info.offsets_chunk_position, info.offsets_chunk_size));
  }
  B2NDFS_RETURN_IF_ERROR(LoadChunkIndex(offsets_chunk).WithContext("chunk index"));

  // Variable-length metalayers are stored as Blosc2 chunks; fall back to the
  // raw bytes for anything that is not one. A budget bounds what is
  // decompressed and shown (a tiny frame can declare thousands of 16 MiB
  // runs of zeros); what passes it is replaced by a note.
  {
    constexpr int64_t kVlmetaBudget = 4 << 20;
    constexpr size_t kMaxVlmetaShown = 256;
    int64_t spent = 0;
    auto lease = context_->decompressors->Acquire();
    for (const auto& vl : info.vlmetalayers) {
      format::NamedBytes decoded{vl.name, vl.content};
      int64_t size = static_cast<int64_t>(vl.content.size());
      auto chunk_info = codec::InspectChunk(vl.content);
      if (chunk_info.ok()) size = chunk_info->nbytes;
      if (spent + size > kVlmetaBudget || src.vlmeta.size() >= kMaxVlmetaShown) {
        decoded.content = OmittedNote(size);
      } else if (chunk_info.ok()) {
        std::vector<uint8_t> out(static_cast<size_t>(chunk_info->nbytes));
        if (lease->DecompressAll(vl.content, out).ok()) decoded.content = std::move(out);
      }
      spent += std::min<int64_t>(size, kVlmetaBudget);
      src.vlmeta.push_back(std::move(decoded));
    }
  }

  // The shape metalayer decides the layout.
  const format::NamedBytes* b2nd = nullptr;
  const format::NamedBytes* caterva = nullptr;
  for (const auto& m : info.metalayers) {
    if (m.name == "b2nd") b2nd = &m;
    if (m.name == "caterva") caterva = &m;
  }
  const int64_t nchunks = src.nchunks;
  if (b2nd != nullptr || caterva != nullptr) {
    auto decoded = b2nd != nullptr ? format::DecodeB2ndMetalayer(b2nd->content)
                                   : format::DecodeCatervaMetalayer(caterva->content);
    if (!decoded.ok()) return decoded.status();
    src.ndmeta = std::move(decoded).value();
    const format::NdMeta& nd = *src.ndmeta;
    format_name_ = nd.format;
    // The item size is what makes chunk sizes add up: a chunk holds the chunk
    // shape rounded up to whole blocks.
    std::vector<int64_t> ext(nd.chunkshape.size());
    for (size_t i = 0; i < ext.size(); ++i) {
      ext[i] = CeilDiv(nd.chunkshape[i], nd.blockshape[i]) * nd.blockshape[i];
    }
    auto ext_items = CheckedProduct(ext);
    if (!ext_items || *ext_items <= 0) return InvalidData("chunk shape is too large");
    int64_t itemsize = info.typesize;
    if (info.chunksize > 0 && info.chunksize % *ext_items == 0) {
      itemsize = info.chunksize / *ext_items;
    } else if (info.chunksize > 0) {
      return InvalidData("frame chunks are " + std::to_string(info.chunksize) +
                         " bytes, which is not a whole number of items for a chunk of " +
                         std::to_string(*ext_items) + " items");
    }
    if (itemsize <= 0) return InvalidData("item size is 0");
    if (nd.dtype) {
      auto dtype_size = format::DtypeItemSize(*nd.dtype);
      if (dtype_size && *dtype_size != itemsize) {
        return InvalidData("dtype '" + *nd.dtype + "' has " + std::to_string(*dtype_size) +
                           "-byte items but the chunks hold " + std::to_string(itemsize) +
                           "-byte items");
      }
    }
    B2NDFS_ASSIGN_OR_RETURN(ArrayLayout layout,
                            ArrayLayout::Regular(nd.shape, nd.chunkshape, nd.blockshape, itemsize));
    if (layout.NumChunks() != nchunks) {
      return InvalidData("the shape needs " + std::to_string(layout.NumChunks()) +
                         " chunks but the frame holds " + std::to_string(nchunks));
    }
    layout_ = std::move(layout);
  } else {
    // A plain super-chunk: a 1-D array of typesize items whose chunks are the
    // super-chunk's own, unpadded (the last one may be short).
    format_name_ = "schunk";
    const int64_t typesize = info.typesize;
    if (typesize <= 0) return InvalidData("typesize is 0");
    if (info.nbytes % typesize != 0) {
      return InvalidData("the frame holds " + std::to_string(info.nbytes) +
                         " bytes, not a whole number of " + std::to_string(typesize) +
                         "-byte items");
    }
    if (info.chunksize > 0) {
      // Equal chunks (c-blosc2's only well-formed case): no chunk needs to
      // be read to know the layout, however many there are.
      if (info.chunksize % typesize != 0) {
        return InvalidData("chunks of " + std::to_string(info.chunksize) +
                           " bytes do not hold whole items");
      }
      const int64_t chunk_items = info.chunksize / typesize;
      int64_t block_items = info.blocksize / typesize;
      if (block_items <= 0 || chunk_items % block_items != 0) block_items = chunk_items;
      B2NDFS_ASSIGN_OR_RETURN(
          ArrayLayout layout,
          ArrayLayout::Regular({info.nbytes / typesize}, {chunk_items}, {block_items}, typesize));
      if (layout.NumChunks() != nchunks) {
        return InvalidData("the frame's size needs " + std::to_string(layout.NumChunks()) +
                           " chunks but its index holds " + std::to_string(nchunks));
      }
      layout_ = std::move(layout);
    } else {
      // Chunks of varying size: each chunk's header says how long it is.
      constexpr int64_t kMaxVariableChunks = int64_t{1} << 20;
      if (nchunks > kMaxVariableChunks) {
        return InvalidData("the frame has " + std::to_string(nchunks) +
                           " chunks of varying size; b2ndfs reads at most " +
                           std::to_string(kMaxVariableChunks));
      }
      std::vector<int64_t> chunk_items(static_cast<size_t>(nchunks));
      std::vector<int64_t> block_items(static_cast<size_t>(nchunks));
      int64_t total = 0;
      for (int64_t c = 0; c < nchunks; ++c) {
        B2NDFS_ASSIGN_OR_RETURN(const ChunkRef ref, LocateChunk(c));
        if (ref.kind != format::ChunkKind::kStored) {
          return InvalidData("chunk " + std::to_string(c) +
                             " is a run of special values in a frame without a chunk size");
        }
        B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, ReadChunkHeader(c));
        if (ci.nbytes % typesize != 0) {
          return InvalidData("chunk " + std::to_string(c) + " holds " + std::to_string(ci.nbytes) +
                             " bytes, not a whole number of " + std::to_string(typesize) +
                             "-byte items");
        }
        chunk_items[c] = ci.nbytes / typesize;
        int64_t bi = ci.blocksize / typesize;
        if (bi <= 0 || bi > chunk_items[c]) bi = std::max<int64_t>(chunk_items[c], 1);
        block_items[c] = bi;
        auto t = CheckedAdd(total, ci.nbytes);
        if (!t) return InvalidData("chunk sizes overflow");
        total = *t;
      }
      if (total != info.nbytes) {
        return InvalidData("chunks hold " + std::to_string(total) + " bytes but the frame says " +
                           std::to_string(info.nbytes));
      }
      B2NDFS_ASSIGN_OR_RETURN(ArrayLayout layout,
                              ArrayLayout::Irregular1D(chunk_items, block_items, typesize));
      layout_ = std::move(layout);
    }
  }

  const auto& nd = src.ndmeta;
  npy_header_ = MakeNpyHeader(format::NpyDescr(nd ? nd->dtype : std::nullopt, layout_->itemsize()),
                              layout_->shape());
  meta_json_ = RenderMeta();
  source_->vlmeta = {};  // rendered: no need to keep the contents
  return Status::Ok();
}

Status Container::LoadChunkIndex(const std::vector<uint8_t>& offsets_chunk) {
  Source& src = *source_;
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
  src.offsets_chunk = offsets_chunk;
  // Pages of whole index blocks keep getitem from decoding a block twice.
  const int64_t block_entries = std::max<int64_t>(info.blocksize / 8, 1);
  src.index_page_entries =
      std::max<int64_t>(1, (int64_t{32} << 10) / 8 / block_entries) * block_entries;
  // Decode the first page now: a corrupt index is reported at open.
  return LocateChunk(0).status();
}

Result<Container::ChunkRef> Container::LocateChunk(int64_t chunk_index) const {
  const Source& src = *source_;
  if (chunk_index < 0 || chunk_index >= src.nchunks) {
    return InvalidData("chunk " + std::to_string(chunk_index) + " is not in the chunk index");
  }
  const int64_t page = chunk_index / src.index_page_entries;
  const cache::Key key{id_, page, -1, cache::EntryKind::kOther};
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
      if (!src.sparse && location->kind == format::ChunkKind::kStored &&
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
  if (!src.sparse && ref.kind == format::ChunkKind::kStored)
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
  const Source& src = *source_;
  if (offset < 0 || length < 0) return InvalidData("negative chunk range");
  if (src.sparse) {
    const std::string name = format::SparseChunkFileName(ref.offset);
    B2NDFS_ASSIGN_OR_RETURN(File file, File::OpenReadOnly(source_path_ + "/" + name));
    return file.ReadExact(offset, out, static_cast<size_t>(length)).WithContext(name);
  }
  if (ref.offset + offset + length > src.chunks_end) {
    return InvalidData("chunk bytes [" + std::to_string(offset) + ", " +
                       std::to_string(offset + length) + ") pass the end of the chunks section");
  }
  return src.frame.ReadExact(ref.offset + offset, out, static_cast<size_t>(length));
}

Result<cache::Value> Container::FetchChunkHead(int64_t chunk_index) const {
  const cache::Key key{id_, chunk_index, -2, cache::EntryKind::kOther};
  return context_->cache->GetOrLoad(key, [&]() -> Result<cache::Value> {
    B2NDFS_ASSIGN_OR_RETURN(const ChunkRef ref, LocateChunk(chunk_index));
    uint8_t header[codec::kChunkHeaderSize];
    B2NDFS_RETURN_IF_ERROR(ReadChunkBytes(ref, 0, sizeof header, header));
    B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, codec::InspectChunkHeader(header));
    // The header's cbytes sizes every later read of this chunk: it must fit
    // in what is stored.
    int64_t available = 0;
    if (source_->sparse) {
      const std::string name = format::SparseChunkFileName(ref.offset);
      B2NDFS_ASSIGN_OR_RETURN(File file, File::OpenReadOnly(source_path_ + "/" + name));
      B2NDFS_ASSIGN_OR_RETURN(struct stat st, file.Stat());
      available = st.st_size;
    } else {
      available = source_->chunks_end - ref.offset;
    }
    if (ci.cbytes > available) {
      return InvalidData("chunk claims " + std::to_string(ci.cbytes) + " bytes but only " +
                         std::to_string(available) + " are stored");
    }
    const int64_t head_size = codec::ChunkHeadSize(ci);
    if (head_size > ci.cbytes) return InvalidData("chunk is shorter than its block offsets");
    auto head = std::make_shared<cache::Bytes>(static_cast<size_t>(head_size));
    B2NDFS_RETURN_IF_ERROR(ReadChunkBytes(ref, 0, head_size, head->data()));
    return cache::Value(std::move(head));
  });
}

Result<cache::Value> Container::FetchCompressedChunk(int64_t chunk_index) const {
  const cache::Key key{id_, chunk_index, 0, cache::EntryKind::kCompressedChunk};
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
    // Decode the chunk once and keep every block of it, since decoding any
    // one block costs the whole chunk anyway.
    B2NDFS_ASSIGN_OR_RETURN(cache::Value chunk, FetchCompressedChunk(chunk_index));
    cache::Bytes whole(static_cast<size_t>(expected));
    {
      auto lease = context_->decompressors->Acquire();
      B2NDFS_RETURN_IF_ERROR(lease->DecompressAll(*chunk, whole));
    }
    const int64_t nblocks = layout.BlocksInChunk(chunk_index);
    for (int64_t b = 0; b < nblocks; ++b) {
      const int64_t from = layout.BlockFirstItem(chunk_index, b) * itemsize;
      const int64_t size = layout.BlockItems(chunk_index, b) * itemsize;
      const int64_t have = std::clamp<int64_t>(expected - from, 0, size);
      if (b == block_index) {
        std::memcpy(block->data(), whole.data() + from, static_cast<size_t>(have));
      } else {
        auto other = std::make_shared<cache::Bytes>(static_cast<size_t>(size));
        std::memcpy(other->data(), whole.data() + from, static_cast<size_t>(have));
        std::memset(other->data() + have, 0, static_cast<size_t>(size - have));
        context_->cache->Insert(cache::Key{id_, chunk_index, b, cache::EntryKind::kBlock},
                                std::move(other));
      }
    }
    GlobalReadStats().whole_chunk_decodes++;
    GlobalReadStats().blocks_decompressed += static_cast<uint64_t>(nblocks);
    GlobalReadStats().bytes_decompressed += whole.size();
    return cache::Value(std::move(block));
  }
  const std::span<uint8_t> out(block->data(), static_cast<size_t>(stored));
  if (stored == 0) {
    // Only padding of a short last chunk: nothing stored to decode.
  } else if (ci.special) {
    // A run of one value: the chunk is just its header (and the value).
    B2NDFS_ASSIGN_OR_RETURN(cache::Value chunk, FetchCompressedChunk(chunk_index));
    auto lease = context_->decompressors->Acquire();
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
    auto lease = context_->decompressors->Acquire();
    B2NDFS_RETURN_IF_ERROR(lease->DecompressRangeFromPart(*head, ci, span, part, first_byte, out));
  }
  GlobalReadStats().blocks_decompressed++;
  GlobalReadStats().bytes_decompressed += block->size();
  return cache::Value(std::move(block));
}

Result<cache::Value> Container::GetBlock(int64_t chunk_index, int64_t block_index) const {
  const cache::Key key{id_, chunk_index, block_index, cache::EntryKind::kBlock};
  auto result =
      context_->cache->GetOrLoad(key, [&]() { return DecodeBlock(chunk_index, block_index); });
  if (!result.ok()) {
    return result.status().WithContext("chunk " + std::to_string(chunk_index) + " block " +
                                       std::to_string(block_index));
  }
  return result;
}

Status Container::ReadBox(const Box& box, int64_t item_begin, int64_t item_end,
                          uint8_t* out) const {
  const ArrayLayout& layout = *layout_;
  const int64_t itemsize = layout.itemsize();
  struct Piece {
    Box region;
    uint8_t* dst;
    const Box* dst_box;
  };
  struct BlockWork {
    BlockRef ref;
    std::vector<Piece> pieces;
    cache::Value value;
    Status status;
  };
  const std::vector<Box> boxes = geometry::LinearRangeToBoxes(box, item_begin, item_end);
  std::vector<BlockWork> blocks;
  std::map<std::pair<int64_t, int64_t>, size_t> block_slot;  // (chunk, block) -> slot
  uint8_t* dst = out;
  for (const Box& sub : boxes) {
    layout.ForEachBlockIn(sub, [&](const BlockRef& ref, const Box& region) {
      auto [it, inserted] =
          block_slot.try_emplace({ref.chunk_index, ref.block_index}, blocks.size());
      if (inserted) blocks.push_back(BlockWork{ref, {}, nullptr, Status::Ok()});
      blocks[it->second].pieces.push_back(Piece{region, dst, &sub});
    });
    dst += sub.NumItems() * itemsize;
  }

  // Fetch in batches that fit the pinning budget, copy, release, repeat: a
  // read never holds more than max_pinned_bytes of blocks at once.
  size_t begin = 0;
  while (begin < blocks.size()) {
    size_t end = begin;
    size_t pinned = 0;
    while (end < blocks.size() && (end == begin || pinned < context_->max_pinned_bytes)) {
      const BlockRef& r = blocks[end].ref;
      pinned += static_cast<size_t>(layout.BlockItems(r.chunk_index, r.block_index) * itemsize);
      ++end;
    }
    if (context_->pins != nullptr) context_->pins->Acquire(pinned);
    GlobalReadStats().pinned_bytes += static_cast<int64_t>(pinned);
    struct Unpin {
      PinBudget* pins;
      size_t bytes;
      ~Unpin() {
        GlobalReadStats().pinned_bytes -= static_cast<int64_t>(bytes);
        if (pins != nullptr) pins->Release(bytes);
      }
    } unpin{context_->pins, pinned};
    auto fetch = [&](size_t i) {
      BlockWork& w = blocks[begin + i];
      auto value = GetBlock(w.ref.chunk_index, w.ref.block_index);
      if (value.ok()) {
        w.value = std::move(value).value();
      } else {
        w.status = value.status();
      }
    };
    // Cached blocks are taken on this thread; only misses go to the workers.
    std::vector<size_t> misses;
    for (size_t i = begin; i < end; ++i) {
      BlockWork& w = blocks[i];
      w.value = context_->cache->TryGet(
          cache::Key{id_, w.ref.chunk_index, w.ref.block_index, cache::EntryKind::kBlock});
      if (!w.value) misses.push_back(i - begin);
    }
    auto fetch_miss = [&](size_t k) { fetch(misses[k]); };
    if (context_->workers != nullptr) {
      context_->workers->ParallelFor(misses.size(), fetch_miss);
    } else {
      for (size_t k = 0; k < misses.size(); ++k) fetch_miss(k);
    }
    for (size_t i = begin; i < end; ++i) {
      BlockWork& w = blocks[i];
      if (!w.status.ok()) return w.status;
      for (const Piece& p : w.pieces) {
        geometry::CopyRegion(w.value->data(), w.ref.block_box, p.dst, *p.dst_box, p.region,
                             itemsize);
      }
      w.value.reset();
    }
    begin = end;
  }
  return Status::Ok();
}

Status Container::ReadBoxBytes(const Box& box, int64_t offset, size_t length, uint8_t* out) const {
  if (length == 0) return Status::Ok();
  const int64_t itemsize = layout_->itemsize();
  const int64_t end = offset + static_cast<int64_t>(length);
  const int64_t first_item = offset / itemsize;
  const int64_t end_item = CeilDiv(end, itemsize);
  const int64_t head_skip = offset - first_item * itemsize;
  const int64_t tail_extra = end_item * itemsize - end;
  if (head_skip == 0 && tail_extra == 0) return ReadBox(box, first_item, end_item, out);
  // Partial items at either end: read whole items into a bounce buffer for
  // the first and last item only, the middle straight into `out`.
  std::vector<uint8_t> item(static_cast<size_t>(itemsize));
  int64_t cursor = first_item;
  uint8_t* dst = out;
  size_t remaining = length;
  if (head_skip != 0) {
    B2NDFS_RETURN_IF_ERROR(ReadBox(box, cursor, cursor + 1, item.data()));
    const size_t n = std::min(remaining, static_cast<size_t>(itemsize - head_skip));
    std::memcpy(dst, item.data() + head_skip, n);
    dst += n;
    remaining -= n;
    ++cursor;
  }
  const int64_t whole = static_cast<int64_t>(remaining) / itemsize;
  if (whole > 0) {
    B2NDFS_RETURN_IF_ERROR(ReadBox(box, cursor, cursor + whole, dst));
    dst += whole * itemsize;
    remaining -= static_cast<size_t>(whole * itemsize);
    cursor += whole;
  }
  if (remaining > 0) {
    B2NDFS_RETURN_IF_ERROR(ReadBox(box, cursor, cursor + 1, item.data()));
    std::memcpy(dst, item.data(), remaining);
  }
  return Status::Ok();
}

Status Container::ReadArrayBox(const Box& box, uint8_t* out) const {
  if (!ok()) return InvalidData(error_);
  const auto& shape = layout_->shape();
  if (box.ndim() != static_cast<int>(shape.size())) return InvalidArgument("box has wrong ndim");
  for (int a = 0; a < box.ndim(); ++a) {
    if (box.start[a] < 0 || box.start[a] > box.stop[a] || box.stop[a] > shape[a]) {
      return InvalidArgument("box " + geometry::ToString(box) + " is outside the array");
    }
  }
  Status status = ReadBox(box, 0, box.NumItems(), out);
  if (!status.ok() && status.error_number() != ENOMEM) return Status(EIO, status.message());
  return status;
}

void Container::Prefetch(const VirtualFile& file, int64_t offset, int64_t length) const {
  if (!ok() || context_->workers == nullptr || length <= 0) return;
  if (file.kind == FileKind::kMetaJson) return;
  int64_t body_offset = offset;
  if (file.kind == FileKind::kDataNpy) {
    body_offset -= static_cast<int64_t>(npy_header_.size());
    if (body_offset < 0) {
      length += body_offset;
      body_offset = 0;
    }
  }
  const Box box = FileBox(file);
  const int64_t itemsize = layout_->itemsize();
  const int64_t body_size = box.NumItems() * itemsize;
  if (body_offset >= body_size || length <= 0) return;
  const int64_t first = body_offset / itemsize;
  const int64_t last = CeilDiv(std::min(body_offset + length, body_size), itemsize);
  std::vector<std::pair<int64_t, int64_t>> wanted;
  for (const Box& sub : geometry::LinearRangeToBoxes(box, first, last)) {
    layout_->ForEachBlockIn(sub, [&](const BlockRef& ref, const Box&) {
      if (!wanted.empty() && wanted.back() == std::make_pair(ref.chunk_index, ref.block_index)) {
        return;
      }
      const cache::Key key{id_, ref.chunk_index, ref.block_index, cache::EntryKind::kBlock};
      if (!context_->cache->Contains(key)) wanted.emplace_back(ref.chunk_index, ref.block_index);
    });
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  GlobalReadStats().prefetch_requests++;
  auto self = shared_from_this();
  const size_t max_queued = 4 * static_cast<size_t>(context_->workers->size()) + 16;
  for (const auto& [chunk, block] : wanted) {
    const bool queued = context_->workers->TrySubmit(
        [self, chunk = chunk, block = block] {
          try {
            (void)self->GetBlock(chunk, block);
          } catch (...) {
            // Read-ahead is best effort; the real read reports errors.
          }
        },
        max_queued);
    if (!queued) break;
    GlobalReadStats().prefetched_blocks++;
  }
}

Box Container::FileBox(const VirtualFile& file) const {
  const ArrayLayout& layout = *layout_;
  switch (file.kind) {
    case FileKind::kChunk:
      return layout.ChunkBox(file.index);
    case FileKind::kSlice: {
      Box box = Box::FromShape(layout.shape());
      box.start[file.axis] = file.index;
      box.stop[file.axis] = file.index + 1;
      return box;
    }
    default:
      return Box::FromShape(layout.shape());
  }
}

int64_t Container::FileSize(const VirtualFile& file) const {
  if (file.kind == FileKind::kMetaJson) return static_cast<int64_t>(meta_json_.size());
  if (!ok()) return 0;
  const int64_t body = FileBox(file).NumItems() * layout_->itemsize();
  if (file.kind == FileKind::kDataNpy) return static_cast<int64_t>(npy_header_.size()) + body;
  return body;
}

Result<size_t> Container::Read(const VirtualFile& file, int64_t offset, size_t length,
                               uint8_t* out) const {
  GlobalReadStats().reads++;
  const int64_t size = FileSize(file);
  if (offset < 0) return InvalidArgument("negative offset");
  if (offset >= size || length == 0) return size_t{0};
  const size_t n =
      static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(length), size - offset));
  if (file.kind == FileKind::kMetaJson) {
    std::memcpy(out, meta_json_.data() + offset, n);
    GlobalReadStats().bytes_served += n;
    return n;
  }
  if (!ok()) return InvalidData(error_);
  Status status;
  try {
    if (file.kind == FileKind::kDataNpy) {
      const int64_t header = static_cast<int64_t>(npy_header_.size());
      size_t done = 0;
      if (offset < header) {
        done = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(n), header - offset));
        std::memcpy(out, npy_header_.data() + offset, done);
      }
      if (done < n) {
        status = ReadBoxBytes(FileBox(file), offset + static_cast<int64_t>(done) - header, n - done,
                              out + done);
      }
    } else {
      status = ReadBoxBytes(FileBox(file), offset, n, out);
    }
  } catch (const std::bad_alloc&) {
    status = Status(ENOMEM, "out of memory");
  }
  if (!status.ok()) {
    GlobalReadStats().read_errors++;
    LogOnce("read:" + source_path_ + ":" + status.message(), LogLevel::kError,
            source_path_ + ": " + status.message());
    // Whatever went wrong inside the container (a vanished chunk file
    // included) is an I/O error of this file, not a missing file.
    const int error_number = status.error_number() == ENOMEM ? ENOMEM : EIO;
    return Status(error_number, source_path_ + ": " + status.message());
  }
  GlobalReadStats().bytes_served += n;
  return n;
}

std::string Container::RenderMeta() const {
  const Source& src = *source_;
  const ArrayLayout& layout = *layout_;
  format::MetaJsonInput in;
  in.format = format_name_;
  in.shape = layout.shape();
  in.chunkshape = layout.chunkshape();
  in.blockshape = layout.blockshape();
  if (src.ndmeta) {
    in.version = src.ndmeta->version;
    in.dtype = src.ndmeta->dtype;
    in.dtype_format = src.ndmeta->dtype_format;
    in.ndmeta = &*src.ndmeta;
  } else {
    in.version = src.frame_info.format_version;
  }
  in.itemsize = layout.itemsize();
  in.nbytes = layout.NumItems() * layout.itemsize();
  in.cbytes = src.frame_info.cbytes;
  in.nchunks = layout.NumChunks();
  in.frame = &src.frame_info;
  in.vlmeta = src.vlmeta;
  const int64_t data_size = in.nbytes;
  in.files.push_back({"data", layout.shape(), data_size});
  in.files.push_back(
      {"data.npy", layout.shape(), static_cast<int64_t>(npy_header_.size()) + data_size});
  if (layout.NumChunks() > 0) {
    in.files.push_back(
        {"chunks", layout.chunkshape(), layout.ChunkBox(0).NumItems() * layout.itemsize()});
  }
  for (int a = 0; a < layout.ndim(); ++a) {
    if (layout.shape()[a] == 0) continue;
    std::vector<int64_t> slice_shape;
    for (int b = 0; b < layout.ndim(); ++b) {
      if (b != a) slice_shape.push_back(layout.shape()[b]);
    }
    in.files.push_back({"slices/" + std::to_string(a), slice_shape, data_size / layout.shape()[a]});
  }
  return format::RenderMetaJson(in);
}

std::string MakeNpyHeader(const std::string& descr, const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': " + descr + ", 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  // Version 1.0 has a 2-byte header length; longer headers need 2.0. The
  // whole preamble is padded with spaces to a multiple of 64 and ends in \n.
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const size_t preamble = v2 ? 12 : 10;
  size_t total = preamble + dict.size() + 1;
  const size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const uint32_t len = static_cast<uint32_t>(dict.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  return out + dict;
}

}  // namespace b2ndfs::store
