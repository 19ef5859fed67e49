#include "b2ndfs/format/frame.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <string_view>

#include "b2ndfs/util/checked_math.h"
#include "frame_header.h"
#include "msgpack_util.h"

namespace b2ndfs::format {
namespace {

using internal::Hex;
using internal::LoadBigEndian;

// The uint32 trailer length sits 22 bytes before the end of the frame.
constexpr int64_t kTrailerLenFromEnd = 22;
constexpr int64_t kChunkMinHeaderSize = 16;  // BLOSC_MIN_HEADER_LENGTH

Status Bad(std::string message) { return InvalidData(std::move(message)); }

int32_t LoadLittleInt32(const uint8_t* p) {
  uint32_t v = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
               static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
  return static_cast<int32_t>(v);
}

// Reads through the caller's function, insisting on the exact length.
Result<std::vector<uint8_t>> ReadExactly(const ReadAt& read, int64_t offset, int64_t length,
                                         const std::string& what) {
  auto bytes = read(offset, length);
  if (!bytes.ok()) return bytes.status().WithContext("reading the " + what);
  if (static_cast<int64_t>(bytes->size()) != length) {
    return Bad("reading the " + what + ": got " + std::to_string(bytes->size()) +
               " bytes instead of " + std::to_string(length));
  }
  return bytes;
}

// The metalayer section of the header and of the trailer share one layout:
// [uint16 index size, map16 {name: int32 offset}, array16 [bin32 ...]]. As in
// c-blosc2, each content is found through its offset (counted from the start
// of `container`, the whole header or the whole trailer) and must be a bin32
// lying inside `container`.
Result<std::vector<NamedBytes>> DecodeMetalayerSection(const msgpack::object& section,
                                                       std::span<const uint8_t> container,
                                                       const std::string& what, int max_entries) {
  if (section.type != msgpack::type::ARRAY || section.via.array.size != 3) {
    return Bad(what + " should be a 3-entry msgpack array (index size, map, contents) but is " +
               internal::TypeName(section) +
               (section.type == msgpack::type::ARRAY
                    ? " of " + std::to_string(section.via.array.size) + " entries"
                    : ""));
  }
  const msgpack::object& map = section.via.array.ptr[1];
  if (map.type != msgpack::type::MAP) {
    return Bad(what + " index should be a map but is " + internal::TypeName(map));
  }
  if (map.via.map.size > static_cast<uint32_t>(max_entries)) {
    return Bad(what + " lists " + std::to_string(map.via.map.size) + " entries, more than " +
               std::to_string(max_entries));
  }
  std::vector<NamedBytes> layers;
  const int64_t size = static_cast<int64_t>(container.size());
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object_kv& kv = map.via.map.ptr[i];
    if (kv.key.type != msgpack::type::STR) {
      return Bad(what + " entry " + std::to_string(i) + " has " + internal::TypeName(kv.key) +
                 " as name instead of a string");
    }
    std::string name(kv.key.via.str.ptr, kv.key.via.str.size);
    if (name.size() > static_cast<size_t>(kMaxMetalayerNameLength)) {
      return Bad(what + " entry " + std::to_string(i) + " has a " + std::to_string(name.size()) +
                 "-byte name, longer than " + std::to_string(kMaxMetalayerNameLength));
    }
    const std::string label = what + " '" + name + "'";
    std::optional<int64_t> offset = internal::AsInt64(kv.val);
    if (!offset) {
      return Bad(label + " offset should be an integer but is " + internal::TypeName(kv.val));
    }
    if (*offset < 0 || *offset > size - 5) {
      return Bad(label + " offset " + std::to_string(*offset) + " lies outside the " +
                 std::to_string(size) + "-byte section");
    }
    const uint8_t* p = container.data() + *offset;
    if (p[0] != 0xc6) {
      return Bad(label + " offset " + std::to_string(*offset) + " points at " + Hex(p[0]) +
                 " instead of a bin32 (0xc6)");
    }
    const int64_t length = static_cast<int64_t>(LoadBigEndian(p + 1, 4));
    if (length > size - 5 - *offset) {
      return Bad(label + " content of " + std::to_string(length) + " bytes at offset " +
                 std::to_string(*offset) + " passes the end of the " + std::to_string(size) +
                 "-byte section");
    }
    layers.push_back({std::move(name), std::vector<uint8_t>(p + 5, p + 5 + length)});
  }
  return layers;
}

// "WHAT should be a msgpack array of ENTRIES but is TYPE[ of N entries]".
Status NotAnArrayOf(const std::string& what, const std::string& entries,
                    const msgpack::object& top) {
  std::string is = internal::TypeName(top);
  if (top.type == msgpack::type::ARRAY) {
    is += " of " + std::to_string(top.via.array.size) + " entries";
  }
  return Bad(what + " should be a msgpack array of " + entries + " but is " + is);
}

// The header's metalayers (the msgpack header's 14th entry).
Status ReadHeaderMetalayers(const ReadAt& read, FrameInfo& info) {
  // The whole header, as msgpack, for the metalayers.
  B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> header,
                          ReadExactly(read, 0, info.header_size, "frame header"));
  {
    // Depth 3: header array, metalayer array, map / content array.
    B2NDFS_ASSIGN_OR_RETURN(internal::Unpacked unpacked,
                            internal::UnpackBounded(header, 0, 3, "frame header"));
    // A header longer than its msgpack object is tolerated (the fields that
    // matter are addressed by offsets, as c-blosc2 does).
    const msgpack::object& top = unpacked.get();
    if (top.type != msgpack::type::ARRAY || top.via.array.size < 14) {
      return NotAnArrayOf("frame header", "14 entries", top);
    }
    B2NDFS_ASSIGN_OR_RETURN(info.metalayers,
                            DecodeMetalayerSection(top.via.array.ptr[13], header,
                                                   "frame header metalayer", kMaxMetalayers));
  }
  return Status::Ok();
}

// The trailer: its length, stored near the end of the frame, and its
// vlmetalayers.
Status ReadTrailer(const ReadAt& read, FrameInfo& info) {
  const int64_t header_size = info.header_size;
  const int64_t frame_size = info.frame_size;
  B2NDFS_ASSIGN_OR_RETURN(
      std::vector<uint8_t> tail,
      ReadExactly(read, frame_size - kFrameTrailerMinSize, kFrameTrailerMinSize, "frame end"));
  const size_t len_pos = static_cast<size_t>(kFrameTrailerMinSize - kTrailerLenFromEnd);
  if (tail[len_pos - 1] != 0xce) {
    return Bad("frame trailer: byte " + std::to_string(frame_size - kTrailerLenFromEnd - 1) +
               " is " + Hex(tail[len_pos - 1]) +
               ", expected 0xce before the trailer length (is the file truncated?)");
  }
  const int64_t trailer_size = static_cast<int64_t>(LoadBigEndian(tail.data() + len_pos, 4));
  if (trailer_size < kFrameTrailerMinSize || trailer_size > frame_size - header_size) {
    return Bad("frame trailer says trailer_len " + std::to_string(trailer_size) +
               ", but between the " + std::to_string(header_size) +
               "-byte header and the frame end at " + std::to_string(frame_size) + " fit " +
               std::to_string(frame_size - header_size) + " bytes (and at least " +
               std::to_string(kFrameTrailerMinSize) + " are needed)");
  }
  if (trailer_size > kMaxFrameTrailerSize) {
    return Bad("frame trailer says trailer_len " + std::to_string(trailer_size) +
               ", more than this reader's limit of " + std::to_string(kMaxFrameTrailerSize));
  }
  info.trailer_size = trailer_size;
  info.trailer_offset = frame_size - trailer_size;
  B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> trailer,
                          ReadExactly(read, info.trailer_offset, trailer_size, "frame trailer"));
  {
    B2NDFS_ASSIGN_OR_RETURN(internal::Unpacked unpacked,
                            internal::UnpackBounded(trailer, 0, 3, "frame trailer"));
    const msgpack::object& top = unpacked.get();
    if (top.type != msgpack::type::ARRAY || top.via.array.size != 4) {
      return NotAnArrayOf("frame trailer", "4 entries", top);
    }
    const std::optional<int64_t> stated = internal::AsInt64(top.via.array.ptr[2]);
    if (stated != trailer_size) {
      return Bad("frame trailer's own trailer_len entry does not match the " +
                 std::to_string(trailer_size) + " stated at the frame end");
    }
    if (unpacked.end != trailer.size()) {
      return Bad("frame trailer msgpack ends at byte " + std::to_string(unpacked.end) + " of the " +
                 std::to_string(trailer.size()) + "-byte trailer");
    }
    B2NDFS_ASSIGN_OR_RETURN(info.vlmetalayers,
                            DecodeMetalayerSection(top.via.array.ptr[1], trailer,
                                                   "frame trailer vlmetalayer", kMaxVlMetalayers));
  }
  return Status::Ok();
}

// The chunks section and the chunk index.
Status ReadChunkIndex(const ReadAt& read, FrameInfo& info) {
  if (!info.sparse) {
    std::optional<int64_t> data_end = CheckedAdd(info.header_size, info.cbytes);
    if (!data_end || *data_end > info.trailer_offset) {
      return Bad("frame header says cbytes " + std::to_string(info.cbytes) + ", but only " +
                 std::to_string(info.trailer_offset - info.header_size) +
                 " bytes lie between the header and the trailer");
    }
  }
  if (info.nbytes == 0) {
    // c-blosc2 writes no chunk index for a frame without data and puts the
    // trailer right after the header.
    info.nchunks = 0;
    return Status::Ok();
  }
  const int64_t position = info.sparse ? info.header_size : info.header_size + info.cbytes;
  if (position + kChunkMinHeaderSize > info.trailer_offset) {
    return Bad("no room for the chunk index between byte " + std::to_string(position) +
               " and the trailer at " + std::to_string(info.trailer_offset) + " (nbytes is " +
               std::to_string(info.nbytes) + ")");
  }
  B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> chunk_header,
                          ReadExactly(read, position, kChunkMinHeaderSize, "chunk index header"));
  // Blosc2 chunk header: nbytes at 4, blocksize at 8, cbytes at 12 (LE int32).
  const int32_t index_nbytes = LoadLittleInt32(chunk_header.data() + 4);
  const int32_t index_cbytes = LoadLittleInt32(chunk_header.data() + 12);
  if (index_cbytes < kChunkMinHeaderSize || index_cbytes > info.trailer_offset - position) {
    return Bad("chunk index at byte " + std::to_string(position) + " says its cbytes is " +
               std::to_string(index_cbytes) + ", but " +
               std::to_string(info.trailer_offset - position) + " bytes lie before the trailer");
  }
  if (index_nbytes <= 0 || index_nbytes % 8 != 0) {
    return Bad("chunk index at byte " + std::to_string(position) + " holds " +
               std::to_string(index_nbytes) + " bytes, not a positive multiple of 8 (nbytes is " +
               std::to_string(info.nbytes) + ")");
  }
  info.offsets_chunk_position = position;
  info.offsets_chunk_size = index_cbytes;
  info.nchunks = index_nbytes / 8;
  if (info.chunksize > 0) {
    const int64_t expected = CeilDiv(info.nbytes, info.chunksize);
    if (info.nchunks != expected) {
      return Bad("chunk index has " + std::to_string(info.nchunks) + " entries, but nbytes " +
                 std::to_string(info.nbytes) + " in chunks of " + std::to_string(info.chunksize) +
                 " bytes make " + std::to_string(expected));
    }
  }
  return Status::Ok();
}

Result<FrameInfo> ParseFrameImpl(const ReadAt& read, int64_t file_size) {
  FrameInfo info;
  if (file_size < kFrameHeaderMinSize) {
    return Bad("the file has " + std::to_string(file_size) + " bytes, fewer than the " +
               std::to_string(kFrameHeaderMinSize) + " of a minimal Blosc2 frame header");
  }
  B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> fixed,
                          ReadExactly(read, 0, kFrameHeaderMinSize, "frame header"));
  B2NDFS_RETURN_IF_ERROR(internal::DecodeFixedHeader(fixed, file_size, info));
  B2NDFS_RETURN_IF_ERROR(ReadHeaderMetalayers(read, info));
  B2NDFS_RETURN_IF_ERROR(ReadTrailer(read, info));
  B2NDFS_RETURN_IF_ERROR(ReadChunkIndex(read, info));
  return info;
}

}  // namespace

Result<FrameInfo> ParseFrame(const ReadAt& read, int64_t file_size) {
  try {
    return ParseFrameImpl(read, file_size);
  } catch (const std::bad_alloc&) {
    return Status(ENOMEM, "out of memory reading the frame metadata");
  } catch (const std::exception& e) {
    return Bad(std::string("reading the frame metadata failed: ") + e.what());
  }
}

bool LooksLikeFrame(std::span<const uint8_t> prefix) {
  static constexpr uint8_t kMagic[] = {0xa8, 'b', '2', 'f', 'r', 'a', 'm', 'e', 0};
  if (prefix.size() < 1 + sizeof kMagic) return false;
  if ((prefix[0] & 0xf0) != 0x90) return false;
  return std::memcmp(prefix.data() + 1, kMagic, sizeof kMagic) == 0;
}

Result<ChunkLocation> DecodeChunkOffset(int64_t raw) {
  ChunkLocation location;
  if (raw >= 0) {
    location.kind = ChunkKind::kStored;
    location.offset = raw;
    return location;
  }
  const int special = static_cast<int>((static_cast<uint64_t>(raw) >> 56) & 0x07);
  switch (special) {
    case 1:
      location.kind = ChunkKind::kZeros;
      return location;
    case 2:
      location.kind = ChunkKind::kNaN;
      return location;
    case 4:
      location.kind = ChunkKind::kUninitialized;
      return location;
    default: {
      char buf[24];
      std::snprintf(buf, sizeof buf, "0x%016" PRIx64, static_cast<uint64_t>(raw));
      return Bad(std::string("chunk index value ") + buf + " has unknown special kind " +
                 std::to_string(special));
    }
  }
}

Result<ChunkLocation> LocateChunk(const FrameInfo& frame, int64_t raw) {
  B2NDFS_ASSIGN_OR_RETURN(ChunkLocation location, DecodeChunkOffset(raw));
  if (location.kind != ChunkKind::kStored) return location;
  if (frame.sparse) {
    if (location.offset > int64_t{0xffffffff}) {
      return Bad("chunk file number " + std::to_string(location.offset) +
                 " does not fit the 8 hex digits of a sparse frame's chunk names");
    }
    return location;
  }
  if (location.offset > frame.cbytes - kBlosc2ChunkHeaderSize) {
    return Bad("chunk offset " + std::to_string(location.offset) +
               " leaves no room for a chunk header in the " + std::to_string(frame.cbytes) +
               "-byte chunks section");
  }
  location.offset += frame.header_size;
  return location;
}

}  // namespace b2ndfs::format
