// store: an opened container, and reads of any of its virtual files.
//
// A Container is one generation of one source container (a contiguous frame
// file or a sparse-frame directory): its decoded metadata, its chunk index and
// its array layout, all immutable after Open(). Every virtual file of SPEC.md
// (data, data.npy, a chunk, a slice) is a box of the array streamed in C
// order; Read() maps a byte range of that stream to the blocks it touches,
// fetches them through the shared block cache (decompressing misses) and
// copies the pieces out. meta.json is rendered once, at open.
// Errors: Open() never fails: an undecodable container carries error() and
// every data read returns EIO. Read errors carry a message naming the source.
// Thread-safety: all const methods may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/geometry/geometry.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::store {

class WorkerPool;
class PinBudget;

// Services shared by every container of a mount.
struct StoreContext {
  cache::BlockCache* cache = nullptr;
  codec::DecompressorPool* decompressors = nullptr;
  WorkerPool* workers = nullptr;  // optional: parallel decompression of misses
  PinBudget* pins = nullptr;      // optional: mount-wide limit on pinned blocks
  // Bytes of blocks one read may pin at once before it copies them out.
  size_t max_pinned_bytes = 64u << 20;
};

enum class FileKind { kMetaJson, kData, kDataNpy, kChunk, kSlice };

struct VirtualFile {
  FileKind kind = FileKind::kData;
  int axis = 0;       // kSlice
  int64_t index = 0;  // kChunk: chunk index; kSlice: index along `axis`
};

struct ReadStats {
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> bytes_served{0};
  std::atomic<uint64_t> read_errors{0};
  std::atomic<uint64_t> blocks_decompressed{0};
  std::atomic<uint64_t> bytes_decompressed{0};
  // Chunks decompressed whole (delta, dictionaries): once per chunk, shared
  // by every reader that waits for one of its blocks.
  std::atomic<uint64_t> whole_chunk_decodes{0};
  std::atomic<uint64_t> chunks_fetched{0};
  std::atomic<uint64_t> bytes_fetched{0};
  std::atomic<uint64_t> prefetch_requests{0};
  std::atomic<uint64_t> prefetched_blocks{0};
  std::atomic<int64_t> pinned_bytes{0};  // blocks held by readers right now
};
ReadStats& GlobalReadStats();

class Container : public std::enable_shared_from_this<Container> {
 public:
  // `source_path` is a frame file or a sparse-frame directory.
  static std::shared_ptr<Container> Open(const std::string& source_path, StoreContext* context);
  ~Container();
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& source_path() const { return source_path_; }
  uint64_t id() const { return id_; }
  const std::string& meta_json() const { return meta_json_; }
  // Valid only when ok().
  const geometry::ArrayLayout& layout() const { return *layout_; }
  const std::string& format_name() const { return format_name_; }

  // Exact size of a virtual file (0 for a kind that does not exist here).
  int64_t FileSize(const VirtualFile& file) const;
  // The array box a box-backed file streams (data, data.npy body, chunk, slice).
  geometry::Box FileBox(const VirtualFile& file) const;
  // Reads up to `length` bytes at `offset`; fewer only at end of file.
  Result<size_t> Read(const VirtualFile& file, int64_t offset, size_t length, uint8_t* out) const;
  // Reads any box of the array (inside its shape) as C-order bytes into
  // `out`, which holds box.NumItems() * itemsize bytes.
  Status ReadArrayBox(const geometry::Box& box, uint8_t* out) const;
  // Starts decompressing, on the background workers, the blocks that bytes
  // [offset, offset + length) of `file` need and the cache lacks. Best
  // effort: does nothing without workers or when their queue is full.
  void Prefetch(const VirtualFile& file, int64_t offset, int64_t length) const;

 private:
  Container(std::string source_path, StoreContext* context);
  Status Load();
  Status LoadChunkIndex(const std::vector<uint8_t>& offsets_chunk);
  struct ChunkRef;
  Result<ChunkRef> LocateChunk(int64_t chunk_index) const;
  Result<codec::ChunkInfo> ReadChunkHeader(int64_t chunk_index) const;
  Status ReadChunkBytes(const ChunkRef& ref, int64_t offset, int64_t length, uint8_t* out) const;
  Result<cache::Value> FetchChunkHead(int64_t chunk_index) const;
  Result<cache::Value> FetchCompressedChunk(int64_t chunk_index) const;
  Result<cache::Value> DecodeBlock(int64_t chunk_index, int64_t block_index) const;
  Result<cache::Value> GetBlock(int64_t chunk_index, int64_t block_index) const;
  Status ReadBox(const geometry::Box& box, int64_t item_begin, int64_t item_end,
                 uint8_t* out) const;
  Status ReadBoxBytes(const geometry::Box& box, int64_t offset, size_t length, uint8_t* out) const;
  std::string RenderMeta() const;

  struct Source;

  std::string source_path_;
  StoreContext* context_;
  uint64_t id_;
  std::string error_;
  std::string format_name_;
  std::string meta_json_;
  std::string npy_header_;
  std::optional<geometry::ArrayLayout> layout_;
  std::unique_ptr<Source> source_;
};

// The NumPy .npy header (format 1.0, or 2.0 when too long) for a C-order array.
std::string MakeNpyHeader(const std::string& descr, const std::vector<int64_t>& shape);

}  // namespace b2ndfs::store
