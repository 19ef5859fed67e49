// The fixed-position fields of a frame header (frame_header.h).
#include "frame_header.h"

#include <cstdio>
#include <utility>

namespace b2ndfs::format::internal {
namespace {

// Fixed byte positions of the header fields (c-blosc2 blosc/frame.h). c-blosc2
// reads the header at these offsets, not through a msgpack parser, so we check
// the msgpack markers at each of them: when they are right, the fixed-offset
// view and the msgpack view of the header agree.
constexpr int64_t kPosHeaderSize = 11;  // int32 (marker 0xd2 at 10)
constexpr int64_t kPosFrameSize = 16;   // uint64 (marker 0xcf at 15)
constexpr int64_t kPosFlags = 25;       // general_flags (str of 4, marker 0xa4 at 24)
constexpr int64_t kPosFrameType = 26;
constexpr int64_t kPosCodecs = 27;
constexpr int64_t kPosOtherFlags = 28;
constexpr int64_t kPosNbytes = 30;       // int64
constexpr int64_t kPosCbytes = 39;       // int64
constexpr int64_t kPosTypesize = 48;     // int32 (marker 0xd2 at 47)
constexpr int64_t kPosBlocksize = 53;    // int32 (marker 0xd2 at 52)
constexpr int64_t kPosChunksize = 58;    // int32 (marker 0xd2 at 57)
constexpr int64_t kPosHasVlmeta = 68;    // bool
constexpr int64_t kPosFilterCount = 70;  // fixext16 type byte (marker 0xd8 at 69)
constexpr int64_t kPosFilters = 71;
constexpr int64_t kPosUdcodec = 77;
constexpr int64_t kPosCodecMeta = 78;
constexpr int64_t kPosFiltersMeta = 79;
constexpr int kMaxFilters = 6;  // BLOSC2_MAX_FILTERS
struct Marker {
  int64_t position;
  uint8_t byte;
  const char* field;
};

constexpr Marker kHeaderMarkers[] = {
    {10, 0xd2, "header_size (int32)"},
    {15, 0xcf, "frame_size (uint64)"},
    {24, 0xa4, "flags (str of 4)"},
    {29, 0xd3, "nbytes (int64)"},
    {38, 0xd3, "cbytes (int64)"},
    {47, 0xd2, "typesize (int32)"},
    {52, 0xd2, "blocksize (int32)"},
    {57, 0xd2, "chunksize (int32)"},
    {62, 0xd1, "compression threads (int16)"},
    {65, 0xd1, "decompression threads (int16)"},
    {69, 0xd8, "filter pipeline (fixext16)"},
};

Status BadHeader(std::string message) { return InvalidData(std::move(message)); }

int32_t LoadBigInt32(const uint8_t* p) {
  return static_cast<int32_t>(static_cast<uint32_t>(LoadBigEndian(p, 4)));
}

int64_t LoadBigInt64(const uint8_t* p) { return static_cast<int64_t>(LoadBigEndian(p, 8)); }

// The magic, and the msgpack marker before each field.
Status CheckMarkers(std::span<const uint8_t> fixed) {
  if (!LooksLikeFrame(fixed))
    return BadHeader("not a Blosc2 frame (no \"b2frame\" magic at byte 0)");
  for (const Marker& m : kHeaderMarkers) {
    if (fixed[m.position] != m.byte) {
      return BadHeader("frame header byte " + std::to_string(m.position) + " is " +
                       Hex(fixed[m.position]) + ", expected " + Hex(m.byte) + " before " + m.field);
    }
  }
  if (fixed[kPosHasVlmeta] != 0xc2 && fixed[kPosHasVlmeta] != 0xc3) {
    return BadHeader("frame header byte " + std::to_string(kPosHasVlmeta) + " is " +
                     Hex(fixed[kPosHasVlmeta]) + ", expected a msgpack boolean (has_vlmetalayers)");
  }
  return Status::Ok();
}

// header_size and frame_size, against each other and the file.
Status DecodeSizes(std::span<const uint8_t> fixed, int64_t file_size, FrameInfo& info) {
  const int64_t header_size = LoadBigInt32(fixed.data() + kPosHeaderSize);
  const uint64_t frame_size_u = LoadBigEndian(fixed.data() + kPosFrameSize, 8);
  if (header_size < kFrameHeaderMinSize) {
    return BadHeader("frame header says header_size " + std::to_string(header_size) +
                     ", less than the minimal " + std::to_string(kFrameHeaderMinSize));
  }
  if (header_size > file_size) {
    return BadHeader("frame header says header_size " + std::to_string(header_size) +
                     " but the file has " + std::to_string(file_size) + " bytes");
  }
  if (header_size > kMaxFrameHeaderSize) {
    return BadHeader("frame header says header_size " + std::to_string(header_size) +
                     ", more than this reader's limit of " + std::to_string(kMaxFrameHeaderSize));
  }
  if (frame_size_u > static_cast<uint64_t>(file_size)) {
    return BadHeader("frame header says frame_size " + std::to_string(frame_size_u) +
                     " but the file has " + std::to_string(file_size) + " bytes");
  }
  const int64_t frame_size = static_cast<int64_t>(frame_size_u);
  if (frame_size < header_size + kFrameTrailerMinSize) {
    return BadHeader("frame header says frame_size " + std::to_string(frame_size) +
                     ", too small for its " + std::to_string(header_size) +
                     "-byte header and a trailer of at least " +
                     std::to_string(kFrameTrailerMinSize));
  }
  info.header_size = header_size;
  info.frame_size = frame_size;
  return Status::Ok();
}

// general_flags, frame_type and the codec byte; returns whether
// general_flags say variable-size chunks.
Result<bool> DecodeFlags(std::span<const uint8_t> fixed, FrameInfo& info) {
  const uint8_t general_flags = fixed[kPosFlags];
  info.format_version = general_flags & 0x0f;
  if (info.format_version > kMaxFrameFormatVersion) {
    return BadHeader("frame format version " + std::to_string(info.format_version) +
                     " is newer than this reader understands (at most " +
                     std::to_string(kMaxFrameFormatVersion) + ")");
  }
  const bool variable_flag = (general_flags & kFrameFlagVariableChunks) != 0;
  info.vl_blocks = (general_flags & kFrameFlagVlBlocks) != 0;
  // Bit 7 was reserved before version 3; bit 6 was documented since 2.0 and is
  // only checked against chunksize (DecodeCounts).
  if (info.vl_blocks && info.format_version < 3) {
    return BadHeader("frame format version " + std::to_string(info.format_version) +
                     " sets general_flags bit 7 (variable-length blocks), which needs version 3");
  }
  // general_flags bits 4..5 say 64-bit offsets (the only kind c-blosc2 writes
  // or reads; it never checks them, neither do we).
  const uint8_t frame_type = fixed[kPosFrameType];
  if (frame_type != 0 && frame_type != 1) {
    return BadHeader("frame_type is " + std::to_string(frame_type) +
                     ", neither 0 (contiguous) nor 1 (sparse directory)");
  }
  info.sparse = frame_type == 1;
  info.codec = fixed[kPosCodecs] & 0x0f;
  info.clevel = fixed[kPosCodecs] >> 4;
  info.splitmode = fixed[kPosOtherFlags] & 0x03;
  return variable_flag;
}

// nbytes, cbytes, typesize, blocksize and chunksize, and their agreement
// with the flags.
Status DecodeCounts(std::span<const uint8_t> fixed, bool variable_flag, FrameInfo& info) {
  info.nbytes = LoadBigInt64(fixed.data() + kPosNbytes);
  info.cbytes = LoadBigInt64(fixed.data() + kPosCbytes);
  info.typesize = LoadBigInt32(fixed.data() + kPosTypesize);
  info.blocksize = LoadBigInt32(fixed.data() + kPosBlocksize);
  const int32_t chunksize = LoadBigInt32(fixed.data() + kPosChunksize);
  info.has_vlmetalayers = fixed[kPosHasVlmeta] == 0xc3;
  if (info.nbytes < 0) return BadHeader("frame header says nbytes " + std::to_string(info.nbytes));
  if (info.cbytes < 0) return BadHeader("frame header says cbytes " + std::to_string(info.cbytes));
  if (info.typesize <= 0) {
    return BadHeader("frame header says typesize " + std::to_string(info.typesize) +
                     " (must be > 0)");
  }
  if (info.blocksize < 0) {
    return BadHeader("frame header says blocksize " + std::to_string(info.blocksize));
  }
  if (chunksize < 0) {
    // c-blosc2 writes chunksize -1 into frames made from a super-chunk that
    // has no chunk yet, and ignores it while nbytes is 0.
    if (info.nbytes > 0) {
      return BadHeader("frame header says chunksize " + std::to_string(chunksize) + " for " +
                       std::to_string(info.nbytes) + " bytes of data");
    }
    info.chunksize = 0;
  } else {
    info.chunksize = chunksize;
  }
  info.variable_chunks = info.nbytes > 0 && info.chunksize == 0;
  // c-blosc2 3.3 sets bit 6 exactly when it writes chunksize 0 (also for an
  // empty array whose chunk shape has a 0); older writers may leave it clear.
  if (variable_flag && info.chunksize != 0) {
    return BadHeader("frame general_flags say variable-size chunks but the header's chunksize is " +
                     std::to_string(info.chunksize));
  }
  if (info.format_version >= 3 && info.variable_chunks && !variable_flag) {
    return BadHeader("frame format version " + std::to_string(info.format_version) +
                     " has chunksize 0 but general_flags bit 6 (variable-size chunks) is clear");
  }
  // A VL-block frame has no common block size: its chunks' headers count blocks.
  if (info.vl_blocks && info.blocksize != 0) {
    return BadHeader(
        "frame general_flags say variable-length blocks but the header's blocksize is " +
        std::to_string(info.blocksize));
  }
  return Status::Ok();
}

Status DecodeFilters(std::span<const uint8_t> fixed, FrameInfo& info) {
  const int nfilters = fixed[kPosFilterCount];
  if (nfilters > kMaxFilters) {
    return BadHeader("frame header lists " + std::to_string(nfilters) + " filters, more than " +
                     std::to_string(kMaxFilters));
  }
  for (int i = 0; i < nfilters; ++i) {
    info.filters[i] = fixed[kPosFilters + i];
    info.filters_meta[i] = fixed[kPosFiltersMeta + i];
  }
  info.udcodec = fixed[kPosUdcodec];
  info.compcode_meta = fixed[kPosCodecMeta];
  return Status::Ok();
}

}  // namespace

std::string Hex(uint8_t byte) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", byte);
  return buf;
}

uint64_t LoadBigEndian(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

Status DecodeFixedHeader(std::span<const uint8_t> fixed, int64_t file_size, FrameInfo& info) {
  B2NDFS_RETURN_IF_ERROR(CheckMarkers(fixed));
  B2NDFS_RETURN_IF_ERROR(DecodeSizes(fixed, file_size, info));
  B2NDFS_ASSIGN_OR_RETURN(const bool variable_flag, DecodeFlags(fixed, info));
  B2NDFS_RETURN_IF_ERROR(DecodeCounts(fixed, variable_flag, info));
  return DecodeFilters(fixed, info);
}

}  // namespace b2ndfs::format::internal
