// format/frame: decoding of Blosc2 frame metadata (README_CFRAME_FORMAT.rst,
// README_SFRAME_FORMAT.rst) from untrusted bytes, without c-blosc2.
//
// The frame header and trailer are msgpack; they are decoded with msgpack-cxx
// under size limits, and every field is validated before use. The chunk index
// ("chunk offsets") is itself a Blosc2 chunk: this module only says where it
// is; the store decompresses it (codec) and hands the int64 values back to
// DecodeChunkOffset() / LocateChunk().
//
// Layout facts (checked against c-blosc2 2.17 and 3.3 blosc/frame.c and frames
// they write, see tests/unit/frame_test.cc):
//   * header: a 14-entry msgpack array whose fixed part has fixed offsets
//     (header_size int32 at byte 11, frame_size uint64 at 16, flags at 25..28,
//     nbytes 30, cbytes 39, typesize 48, blocksize 53, chunksize 58, filters
//     fixext16 at 69 (ext type = number of filters), udcodec at 77,
//     compcode_meta 78, filters_meta 79..84); then the metalayers:
//     [uint16, map16 {name: int32 offset}, array16 [bin32...]], where each
//     offset counts from the frame start and points at the bin32 marker.
//   * general_flags (byte 25): bits 0..3 the format version (2 since
//     c-blosc2 2.0; 3 since 3.3, written only when bit 6 or 7 is set), bit 6
//     variable-size chunks (chunksize 0), bit 7 every chunk has variable-length
//     blocks (chunk format 6; blocksize 0; a frame never mixes the two kinds).
//   * chunks section: starts right after the header; a chunk index value v >= 0
//     means the chunk lies at byte header_size + v of the frame (contiguous), or
//     in file "%08X.chunk" of the directory (sparse, v = file number).
//   * chunk index: a Blosc2 chunk at header_size + cbytes (contiguous) or right
//     after the header (sparse: chunks.b2frame holds no data chunks). Absent
//     when nbytes == 0. nchunks = its uncompressed size / 8.
//   * trailer: the last trailer_len bytes of the frame; trailer_len is a
//     big-endian uint32 at frame_size - 22 (after a 0xce marker at - 23). It is
//     [version, [uint16, map16 {name: int32 offset}, array16 [bin32...]],
//     uint32 trailer_len, fixext16 fingerprint]; vlmetalayer offsets count from
//     the trailer start. Each vlmetalayer content is itself a Blosc2-compressed
//     chunk (blosc2_vlmeta_add compresses it).
//   * codec_flags low nibble is c-blosc2's compcode (0 blosclz, 1 lz4,
//     2 lz4hc, 4 zlib, 5 zstd; 6: the codec id is in `udcodec`), not the
//     *_FORMAT numbering of the format document, so lz4 and lz4hc differ.
// Errors: Status with EIO (ENOMEM when memory runs out) and a message naming
// the bad field.
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::format {

constexpr int64_t kFrameHeaderMinSize = 87;   // FRAME_HEADER_MINLEN
constexpr int64_t kFrameTrailerMinSize = 25;  // FRAME_TRAILER_MINLEN
// Bounds this reader puts on the msgpack parts it loads into memory (real
// frames have headers and trailers of a few hundred bytes).
constexpr int64_t kMaxFrameHeaderSize = int64_t{64} << 20;
constexpr int64_t kMaxFrameTrailerSize = int64_t{64} << 20;
constexpr int kMaxMetalayers = 16;           // BLOSC2_MAX_METALAYERS
constexpr int kMaxVlMetalayers = 8 * 1024;   // BLOSC2_MAX_VLMETALAYERS
constexpr int kMaxMetalayerNameLength = 31;  // BLOSC2_METALAYER_NAME_MAXLEN
// Size of a Blosc2 chunk header (BLOSC_EXTENDED_HEADER_LENGTH).
constexpr int64_t kBlosc2ChunkHeaderSize = 32;
// Newest frame format version read (BLOSC2_VERSION_FRAME_FORMAT in c-blosc2 3.3).
constexpr int kMaxFrameFormatVersion = 3;
constexpr uint8_t kFrameFlagVariableChunks = 0x40;  // general_flags bit 6
constexpr uint8_t kFrameFlagVlBlocks = 0x80;        // general_flags bit 7

struct NamedBytes {
  std::string name;
  std::vector<uint8_t> content;
};

struct FrameInfo {
  int64_t header_size = 0;
  int64_t frame_size = 0;  // as the header claims; checked against the file
  int format_version = 0;  // general_flags bits 0..3 (at most 3 is accepted)
  // The chunks may differ in size: the header's chunksize is 0 (c-blosc2 decides
  // on that field; general_flags bit 6 must agree with it from version 3 on).
  bool variable_chunks = false;
  // general_flags bit 7: every chunk has variable-length blocks (header
  // blocksize 0; each chunk's header blocksize field counts its blocks).
  bool vl_blocks = false;
  bool sparse = false;  // frame_type == 1
  int codec = 0;        // codec_flags bits 0..3: c-blosc2 compcode (see above)
  int clevel = 0;       // codec_flags bits 4..7
  int splitmode = 0;    // other_flags bits 0..1 (c-blosc2's splitmode - 1)
  int64_t nbytes = 0;   // uncompressed size of the data
  int64_t cbytes = 0;   // compressed size of the data chunks
  int32_t typesize = 0;
  int32_t blocksize = 0;
  int32_t chunksize = 0;  // 0 when chunks are of variable size or there are none
  bool has_vlmetalayers = false;
  std::array<uint8_t, 6> filters{};
  std::array<uint8_t, 6> filters_meta{};
  uint8_t udcodec = 0;
  uint8_t compcode_meta = 0;
  std::vector<NamedBytes> metalayers;  // from the header
  // From the trailer, content as stored: each one a Blosc2-compressed chunk.
  std::vector<NamedBytes> vlmetalayers;
  // Where the chunk index (a Blosc2 chunk of int64 offsets) lies in the frame
  // file, and how long it is (from that chunk's own header). Both 0 when the
  // frame has no data (nbytes == 0).
  int64_t offsets_chunk_position = 0;
  int64_t offsets_chunk_size = 0;
  int64_t nchunks = 0;  // decompressed size of the chunk index / 8
  // The trailer: the last trailer_size bytes of the frame.
  int64_t trailer_offset = 0;
  int64_t trailer_size = 0;
};

// Reads `length` bytes at `offset` of the frame file (chunks.b2frame for a
// sparse frame). Must fail (not short-read) past the end.
using ReadAt = std::function<Result<std::vector<uint8_t>>(int64_t offset, int64_t length)>;

// Decodes header, metalayers, trailer (vlmetalayers) and locates the chunk
// index. `file_size` is the size of the frame file; the frame must fit in it.
// Reads at most header + trailer + 16 bytes of the chunk index's header.
Result<FrameInfo> ParseFrame(const ReadAt& read, int64_t file_size);

// True if `prefix` (the first bytes of a file) starts like a Blosc2 frame
// (needs at least 10 bytes: a fixarray marker, then the str "b2frame\0").
bool LooksLikeFrame(std::span<const uint8_t> prefix);

enum class ChunkKind { kStored, kZeros, kNaN, kUninitialized };

struct ChunkLocation {
  ChunkKind kind = ChunkKind::kStored;
  // kStored, from DecodeChunkOffset(): the raw index value, i.e. the byte
  // offset counted from the END OF THE HEADER (contiguous: the chunk is at
  // frame byte header_size + offset), or the chunk file number (sparse:
  // "%08X.chunk"). From LocateChunk(): see there.
  int64_t offset = 0;
};

// Interprets one value of the chunk index. Special values have the top bit of
// the most significant byte set, and that byte's low 3 bits give the kind
// (1 zeros, 2 NaN, 4 uninitialized; the other bits and bytes are ignored, as
// c-blosc2 does). Other special kinds are errors. Non-negative values are
// kStored with the raw value as offset.
Result<ChunkLocation> DecodeChunkOffset(int64_t raw);

// DecodeChunkOffset() plus bounds: for a contiguous frame, kStored offsets are
// turned into the absolute byte position of the chunk in the frame file
// (header_size + raw), and must leave room for a 32-byte chunk header inside
// the chunks section [header_size, header_size + cbytes) (the caller still
// checks that the chunk's cbytes ends by header_size + cbytes). For a sparse
// frame the offset stays the chunk file number, which must be < 2^32.
Result<ChunkLocation> LocateChunk(const FrameInfo& frame, int64_t raw);

}  // namespace b2ndfs::format
