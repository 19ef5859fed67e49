// format/frame: decoding of Blosc2 frame metadata (README_CFRAME_FORMAT.rst,
// README_SFRAME_FORMAT.rst) from untrusted bytes, without c-blosc2.
//
// The frame header and trailer are msgpack; they are decoded with msgpack-cxx
// under size limits, and every field is validated before use. The chunk index
// ("chunk offsets") is itself a Blosc2 chunk: this module only says where it
// is; the store decompresses it (codec) and hands the int64 values back to
// DecodeChunkOffset().
// Errors: Status with EIO and a message naming the bad field.
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

struct NamedBytes {
  std::string name;
  std::vector<uint8_t> content;
};

struct FrameInfo {
  int64_t header_size = 0;
  int64_t frame_size = 0;      // as the header claims; checked against the file
  int format_version = 0;      // general_flags bits 0..3
  bool variable_chunks = false;  // general_flags bit 6
  bool sparse = false;           // frame_type == 1
  int codec = 0;                 // codec_flags bits 0..3 (BLOSC_BLOSCLZ = 0 ...)
  int clevel = 0;                // codec_flags bits 4..7
  int splitmode = 0;             // other_flags bits 0..1
  int64_t nbytes = 0;            // uncompressed size of the data
  int64_t cbytes = 0;            // compressed size of the data chunks
  int32_t typesize = 0;
  int32_t blocksize = 0;
  int32_t chunksize = 0;         // 0 when chunks are of variable size
  bool has_vlmetalayers = false;
  std::array<uint8_t, 6> filters{};
  std::array<uint8_t, 6> filters_meta{};
  uint8_t udcodec = 0;
  uint8_t compcode_meta = 0;
  std::vector<NamedBytes> metalayers;    // from the header
  std::vector<NamedBytes> vlmetalayers;  // from the trailer (content as stored)
  // Where the chunk index (a Blosc2 chunk of int64 offsets) lies in the frame
  // file, and how long it is (from that chunk's own header).
  int64_t offsets_chunk_position = 0;
  int64_t offsets_chunk_size = 0;
  int64_t nchunks = 0;  // decompressed size of the chunk index / 8
};

// Reads `length` bytes at `offset` of the frame file (chunks.b2frame for a
// sparse frame). Must fail (not short-read) past the end.
using ReadAt = std::function<Result<std::vector<uint8_t>>(int64_t offset, int64_t length)>;

// Decodes header, metalayers, trailer (vlmetalayers) and locates the chunk
// index. `file_size` is the size of the frame file; the frame must fit in it.
Result<FrameInfo> ParseFrame(const ReadAt& read, int64_t file_size);

// True if `prefix` (the first bytes of a file) starts like a Blosc2 frame.
bool LooksLikeFrame(std::span<const uint8_t> prefix);

enum class ChunkKind { kStored, kZeros, kNaN, kUninitialized };

struct ChunkLocation {
  ChunkKind kind = ChunkKind::kStored;
  // kStored: byte offset from the frame start (contiguous) or chunk file
  // number (sparse: "%08X.chunk").
  int64_t offset = 0;
};

// Interprets one value of the chunk index (special values: top bit of the
// most significant byte set, low 3 bits the kind). Unknown special kinds and
// negative regular offsets are errors.
Result<ChunkLocation> DecodeChunkOffset(int64_t raw);

// Name of a sparse frame's chunk file for chunk file number n ("0000000A.chunk").
std::string SparseChunkFileName(int64_t n);

}  // namespace b2ndfs::format
