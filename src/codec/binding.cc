#include "b2ndfs/codec/binding.h"

#include <blosc2.h>
#include <blosc2/codecs-registry.h>
#include <blosc2/filters-registry.h>

#include <climits>
#include <string>

#include "b2ndfs/codec/builtin.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/util/blosc_names.h"

namespace b2ndfs::codec {
namespace {

// Chunk header bytes (README_CHUNK_FORMAT.rst).
constexpr size_t kFlagsByte = 2;         // shuffle bits, memcpyed, dont-split
constexpr size_t kFiltersByte = 16;      // the six filter codes (extended header)
constexpr size_t kUdcodecByte = 22;      // a user-registered codec's id
constexpr size_t kFiltersMetaByte = 24;  // the six filters' meta bytes
constexpr size_t kBlosc2FlagsByte = 31;  // special-value kind, lazy chunk
constexpr uint8_t kDontSplit = 0x10;     // flags bit 4: one stream per block
constexpr uint8_t kLazyChunk = 0x08;     // blosc2_flags bit 3: blocks read from schunk->frame
constexpr uint8_t kAlphaFormat = 3;      // ignores the sixth filter

// c-blosc2's plugins decode the metalayer into malloc(8 * ...) arrays.
constexpr size_t kMaxPluginNdim = 8;
constexpr size_t kMaxZfpNdim = 4;

bool Extended(std::span<const uint8_t> header) {
  if (header.size() < static_cast<size_t>(BLOSC_EXTENDED_HEADER_LENGTH)) return false;
  const uint8_t flags = header[kFlagsByte];
  return (flags & BLOSC_DOSHUFFLE) && (flags & BLOSC_DOBITSHUFFLE);
}

bool RunsPipeline(std::span<const uint8_t> header) {
  if (!Extended(header)) return false;
  if (header[kFlagsByte] & BLOSC_MEMCPYED) return false;
  return ((header[kBlosc2FlagsByte] >> 4) & BLOSC2_SPECIAL_MASK) == 0;
}

int ZfpCodec(std::span<const uint8_t> header) {
  if ((header[kFlagsByte] >> 5) != BLOSC_UDCODEC_FORMAT) return 0;
  const uint8_t id = header[kUdcodecByte];
  return id >= BLOSC_CODEC_ZFP_FIXED_ACCURACY && id <= BLOSC_CODEC_ZFP_FIXED_RATE ? id : 0;
}

size_t FilterSlots(std::span<const uint8_t> header) {
  return header[0] == kAlphaFormat ? BLOSC2_MAX_FILTERS - 1 : BLOSC2_MAX_FILTERS;
}

void AppendBe(std::vector<uint8_t>* out, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

ChunkNeeds NeedsOfChunk(std::span<const uint8_t> header) {
  ChunkNeeds needs;
  if (!RunsPipeline(header)) return needs;
  if (ZfpCodec(header) != 0 && (header[kFlagsByte] & kDontSplit)) needs.geometry = true;
  for (size_t i = 0; i < FilterSlots(header); ++i) {
    const uint8_t id = header[kFiltersByte + i];
    const uint8_t meta = header[kFiltersMetaByte + i];
    if (id == BLOSC_FILTER_NDCELL || id == BLOSC_FILTER_NDMEAN) needs.geometry = true;
    if ((id == BLOSC_FILTER_BYTEDELTA || id == BLOSC_FILTER_BYTEDELTA_BUGGY) && meta == 0) {
      needs.typesize = true;
    }
  }
  if (needs.geometry) needs.typesize = true;
  return needs;
}

std::vector<uint8_t> SerializeB2ndMeta(const ArrayGeometry& g, int32_t typesize) {
  const auto ndim = static_cast<uint8_t>(g.shape.size());
  std::vector<uint8_t> out{0x97, 0x00, ndim};  // [version 0, ndim, ...]
  out.push_back(0x90 | ndim);
  for (int64_t v : g.shape) {
    out.push_back(0xd3);
    AppendBe(&out, static_cast<uint64_t>(v), 8);
  }
  for (const auto* shape : {&g.chunkshape, &g.blockshape}) {
    out.push_back(0x90 | ndim);
    for (int64_t v : *shape) {
      out.push_back(0xd2);
      AppendBe(&out, static_cast<uint32_t>(v), 4);
    }
  }
  out.push_back(0x00);  // dtype_format: NumPy
  const std::string dtype = "|V" + std::to_string(typesize);
  out.push_back(0xdb);
  AppendBe(&out, dtype.size(), 4);
  out.insert(out.end(), dtype.begin(), dtype.end());
  return out;
}

Result<std::shared_ptr<const ArrayBinding>> ArrayBinding::Create(
    int32_t typesize, int32_t blocksize, std::optional<ArrayGeometry> geometry) {
  EnsureInitialized();
  // The chunk header holds the typesize in one byte.
  if (typesize < 1 || typesize > 255) {
    return InvalidData("cannot bind the array: item size " + std::to_string(typesize));
  }
  if (blocksize < typesize) {
    return InvalidData("cannot bind the array: block size " + std::to_string(blocksize));
  }
  if (geometry) {
    const ArrayGeometry& g = *geometry;
    const size_t ndim = g.shape.size();
    if (ndim == 0 || ndim > kMaxPluginNdim || g.chunkshape.size() != ndim ||
        g.blockshape.size() != ndim) {
      return InvalidData("cannot bind the array: c-blosc2's plugins take 1 to " +
                         std::to_string(kMaxPluginNdim) + " dimensions, the array has " +
                         std::to_string(ndim));
    }
    int64_t items = typesize;
    for (size_t i = 0; i < ndim; ++i) {
      if (g.shape[i] < 0 || g.chunkshape[i] < 1 || g.chunkshape[i] > INT32_MAX ||
          g.blockshape[i] < 1 || g.blockshape[i] > g.chunkshape[i]) {
        return InvalidData("cannot bind the array: axis " + std::to_string(i) +
                           " has impossible chunk or block lengths");
      }
      items *= g.blockshape[i];
      if (items > INT32_MAX) return InvalidData("cannot bind the array: blocks are too large");
    }
    if (items != blocksize) {
      return InvalidData("cannot bind the array: its blocks hold " + std::to_string(items) +
                         " bytes by the block shape but the chunks use " +
                         std::to_string(blocksize) + "-byte blocks");
    }
  }
  std::shared_ptr<ArrayBinding> binding(new ArrayBinding());
  binding->typesize_ = typesize;
  binding->blocksize_ = blocksize;
  binding->geometry_ = std::move(geometry);
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = typesize;
  cparams.blocksize = blocksize;
  cparams.nthreads = 1;
  blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
  dparams.nthreads = 1;
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;  // in memory, no file
  storage.cparams = &cparams;
  storage.dparams = &dparams;
  binding->schunk_ = blosc2_schunk_new(&storage);
  if (binding->schunk_ == nullptr) return Status(ENOMEM, "cannot create a Blosc2 super-chunk");
  if (binding->geometry_) {
    std::vector<uint8_t> meta = SerializeB2ndMeta(*binding->geometry_, typesize);
    if (blosc2_meta_add(binding->schunk_, "b2nd", meta.data(), static_cast<int32_t>(meta.size())) <
        0) {
      return Status(ENOMEM, "cannot add the b2nd metalayer to the bound super-chunk");
    }
  }
  return std::shared_ptr<const ArrayBinding>(std::move(binding));
}

ArrayBinding::~ArrayBinding() {
  if (schunk_ != nullptr) blosc2_schunk_free(schunk_);
}

Status ArrayBinding::CheckChunk(std::span<const uint8_t> header, int32_t nbytes, int32_t blocksize,
                                int32_t typesize) const {
  if (!Extended(header)) return Status::Ok();  // Blosc1 headers name no plugin
  if (header[kBlosc2FlagsByte] & kLazyChunk) {
    return InvalidData("chunk is marked lazy (its blocks would be read from a frame)");
  }
  if (!RunsPipeline(header)) return Status::Ok();
  const int zfp = ZfpCodec(header);
  if (zfp != 0 && !(header[kFlagsByte] & kDontSplit)) {
    // ZFP would decode a whole block into one byte stream's share of it.
    return InvalidData(
        "ZFP chunk split into byte streams cannot be decoded with the array's "
        "geometry");
  }
  const ChunkNeeds needs = NeedsOfChunk(header);
  if (!needs.any()) return Status::Ok();
  if (typesize != typesize_) {
    return InvalidData("chunk has " + std::to_string(typesize) + "-byte items but the array " +
                       std::to_string(typesize_) + "-byte ones");
  }
  if (!needs.geometry) return Status::Ok();
  const std::string what =
      zfp != 0 ? "codec " + CodecIdName(zfp) : std::string("filter ndcell/ndmean");
  if (!geometry_) {
    return InvalidData(what +
                       " reads the array's shape from a b2nd metalayer, which this plain "
                       "super-chunk lacks (c-blosc2 cannot decode it either)");
  }
  if (blocksize != blocksize_ || nbytes % blocksize_ != 0) {
    return InvalidData("chunk of " + std::to_string(nbytes) + " bytes in " +
                       std::to_string(blocksize) + "-byte blocks does not fit the array's " +
                       std::to_string(blocksize_) + "-byte blocks, which " + what +
                       " decodes whole");
  }
  const size_t ndim = geometry_->blockshape.size();
  if (zfp != 0) {
    if (typesize != 4 && typesize != 8) {
      return InvalidData("ZFP decodes 4- or 8-byte items, not " + std::to_string(typesize));
    }
    if (ndim > kMaxZfpNdim) {
      return InvalidData("ZFP decodes 1 to 4 dimensions, not " + std::to_string(ndim));
    }
  }
  for (size_t i = 0; i < FilterSlots(header); ++i) {
    const uint8_t id = header[kFiltersByte + i];
    if (id != BLOSC_FILTER_NDCELL && id != BLOSC_FILTER_NDMEAN) continue;
    // Both read the meta as an int8 cell length and divide by it.
    const auto cell = static_cast<int8_t>(header[kFiltersMetaByte + i]);
    if (cell < 1) {
      return InvalidData(FilterIdName(id) + " cell length " + std::to_string(cell) +
                         " is not positive");
    }
    if (id == BLOSC_FILTER_NDMEAN && typesize > INT8_MAX) {
      return InvalidData("ndmean takes items of at most 127 bytes");
    }
    if (id == BLOSC_FILTER_NDCELL) {
      // NDCELL converts cell^ndim to an int: keep it at most a block.
      int64_t cell_items = 1;
      for (size_t k = 0; k < ndim; ++k) {
        cell_items *= cell;
        if (cell_items * typesize > blocksize_) {
          return InvalidData("ndcell cells of length " + std::to_string(cell) +
                             " are larger than a block");
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace b2ndfs::codec
