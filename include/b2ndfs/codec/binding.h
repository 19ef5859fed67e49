// codec/binding: a decompression context bound to an array's geometry.
//
// Some codecs and filters built into c-blosc2 3.3 do not find everything they
// need in the chunk: they read it from the decompression context's
// super-chunk (blosc2_dparams.schunk):
//   - ZFP (codecs 33..35), NDCELL and NDMEAN (filters 32, 33) read the shape,
//     chunk shape and block shape from its "b2nd" metalayer, and the item size
//     from schunk->typesize; they decode a whole block of prod(blockshape)
//     items into the block's buffer, trusting that this is the block's size;
//   - BYTEDELTA (34, 35) with filter meta 0 takes the item size from
//     schunk->typesize;
//   - ZFP fixed-rate's cell decoder (reached through blosc2_getitem_ctx)
//     dereferences the super-chunk without a check: a bare context crashes.
// An ArrayBinding owns an in-memory super-chunk that carries the container's
// typesize and block size and, for an N-d array, a "b2nd" metalayer written by
// b2ndfs from geometry the caller validated: never a file's bytes (c-blosc2's
// metalayer decoder does no bounds checks, and the plugins above write
// prod(blockshape) * typesize bytes into each block). Create() refuses
// geometry that disagrees with what the plugins will compute; ChunkNeeds()
// and CheckChunkAgainst() decide, per chunk and before any c-blosc2 call,
// whether a chunk needs a binding and fits this one (decompressor.h calls
// them on every path).
// Ownership: the binding owns its super-chunk; Decompressors created for it
// hold a shared_ptr, so it outlives them.
// Thread-safety: immutable after Create(); c-blosc2 only reads the
// super-chunk while decoding (it is never given to the cell decoder, which
// would cache the block shape in it).
// Errors: Status(EIO) naming the inconsistency.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

struct blosc2_schunk;

namespace b2ndfs::codec {

// The N-d geometry of a container, as b2ndfs decoded and validated it.
struct ArrayGeometry {
  std::vector<int64_t> shape;
  std::vector<int64_t> chunkshape;
  std::vector<int64_t> blockshape;
};

// What a chunk's pipeline reads from the super-chunk of its context.
struct ChunkNeeds {
  bool typesize = false;  // schunk->typesize (BYTEDELTA meta 0, and the ones below)
  bool geometry = false;  // the "b2nd" metalayer (ZFP, NDCELL, NDMEAN)
  bool any() const { return typesize || geometry; }
};

// Reads the needs from a chunk's first 32 bytes (fewer: none). Memcpyed and
// special chunks never run a codec or filter, and a ZFP chunk split into byte
// streams never reaches ZFP with a whole block (c-blosc2 writes such streams
// uncompressed, and ZFP refuses a context without super-chunk): none.
ChunkNeeds NeedsOfChunk(std::span<const uint8_t> header);

class ArrayBinding {
 public:
  // `typesize` and `blocksize` as every chunk of the container has them;
  // `geometry` for b2nd/caterva containers (nullopt for a plain super-chunk,
  // which then only offers its typesize). EIO when the geometry disagrees
  // with them: blocksize != prod(blockshape) * typesize, ndim outside 1..8
  // (c-blosc2's plugins decode into 8-entry arrays), lengths out of range.
  static Result<std::shared_ptr<const ArrayBinding>> Create(int32_t typesize, int32_t blocksize,
                                                            std::optional<ArrayGeometry> geometry);
  ~ArrayBinding();
  ArrayBinding(const ArrayBinding&) = delete;
  ArrayBinding& operator=(const ArrayBinding&) = delete;

  int32_t typesize() const { return typesize_; }
  int32_t blocksize() const { return blocksize_; }
  bool has_geometry() const { return geometry_.has_value(); }
  // For Decompressor: the super-chunk to put in blosc2_dparams.schunk.
  blosc2_schunk* schunk() const { return schunk_; }

  // OK when c-blosc2 may decode the chunk (header = its first 32 bytes, with
  // the sizes `nbytes`, `blocksize`, `typesize` from it) with this binding:
  // same typesize and block size, whole blocks only, and the codec's or
  // filter's own limits (ZFP: 4- or 8-byte items, 1..4 dimensions; NDCELL,
  // NDMEAN: a cell size of 1..127, NDCELL's cell no larger than a block).
  Status CheckChunk(std::span<const uint8_t> header, int32_t nbytes, int32_t blocksize,
                    int32_t typesize) const;

 private:
  ArrayBinding() = default;
  int32_t typesize_ = 0;
  int32_t blocksize_ = 0;
  std::optional<ArrayGeometry> geometry_;
  blosc2_schunk* schunk_ = nullptr;
};

// The "b2nd" metalayer as c-blosc2's b2nd_serialize_meta lays it out (shape
// as int64, chunk and block shapes as int32, dtype "|V<typesize>"): ZFP's cell
// decoder reads it at fixed offsets. Exposed for tests.
std::vector<uint8_t> SerializeB2ndMeta(const ArrayGeometry& geometry, int32_t typesize);

}  // namespace b2ndfs::codec
