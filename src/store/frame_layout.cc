// The array a frame declares (frame_layout.h).
#include "frame_layout.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "b2ndfs/util/checked_math.h"
#include "chunk_directory.h"

namespace b2ndfs::store {

using geometry::ArrayLayout;

namespace {

// The item size is what makes chunk sizes add up: a chunk holds the chunk
// shape rounded up to whole blocks.
Result<FrameLayout> NdLayout(const format::FrameInfo& info, format::NdMeta nd, int64_t nchunks) {
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
  // A dtype of another item size is served by the chunks' item size, as
  // c-blosc2 reads it; format::CheckDtype says so in meta.json.
  B2NDFS_ASSIGN_OR_RETURN(ArrayLayout layout,
                          ArrayLayout::Regular(nd.shape, nd.chunkshape, nd.blockshape, itemsize));
  if (layout.NumChunks() != nchunks) {
    return InvalidData("the shape needs " + std::to_string(layout.NumChunks()) +
                       " chunks but the frame holds " + std::to_string(nchunks));
  }
  std::string format_name = nd.format;
  return FrameLayout{std::move(format_name), std::move(nd), std::move(layout)};
}

// Equal chunks (c-blosc2's only well-formed case): no chunk needs to be read
// to know the layout, however many there are.
Result<ArrayLayout> EqualChunksLayout(const format::FrameInfo& info, int64_t nchunks) {
  const int64_t typesize = info.typesize;
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
  return layout;
}

// Chunks of varying size: each chunk's header says how long it is.
Result<ArrayLayout> VaryingChunksLayout(const format::FrameInfo& info,
                                        const ChunkDirectory& directory) {
  const int64_t typesize = info.typesize;
  const int64_t nchunks = directory.nchunks();
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
    B2NDFS_ASSIGN_OR_RETURN(const ChunkRef ref, directory.Locate(c));
    if (ref.kind != format::ChunkKind::kStored) {
      return InvalidData("chunk " + std::to_string(c) +
                         " is a run of special values in a frame without a chunk size");
    }
    B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, directory.ReadHeader(c));
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
  return ArrayLayout::Irregular1D(chunk_items, block_items, typesize);
}

// A plain super-chunk: a 1-D array of typesize items whose chunks are the
// super-chunk's own, unpadded (the last one may be short).
Result<FrameLayout> SchunkLayout(const format::FrameInfo& info, const ChunkDirectory& directory) {
  const int64_t typesize = info.typesize;
  if (typesize <= 0) return InvalidData("typesize is 0");
  if (info.nbytes % typesize != 0) {
    return InvalidData("the frame holds " + std::to_string(info.nbytes) +
                       " bytes, not a whole number of " + std::to_string(typesize) + "-byte items");
  }
  B2NDFS_ASSIGN_OR_RETURN(ArrayLayout layout, info.chunksize > 0
                                                  ? EqualChunksLayout(info, directory.nchunks())
                                                  : VaryingChunksLayout(info, directory));
  return FrameLayout{"schunk", std::nullopt, std::move(layout)};
}

}  // namespace

Result<FrameLayout> LayoutOfFrame(const format::FrameInfo& info, const ChunkDirectory& directory) {
  // The shape metalayer decides the layout.
  const format::NamedBytes* b2nd = nullptr;
  const format::NamedBytes* caterva = nullptr;
  for (const auto& m : info.metalayers) {
    if (m.name == "b2nd") b2nd = &m;
    if (m.name == "caterva") caterva = &m;
  }
  if (b2nd == nullptr && caterva == nullptr) return SchunkLayout(info, directory);
  B2NDFS_ASSIGN_OR_RETURN(format::NdMeta nd,
                          b2nd != nullptr ? format::DecodeB2ndMetalayer(b2nd->content)
                                          : format::DecodeCatervaMetalayer(caterva->content));
  return NdLayout(info, std::move(nd), directory.nchunks());
}

}  // namespace b2ndfs::store
