// stores/embed_frame: one python-blosc2 EmbedStore frame (a `.b2e` file, or
// a store's `embed.b2e`): its tag, its key map (format/embed_map.h), and
// reads of its decompressed stream, in which every embedded leaf is a whole
// serialized frame (embed_store.py, EmbedStore.__setitem__).
//
// The frame is a super-chunk of 1-byte items whose chunks all hold
// `chunksize` bytes but the last (EmbedStore.__init__ makes it with
// blosc2.SChunk(chunksize=...), typesize 1). Open() reads and checks the
// header, trailer, chunk index and "estore_metadata"; ReadStream()
// decompresses the part of the stream a byte range covers, through c-blosc2
// checked by the codec module (a chunk naming a codec or filter that is not
// built in is an error, never a plugin load), in units of at most
// kEmbedUnitBytes of one chunk (only the blocks a unit covers are read and
// decoded). Units live in the mount's block cache (block_cache.h), keyed by
// the frame's identity (its store's path and signature: cache_id.h's
// NamedKey) and loaded once however many readers wait, so they count in
// cache_size and a replaced store never serves old ones; without a cache
// (or one too small to keep a unit) each read decodes its units again.
// Errors: Status(EIO) naming what is wrong; a failed read's Status passes on.
// Thread-safety: every const method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/format/embed_map.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::stores {

constexpr int64_t kMaxEmbedChunkSize = int64_t{64} << 20;
constexpr int64_t kEmbedUnitBytes = int64_t{4} << 20;
// Bytes of variable-length metalayers decompressed for meta.json at most.
constexpr int64_t kVlmetaBudget = 4 << 20;

// Reads exactly `length` bytes at `offset` of the frame.
using FrameReadAt = std::function<Result<std::vector<uint8_t>>(int64_t offset, int64_t length)>;

// The frame's variable-length metalayers as a JSON object text ({name:
// value}, values decoded from msgpack where they are, else {"base64": ...});
// names in `skip` left out.
Result<std::string> FrameVlmetaJson(const FrameReadAt& read, int64_t frame_size,
                                    const std::vector<std::string>& skip);

// The frame's variable-length metalayers by name, decompressed (each is a
// Blosc2 chunk in the frame), within kVlmetaBudget bytes in all: those past
// it are left out.
Result<std::vector<std::pair<std::string, std::vector<uint8_t>>>> FrameVlmeta(
    const FrameReadAt& read, int64_t frame_size);

// Where a frame keeps its decompressed units: `cache` (null: nowhere), under
// keys named by `identity`, which must name the frame's bytes exactly (the
// store's path, its version's signature, and where the frame lies in it).
struct EmbedUnitCache {
  cache::BlockCache* cache = nullptr;
  std::string identity;
};

// Decompressions of embed frame units, process-wide (for stats and tests).
struct EmbedStats {
  std::atomic<uint64_t> units_decompressed{0};
  std::atomic<uint64_t> bytes_decompressed{0};
};
EmbedStats& GlobalEmbedStats();

class EmbedFrame {
 public:
  static Result<std::shared_ptr<const EmbedFrame>> Open(const FrameReadAt& read, int64_t frame_size,
                                                        EmbedUnitCache units = {});
  ~EmbedFrame();
  EmbedFrame(const EmbedFrame&) = delete;
  EmbedFrame& operator=(const EmbedFrame&) = delete;

  // "b2embed", "b2dict" or "b2tree": the metalayer python-blosc2 tags it
  // with (embed_store.py, dict_store.py, tree_store.py); empty for a frame
  // without one that still holds "estore_metadata".
  const std::string& tag() const { return tag_; }
  const format::EmbedMap& map() const { return map_; }
  // The other vlmetalayers, as FrameVlmetaJson renders them.
  const std::string& vlmeta_json() const { return vlmeta_json_; }
  int64_t stream_size() const { return stream_size_; }
  int64_t memory_bytes() const;

  // Reads bytes [offset, offset + length) of the decompressed stream, which
  // must lie inside it. `read` reads the frame (the same version Open() read).
  Status ReadStream(const FrameReadAt& read, int64_t offset, size_t length, uint8_t* out) const;

 private:
  EmbedFrame() = default;
  // Unit `unit` of chunk `chunk`: the chunk's decompressed bytes from
  // unit * kEmbedUnitBytes, at most kEmbedUnitBytes of them.
  Result<cache::Value> Unit(const FrameReadAt& read, int64_t chunk, int64_t unit) const;
  Result<cache::Value> DecodeUnit(const FrameReadAt& read, int64_t chunk, int64_t unit) const;

  std::string tag_;
  format::EmbedMap map_;
  std::string vlmeta_json_;
  int64_t stream_size_ = 0;
  int64_t chunksize_ = 0;
  int64_t frame_size_ = 0;
  // Where each chunk lies in the frame; -1: a run of zeros.
  std::vector<int64_t> chunk_positions_;
  EmbedUnitCache units_;
};

}  // namespace b2ndfs::stores
