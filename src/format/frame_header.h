// format/frame_header (private to format): the fixed-position fields of a
// Blosc2 frame header (c-blosc2 blosc/frame.h), decoded and checked.
//
// c-blosc2 reads the first kFrameHeaderMinSize bytes of a frame at fixed
// offsets, not through a msgpack parser; DecodeFixedHeader checks the msgpack
// marker before each field, so that the fixed-offset view and the msgpack
// view of the header agree, then every field against the others and the
// file's size. The rest of the frame (metalayers, trailer, chunk index) is
// frame.cc's.
// Errors: InvalidData naming the byte or field. Thread-safety: pure.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "b2ndfs/format/frame.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::format::internal {

std::string Hex(uint8_t byte);  // "0x1f"
uint64_t LoadBigEndian(const uint8_t* p, int bytes);

// Fills info's header_size, frame_size, format_version, flags, sparse,
// codec, clevel, splitmode, nbytes, cbytes, typesize, blocksize, chunksize,
// variable_chunks, has_vlmetalayers, filters, udcodec and compcode_meta from
// `fixed`, the frame's first kFrameHeaderMinSize bytes.
Status DecodeFixedHeader(std::span<const uint8_t> fixed, int64_t file_size, FrameInfo& info);

}  // namespace b2ndfs::format::internal
