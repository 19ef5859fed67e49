// store: one opened generation of a container, and reads of any box of its
// array.
//
// A Container is built from a ByteSource (one version of a frame file, a
// sparse frame, or later a remote object): its decoded metadata, chunk index
// and array layout, all immutable after Open(). Any virtual file that streams
// the array is an ArrayStream (a header, then a box of the array in C order);
// Read() maps a byte range of it to the blocks it touches, fetches them
// through the shared block cache (decompressing misses) and copies the pieces
// out. The container does not know which virtual files exist, nor renders
// meta.json: the FileCatalog given at open (file_catalog.h; the views
// module) does, on first use, and the container keeps the text.
// Its pieces, private to src/store: the frame's metadata and vlmetalayers
// (frame_metadata.h), the layout the frame declares (frame_layout.h), a
// proxy cache's chunks (proxy_mask.h), a carrier's evaluation (carrier.h),
// meta.json's input (container_meta.cc); reads in container_read.cc.
// Memory: what a container holds (metadata, its compressed chunk index,
// meta.json) is charged to the block cache's budget while it lives.
// Cache keys use the generation's cache_id, so a generation closed and
// reopened unchanged finds its blocks still cached.
// Errors: Open() never fails: an undecodable container carries error() and
// every data read returns EIO; transient() says the error came from reading
// the source (a descriptor limit, a vanished file, a flaky disk), so that the
// caller retries instead of remembering it. Read errors name the source.
// Thread-safety: all const methods may be called from any thread.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/format/vlen.h"
#include "b2ndfs/format/voxel_geometry.h"
#include "b2ndfs/geometry/geometry.h"
#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/store/file_catalog.h"
#include "b2ndfs/store/operands.h"
#include "b2ndfs/store/read_stats.h"
#include "b2ndfs/store/store_context.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::store {

class CountedSource;
struct ReadPolicy;
class ChunkDirectory;
class BlockLoader;
class BoxReader;
class Evaluation;
struct FrameMetadata;

// The bytes of a virtual file that streams the array: `header` (an .npy or
// NIfTI header, often empty), then the items of `box` in C order.
struct ArrayStream {
  std::string header;
  geometry::Box box;
};

// What python-blosc2 made the frame as (format/vlen.h): which views apply.
using ContentKind = format::ContentKind;

class Container : public std::enable_shared_from_this<Container> {
 public:
  // `scope`: where a carrier's operands are found (operands.h); without
  // one a carrier is never evaluated.
  static std::shared_ptr<const Container> Open(std::shared_ptr<const source::ByteSource> source,
                                               StoreContext* context, uint64_t cache_id,
                                               const FileCatalog* catalog,
                                               const OperandScope* scope = nullptr);
  ~Container();
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  // The error came from reading the source, not from its content.
  bool transient() const { return transient_; }
  const std::string& name() const { return source_->name(); }
  const source::ByteSource& source() const { return *source_; }
  uint64_t cache_id() const { return cache_id_; }
  // meta.json, rendered on first use by the catalog (a read of `data` never
  // needs it); throws only std::bad_alloc, and renders again on the next
  // call then.
  const std::string& meta_json() const;
  // Bytes of memory this container holds (charged to the cache).
  int64_t memory_bytes() const { return memory_bytes_.load(std::memory_order_relaxed); }
  // Valid only when ok().
  const geometry::ArrayLayout& layout() const { return *layout_; }
  const std::string& format_name() const { return format_name_; }
  // The NumPy descr of the items ('<f4', "[('a', '<i4')]", '|V8', ...).
  const std::string& npy_descr() const { return npy_descr_; }
  // c-blosc2's name of the frame's codec, as meta.json's "codec" ("zstd",
  // "lz4", "user:200", ...).
  std::string CodecName() const;
  // Voxel size, origin, units and axis names from the vlmetalayers (decoded
  // at open; empty when there are none), for the imaging headers.
  const format::VoxelGeometry& voxel_geometry() const { return voxel_geometry_; }

  // kArray unless python-blosc2 tagged the frame otherwise (valid when ok());
  // an evaluated carrier is an array (its blocks computed: carrier.h).
  ContentKind content_kind() const { return evaluation_ ? ContentKind::kArray : tag_.kind; }
  // A carrier with an expression in the grammar that is not evaluated: why.
  const std::string& evaluation_error() const { return evaluation_error_; }
  // Who may read what this container serves when it is computed from other
  // files (an evaluated carrier: operands.h, "Readers"); nullopt otherwise,
  // when its own file's attributes say it.
  std::optional<struct stat> derived_readers() const;
  // The operand paths a carrier's value depends on (its operands', theirs
  // in turn), at the versions read; a changed one makes this version stale.
  const std::vector<OperandVersion>& operand_versions() const { return watched_; }
  const format::ContentTag& content_tag() const { return tag_; }
  // Something made from one chunk's decompressed bytes (an item as JSON, a
  // batch's blocks merged), made once by `make` and kept in the block cache
  // (charged to its budget) under `variant`, 0..15, so that every read of a
  // virtual file made this way does not make it again. EIO when the chunk
  // cannot be read or `make` fails; the chunk must be in the layout.
  using ChunkTransform = std::function<Result<std::string>(std::span<const uint8_t> chunk)>;
  Result<cache::Value> DerivedFromChunk(int64_t chunk, int variant,
                                        const ChunkTransform& make) const;

  // A value computed from this generation's array (store/pyramid.h: a
  // block of a pyramid level), made by `make` once and kept in the block
  // cache (single flight, charged to its budget) under (`space`, `index`),
  // space 0..63 chosen by the caller. EIO when not ok().
  Result<cache::Value> Computed(int space, int64_t index,
                                const std::function<Result<cache::Value>()>& make) const;
  // Whether Computed(space, index) is cached (no stats).
  bool ComputedCached(int space, int64_t index) const;
  // Where values computed from this generation are kept across mounts
  // (source/derived_store.h): its source's, if it offers one; nullptr for
  // an evaluated carrier, whose values depend on other files as well.
  const source::DerivedStore* derived_store() const;

  int64_t StreamSize(const ArrayStream& stream) const;
  // Reads up to `length` bytes at `offset` of the stream; fewer only at its end.
  Result<size_t> Read(const ArrayStream& stream, int64_t offset, size_t length, uint8_t* out) const;
  // Reads any box of the array (inside its shape) as C-order bytes into
  // `out`, which holds box.NumItems() * itemsize bytes.
  Status ReadArrayBox(const geometry::Box& box, uint8_t* out) const;
  // Starts decompressing, on the background workers, the blocks that bytes
  // [offset, offset + length) of the stream need and the cache lacks. Best
  // effort: does nothing without workers or when their queue is full.
  void Prefetch(const ArrayStream& stream, int64_t offset, int64_t length) const;
  // Every block the stream's box touches is in the block cache now: reading
  // it would decompress nothing.
  bool StreamCached(const ArrayStream& stream) const;

 private:
  Container(std::shared_ptr<const source::ByteSource> source, StoreContext* context,
            uint64_t cache_id);
  Status Load(const FileCatalog* catalog);
  Status LoadFrame();
  void LoadReaders();
  void LoadEvaluation(const OperandScope& scope);  // container_carrier.cc
  void AddCharge(int64_t delta) const;
  void Charge();
  void Fail(const Status& status);
  // meta.json's input but its files (container_meta.cc).
  format::MetaJsonInput MetaInput() const;

  // What a Container owns, made in this order and destroyed in reverse, each
  // part referring only to those before it (src/store, private headers):
  // its source's reads, counted (CountedSource), and the ReadPolicy made
  // from the source's cost; the frame's metadata and the array's layout; the
  // ChunkDirectory (made once the frame is parsed: chunk index, chunk
  // heads); the BlockLoader (plans, loads, decodes) and the BoxReader (reads
  // boxes, reads ahead), made once the layout is known. A container that
  // failed to open keeps none of the last five. Background work: the heads
  // prefetch holds a weak_ptr to the Container (dropped if it closes
  // first); read-ahead tasks hold a shared_ptr until they end.
  std::shared_ptr<const source::ByteSource> source_;
  StoreContext* context_;
  uint64_t cache_id_;
  std::unique_ptr<const CountedSource> reads_;
  std::unique_ptr<const ReadPolicy> policy_;
  std::string error_;
  bool transient_ = false;
  std::string format_name_;
  const FileCatalog* catalog_ = nullptr;  // renders meta.json (file_catalog.h)
  mutable std::mutex meta_json_mutex_;    // leaf lock; guards rendering
  mutable std::atomic<bool> meta_json_ready_{false};
  mutable std::string meta_json_;  // written once, before meta_json_ready_
  std::string npy_descr_;
  format::VoxelGeometry voxel_geometry_;
  format::ContentTag tag_;
  // Charged to the cache; grows or shrinks once, when meta.json is rendered.
  mutable std::atomic<int64_t> memory_bytes_{0};
  std::unique_ptr<FrameMetadata> meta_;
  std::optional<geometry::ArrayLayout> layout_;
  // A carrier's evaluation (owning its operands), made at open.
  std::unique_ptr<const Evaluation> evaluation_;
  std::string evaluation_error_;
  std::vector<OperandVersion> watched_;
  std::unique_ptr<ChunkDirectory> directory_;  // set_layout() once, at open
  std::unique_ptr<const BlockLoader> loader_;
  std::unique_ptr<const BoxReader> reader_;
};

}  // namespace b2ndfs::store
