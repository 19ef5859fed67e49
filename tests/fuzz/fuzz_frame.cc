// fuzz_frame: format::ParseFrame over the input as a whole frame file image,
// then the chunk index interpretation (DecodeChunkOffset, LocateChunk) of
// 8-byte words taken from the input, and the shape metalayers the frame
// carries.
//
// Checks what frame.h promises of a decoded frame: its parts lie inside the
// file, counts are within the documented limits, and a located chunk leaves
// room for a chunk header inside the chunks section.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/ndmeta.h"
#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/util/status.h"
#include "fuzz_common.h"

namespace b2ndfs::fuzz {
namespace {

void CheckFrame(const format::FrameInfo& f, int64_t file_size) {
  FUZZ_CHECK(f.header_size >= format::kFrameHeaderMinSize && f.header_size <= file_size,
             "header_size " + std::to_string(f.header_size));
  FUZZ_CHECK(f.frame_size >= f.header_size && f.frame_size <= file_size,
             "frame_size " + std::to_string(f.frame_size));
  FUZZ_CHECK(f.format_version >= 0 && f.format_version <= format::kMaxFrameFormatVersion,
             "format_version");
  FUZZ_CHECK(!f.vl_blocks || (f.format_version >= 3 && f.blocksize == 0), "vl_blocks");
  FUZZ_CHECK(
      f.nbytes >= 0 && f.cbytes >= 0 && f.typesize >= 0 && f.blocksize >= 0 && f.chunksize >= 0,
      "negative size field");
  FUZZ_CHECK(f.trailer_size >= 0 && f.trailer_offset >= 0 &&
                 f.trailer_offset + f.trailer_size <= file_size,
             "trailer outside the file");
  FUZZ_CHECK(f.metalayers.size() <= static_cast<size_t>(format::kMaxMetalayers),
             "too many metalayers");
  FUZZ_CHECK(f.vlmetalayers.size() <= static_cast<size_t>(format::kMaxVlMetalayers),
             "too many vlmetalayers");
  for (const auto* list : {&f.metalayers, &f.vlmetalayers}) {
    for (const auto& m : *list) {
      FUZZ_CHECK(m.name.size() <= static_cast<size_t>(format::kMaxMetalayerNameLength),
                 "metalayer name too long");
      FUZZ_CHECK(static_cast<int64_t>(m.content.size()) <= file_size,
                 "metalayer content larger than the file");
    }
  }
  FUZZ_CHECK(f.offsets_chunk_position >= 0 && f.offsets_chunk_size >= 0 && f.nchunks >= 0,
             "negative chunk index field");
  if (f.offsets_chunk_size > 0) {
    FUZZ_CHECK(f.offsets_chunk_position + f.offsets_chunk_size <= file_size,
               "chunk index outside the file");
  }
  if (!f.sparse) {
    FUZZ_CHECK(f.header_size + f.cbytes <= file_size, "chunks section outside the file");
  }
}

int64_t Word(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace
}  // namespace b2ndfs::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace b2ndfs;        // NOLINT
  using namespace b2ndfs::fuzz;  // NOLINT
  const auto file_size = static_cast<int64_t>(size);
  format::ReadAt read = [data, file_size](int64_t offset,
                                          int64_t length) -> Result<std::vector<uint8_t>> {
    if (offset < 0 || length < 0 || offset > file_size || length > file_size - offset) {
      return Status(EIO, "read past the end of the file");
    }
    return std::vector<uint8_t>(data + offset, data + offset + length);
  };

  (void)format::LooksLikeFrame(std::span<const uint8_t>(data, std::min<size_t>(size, 16)));
  auto frame = format::ParseFrame(read, file_size);

  // Chunk index values: the last words of the input (where a chunk index
  // would be), and a few special ones.
  std::vector<int64_t> raws = {0, -1, INT64_MIN, INT64_MAX, int64_t{1} << 32};
  for (size_t i = 0; i < 32 && (i + 1) * 8 <= size; ++i) {
    raws.push_back(Word(data + size - (i + 1) * 8));
  }
  for (int64_t raw : raws) {
    auto location = format::DecodeChunkOffset(raw);
    if (location.ok() && location->kind == format::ChunkKind::kStored) {
      FUZZ_CHECK(location->offset == raw && raw >= 0, "stored chunk offset changed");
    }
    FUZZ_CHECK(location.ok() || raw < 0, "non-negative offset rejected");
    (void)source::SparseChunkFileName(raw);
  }

  if (!frame.ok()) {
    const int e = frame.status().error_number();
    FUZZ_CHECK(e == EIO || e == ENOMEM, "ParseFrame error " + std::to_string(e));
    return 0;
  }
  CheckFrame(*frame, file_size);
  for (int64_t raw : raws) {
    auto location = format::LocateChunk(*frame, raw);
    if (!location.ok() || location->kind != format::ChunkKind::kStored) continue;
    if (frame->sparse) {
      FUZZ_CHECK(location->offset >= 0 && location->offset <= int64_t{0xffffffff},
                 "sparse chunk number out of range");
      FUZZ_CHECK(source::SparseChunkFileName(location->offset).size() == 14,
                 "sparse chunk file name");
    } else {
      FUZZ_CHECK(location->offset >= frame->header_size &&
                     location->offset + format::kBlosc2ChunkHeaderSize <=
                         frame->header_size + frame->cbytes,
                 "located chunk header outside the chunks section");
    }
  }
  for (const auto& m : frame->metalayers) {
    if (m.name == "b2nd") (void)format::DecodeB2ndMetalayer(m.content);
    if (m.name == "caterva") (void)format::DecodeCatervaMetalayer(m.content);
  }
  return 0;
}
