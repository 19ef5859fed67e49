// Unit tests of format/frame: frames written by c-blosc2 (in memory, on disk,
// sparse, b2nd) parsed and compared with what c-blosc2 itself reports (the
// malformed ones: frame_malformed_test.cc).
#include "b2ndfs/format/frame.h"

#include <b2nd.h>
#include <blosc2.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "b2ndfs/format/ndmeta.h"
#include "b2ndfs/source/byte_source.h"
#include "frame_test_util.h"

namespace {

using b2ndfs::format::ChunkKind;
using b2ndfs::format::FrameInfo;
using b2ndfs::format::testing::B2ndArray;
using b2ndfs::format::testing::Bytes;
using b2ndfs::format::testing::Cparams;
using b2ndfs::format::testing::DecompressIndex;
using b2ndfs::format::testing::ErrorOf;
using b2ndfs::format::testing::LittleInt32;
using b2ndfs::format::testing::MakeSchunk;
using b2ndfs::format::testing::Parse;
using b2ndfs::format::testing::ReadFile;
using b2ndfs::format::testing::TempDir;
using b2ndfs::format::testing::ToBuffer;
using b2ndfs::format::testing::ToCframe;

// Checks a parsed frame against the open super-chunk `sc` it came from:
// header fields, metalayers, vlmetalayers, and every chunk, which must be
// found where LocateChunk() says, byte for byte as blosc2_schunk_get_chunk
// returns it. `sparse_dir` is the directory of a sparse frame.
void CheckAgainstBlosc(const Bytes& frame_file, const FrameInfo& info, blosc2_schunk* sc,
                       const std::string& sparse_dir = "") {
  CHECK(info.sparse == !sparse_dir.empty());
  CHECK(info.frame_size == static_cast<int64_t>(frame_file.size()));
  CHECK(info.typesize == sc->typesize);
  CHECK(info.nbytes == sc->nbytes);
  CHECK(info.nchunks == sc->nchunks);
  if (sc->nchunks > 0) CHECK(info.chunksize == sc->chunksize);
  CHECK(info.clevel == sc->clevel);
  CHECK(info.codec ==
        (sc->compcode < BLOSC_LAST_CODEC ? int{sc->compcode} : int{BLOSC_UDCODEC_FORMAT}));
  for (int i = 0; i < 6; ++i) {
    CHECK(info.filters[i] == sc->filters[i]);
    CHECK(info.filters_meta[i] == sc->filters_meta[i]);
  }
  // Metalayers: the same names and bytes as blosc2_meta_get.
  REQUIRE(info.metalayers.size() == static_cast<size_t>(sc->nmetalayers));
  for (const auto& m : info.metalayers) {
    uint8_t* content = nullptr;
    int32_t len = 0;
    REQUIRE(blosc2_meta_get(sc, m.name.c_str(), &content, &len) >= 0);
    CHECK(Bytes(content, content + len) == m.content);
    free(content);
  }
  // Vlmetalayers: stored compressed; decompressed they equal blosc2_vlmeta_get.
  REQUIRE(info.vlmetalayers.size() == static_cast<size_t>(sc->nvlmetalayers));
  CHECK(info.has_vlmetalayers == (sc->nvlmetalayers > 0));
  for (const auto& vl : info.vlmetalayers) {
    uint8_t* content = nullptr;
    int32_t len = 0;
    REQUIRE(blosc2_vlmeta_get(sc, vl.name.c_str(), &content, &len) >= 0);
    Bytes decompressed(static_cast<size_t>(len));
    CHECK(blosc2_decompress(vl.content.data(), static_cast<int32_t>(vl.content.size()),
                            decompressed.data(), len) == len);
    CHECK(decompressed == Bytes(content, content + len));
    free(content);
  }
  // Chunks.
  const std::vector<int64_t> offsets = DecompressIndex(frame_file, info);
  for (int64_t i = 0; i < info.nchunks; ++i) {
    INFO("chunk " << i);
    uint8_t* expected = nullptr;
    bool needs_free = false;
    const int expected_cbytes = blosc2_schunk_get_chunk(sc, i, &expected, &needs_free);
    REQUIRE(expected_cbytes > 0);
    auto location = b2ndfs::format::LocateChunk(info, offsets[static_cast<size_t>(i)]);
    REQUIRE_OK(location);
    if (location->kind != ChunkKind::kStored) {
      // c-blosc2 hands out a special chunk of the same kind.
      const int special = (expected[BLOSC2_CHUNK_BLOSC2_FLAGS] >> 4) & BLOSC2_SPECIAL_MASK;
      const ChunkKind kind = special == BLOSC2_SPECIAL_ZERO     ? ChunkKind::kZeros
                             : special == BLOSC2_SPECIAL_NAN    ? ChunkKind::kNaN
                             : special == BLOSC2_SPECIAL_UNINIT ? ChunkKind::kUninitialized
                                                                : ChunkKind::kStored;
      CHECK(location->kind == kind);
    } else if (info.sparse) {
      const Bytes chunk =
          ReadFile(sparse_dir + "/" + b2ndfs::source::SparseChunkFileName(location->offset));
      CHECK(chunk == Bytes(expected, expected + expected_cbytes));
    } else {
      REQUIRE(location->offset >= info.header_size);
      REQUIRE(location->offset + 32 <= info.header_size + info.cbytes);
      const int32_t cbytes = LittleInt32(frame_file.data() + location->offset + 12);
      REQUIRE(cbytes == expected_cbytes);
      REQUIRE(location->offset + cbytes <= info.header_size + info.cbytes);
      CHECK(Bytes(frame_file.begin() + location->offset,
                  frame_file.begin() + location->offset + cbytes) ==
            Bytes(expected, expected + expected_cbytes));
    }
    if (needs_free) free(expected);
  }
}

TEST_CASE("LooksLikeFrame, DecodeChunkOffset, SparseChunkFileName") {
  const uint8_t good[] = {0x9e, 0xa8, 'b', '2', 'f', 'r', 'a', 'm', 'e', 0, 0xd2};
  CHECK(b2ndfs::format::LooksLikeFrame(good));
  CHECK(b2ndfs::format::LooksLikeFrame(std::span<const uint8_t>(good, 10)));
  CHECK_FALSE(b2ndfs::format::LooksLikeFrame(std::span<const uint8_t>(good, 9)));
  uint8_t bad[sizeof good];
  std::memcpy(bad, good, sizeof good);
  bad[0] = 0x8e;
  CHECK_FALSE(b2ndfs::format::LooksLikeFrame(bad));
  bad[0] = 0x9e;
  bad[3] = '3';
  CHECK_FALSE(b2ndfs::format::LooksLikeFrame(bad));

  using b2ndfs::format::DecodeChunkOffset;
  CHECK(DecodeChunkOffset(0)->kind == ChunkKind::kStored);
  CHECK(DecodeChunkOffset(12345)->offset == 12345);
  const auto special = [](uint64_t byte) { return static_cast<int64_t>(byte << 56); };
  CHECK(DecodeChunkOffset(special(0x81))->kind == ChunkKind::kZeros);
  CHECK(DecodeChunkOffset(special(0x82))->kind == ChunkKind::kNaN);
  CHECK(DecodeChunkOffset(special(0x84))->kind == ChunkKind::kUninitialized);
  for (uint64_t bad_kind : {0x80, 0x83, 0x85, 0x86, 0x87}) {
    auto r = DecodeChunkOffset(special(bad_kind));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("special kind") != std::string::npos);
  }
  CHECK(DecodeChunkOffset(-1).ok() == false);  // 0xff..ff: kind 7

  CHECK(b2ndfs::source::SparseChunkFileName(0) == "00000000.chunk");
  CHECK(b2ndfs::source::SparseChunkFileName(10) == "0000000A.chunk");
  CHECK(b2ndfs::source::SparseChunkFileName(0xabcdef12) == "ABCDEF12.chunk");

  FrameInfo info;
  info.header_size = 100;
  info.cbytes = 1000;
  auto at = b2ndfs::format::LocateChunk(info, 968);
  REQUIRE_OK(at);
  CHECK(at->offset == 1068);
  CHECK_FALSE(b2ndfs::format::LocateChunk(info, 969).ok());
  CHECK(b2ndfs::format::LocateChunk(info, special(0x81))->kind == ChunkKind::kZeros);
  info.sparse = true;
  CHECK(b2ndfs::format::LocateChunk(info, 5000)->offset == 5000);
  CHECK_FALSE(b2ndfs::format::LocateChunk(info, int64_t{1} << 32).ok());
}

TEST_CASE("in-memory frames from c-blosc2, every codec") {
  for (int compcode : {BLOSC_BLOSCLZ, BLOSC_LZ4, BLOSC_LZ4HC, BLOSC_ZLIB, BLOSC_ZSTD}) {
    INFO("compcode " << compcode);
    blosc2_cparams cparams = Cparams(compcode, 4);
    cparams.filters[BLOSC2_MAX_FILTERS - 2] = BLOSC_DELTA;
    cparams.filters_meta[BLOSC2_MAX_FILTERS - 2] = 3;
    blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
    storage.contiguous = true;
    blosc2_schunk* sc = MakeSchunk(&cparams, &storage, "mymeta");
    const uint8_t meta[] = {0x93, 0x01, 0x02, 0x03};
    const std::string attrs =
        "\x82\xa1"
        "a\x01\xa1"
        "b\xa3xyz";
    REQUIRE(blosc2_vlmeta_add(sc, "attrs", (uint8_t*)attrs.data(),
                              static_cast<int32_t>(attrs.size()), nullptr) >= 0);
    const Bytes frame = ToBuffer(sc);
    auto info = Parse(frame);
    REQUIRE_OK(info);
    CHECK(info->codec == compcode);  // compcode itself: lz4hc (2) differs from lz4 (1)
    CHECK(info->clevel == 5);
    CHECK(info->typesize == 4);
    CHECK(info->chunksize == 4000);
    CHECK_FALSE(info->variable_chunks);
    CHECK(info->nchunks == 4);
    CHECK(info->nbytes == 14000);
    CHECK(info->format_version == 2);
    CHECK(info->filters[BLOSC2_MAX_FILTERS - 2] == BLOSC_DELTA);
    CHECK(info->filters_meta[BLOSC2_MAX_FILTERS - 2] == 3);
    CHECK(info->filters[BLOSC2_MAX_FILTERS - 1] == BLOSC_SHUFFLE);
    REQUIRE(info->metalayers.size() == 1);
    CHECK(info->metalayers[0].name == "mymeta");
    CHECK(info->metalayers[0].content == Bytes(meta, meta + sizeof meta));
    REQUIRE(info->vlmetalayers.size() == 1);
    CHECK(info->vlmetalayers[0].name == "attrs");
    // The chunk index lies right after the chunks, the trailer right after it.
    CHECK(info->offsets_chunk_position == info->header_size + info->cbytes);
    CHECK(info->offsets_chunk_position + info->offsets_chunk_size == info->trailer_offset);
    CHECK(info->trailer_offset + info->trailer_size == info->frame_size);
    CheckAgainstBlosc(frame, *info, sc);
    const std::vector<int64_t> offsets = DecompressIndex(frame, *info);
    CHECK(b2ndfs::format::DecodeChunkOffset(offsets[1])->kind == ChunkKind::kZeros);
    blosc2_schunk_free(sc);
  }
}

TEST_CASE("frames of an empty super-chunk") {
  blosc2_cparams cparams = Cparams(BLOSC_ZSTD, 8);
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  storage.cparams = &cparams;
  blosc2_schunk* sc = blosc2_schunk_new(&storage);
  const Bytes frame = ToBuffer(sc);
  auto info = Parse(frame);
  REQUIRE_OK(info);  // chunksize is -1 in such frames
  CHECK(info->nbytes == 0);
  CHECK(info->nchunks == 0);
  CHECK(info->chunksize == 0);
  CHECK(info->offsets_chunk_size == 0);
  CHECK(info->trailer_offset == info->header_size);
  CheckAgainstBlosc(frame, *info, sc);
  blosc2_schunk_free(sc);
}

TEST_CASE("variable-size chunks") {
  // c-blosc2 3.3 writes chunksize 0, general_flags bit 6 and frame format
  // version 3 once a chunk differs from the first one other than by being the
  // last and shorter (2.17 kept the first chunk's size, a frame it could not
  // open again). Chunks longer than the first and short ones in the middle.
  blosc2_cparams cparams = Cparams(BLOSC_BLOSCLZ, 1);
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = false;
  storage.cparams = &cparams;
  blosc2_schunk* sc = blosc2_schunk_new(&storage);
  Bytes data(8000, 7);
  for (int32_t n : {5000, 300, 8000, 100}) {
    REQUIRE(blosc2_schunk_append_buffer(sc, data.data(), n) > 0);
  }
  const Bytes frame = ToBuffer(sc);
  CHECK(frame[25] == 0x53);  // version 3, 64-bit offsets, bit 6
  auto info = Parse(frame);
  REQUIRE_OK(info);
  CHECK(info->format_version == 3);
  CHECK(info->chunksize == 0);
  CHECK(info->variable_chunks);
  CHECK_FALSE(info->vl_blocks);
  CHECK(info->nchunks == 4);
  CHECK(info->nbytes == 13400);
  CheckAgainstBlosc(frame, *info, sc);
  // c-blosc2 opens it again, with the same chunks.
  blosc2_schunk* reopened = blosc2_schunk_from_buffer(const_cast<uint8_t*>(frame.data()),
                                                      static_cast<int64_t>(frame.size()), true);
  REQUIRE(reopened != nullptr);
  CheckAgainstBlosc(frame, *info, reopened);
  blosc2_schunk_free(reopened);
  blosc2_schunk_free(sc);

  // The flag must agree with chunksize.
  {
    Bytes bad = frame;
    bad[25] = 0x13;  // version 3, bit 6 clear
    CHECK(ErrorOf(Parse(bad)).find("chunksize 0 but general_flags bit 6") != std::string::npos);
  }
  {
    Bytes bad = frame;
    bad[25] = 0x12;  // version 2 without the flag: as c-blosc2 2.x, by chunksize alone
    auto old = Parse(bad);
    REQUIRE_OK(old);
    CHECK(old->variable_chunks);
  }
}

TEST_CASE("frame general_flags bits 6 and 7 checked against the header") {
  blosc2_cparams cparams = Cparams(BLOSC_LZ4, 5);
  cparams.blocksize = 1000;
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  storage.cparams = &cparams;
  blosc2_schunk* sc = blosc2_schunk_new(&storage);
  Bytes data(4000, 3);
  REQUIRE(blosc2_schunk_append_buffer(sc, data.data(), 4000) > 0);
  REQUIRE(blosc2_schunk_append_buffer(sc, data.data(), 4000) > 0);
  const Bytes good = ToBuffer(sc);
  blosc2_schunk_free(sc);
  REQUIRE(good[25] == 0x12);  // regular chunks stay at version 2
  REQUIRE_OK(Parse(good));
  {
    Bytes bad = good;
    bad[25] = 0x53;  // bit 6, but chunksize is 4000
    CHECK(ErrorOf(Parse(bad)).find("variable-size chunks but the header's chunksize is 4000") !=
          std::string::npos);
  }
  {
    Bytes bad = good;
    bad[25] = 0x92;  // bit 7 in a version 2 frame
    CHECK(ErrorOf(Parse(bad)).find("bit 7 (variable-length blocks), which needs version 3") !=
          std::string::npos);
  }
  {
    Bytes bad = good;
    bad[25] = 0x93;  // bit 7, but the header has a block size
    CHECK(ErrorOf(Parse(bad)).find("variable-length blocks but the header's blocksize") !=
          std::string::npos);
  }
}

TEST_CASE("a frame of variable-length-block chunks") {
  blosc2_cparams cparams = Cparams(BLOSC_ZSTD, 5);
  blosc2_context* cctx = blosc2_create_cctx(cparams);
  REQUIRE(cctx != nullptr);
  std::vector<int32_t> items(4000);
  for (size_t i = 0; i < items.size(); ++i) items[i] = static_cast<int32_t>(i * 7);
  const void* srcs[3] = {items.data(), items.data() + 100, items.data() + 3100};
  const int32_t sizes[3] = {400, 12000, 200};
  Bytes chunk(13000 + BLOSC2_MAX_OVERHEAD * 3);
  const int cbytes =
      blosc2_vlcompress_ctx(cctx, srcs, sizes, 3, chunk.data(), static_cast<int32_t>(chunk.size()));
  blosc2_free_ctx(cctx);
  REQUIRE(cbytes > 0);
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  storage.cparams = &cparams;
  blosc2_schunk* sc = blosc2_schunk_new(&storage);
  REQUIRE(blosc2_schunk_append_chunk(sc, chunk.data(), true) == 1);
  REQUIRE(blosc2_schunk_append_chunk(sc, chunk.data(), true) == 2);
  const Bytes frame = ToBuffer(sc);
  CHECK(frame[25] == 0x93);
  auto info = Parse(frame);
  REQUIRE_OK(info);
  CHECK(info->format_version == 3);
  CHECK(info->vl_blocks);
  CHECK(info->blocksize == 0);
  CHECK_FALSE(info->variable_chunks);
  CHECK(info->nchunks == 2);
  CheckAgainstBlosc(frame, *info, sc);
  blosc2_schunk_free(sc);
}

TEST_CASE("on-disk contiguous frame, appended and updated in place") {
  TempDir dir;
  const std::string path = dir.path() + "/x.b2frame";
  blosc2_cparams cparams = Cparams(BLOSC_LZ4, 4);
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  storage.urlpath = const_cast<char*>(path.c_str());
  blosc2_schunk* sc = MakeSchunk(&cparams, &storage);
  const std::string attrs = "\x93\x01\x02\x03";
  REQUIRE(blosc2_vlmeta_add(sc, "list", (uint8_t*)attrs.data(), 4, nullptr) >= 0);
  REQUIRE(blosc2_vlmeta_add(sc, "other", (uint8_t*)"\xc0", 1, nullptr) >= 0);
  // Replace chunk 0 by a bigger one: c-blosc2 appends it to the chunks section.
  std::vector<int32_t> noise(1000);
  uint32_t x = 1;
  for (auto& v : noise) v = static_cast<int32_t>(x = x * 1103515245u + 12345u);
  std::vector<uint8_t> chunk(4000 + BLOSC2_MAX_OVERHEAD);
  const int csize = blosc2_compress_ctx(sc->cctx, noise.data(), 4000, chunk.data(),
                                        static_cast<int32_t>(chunk.size()));
  REQUIRE(csize > 0);
  REQUIRE(blosc2_schunk_update_chunk(sc, 0, chunk.data(), true) >= 0);
  blosc2_schunk_free(sc);

  const Bytes frame = ReadFile(path);
  auto info = Parse(frame);
  REQUIRE_OK(info);
  blosc2_schunk* reopened = blosc2_schunk_open(path.c_str());
  REQUIRE(reopened != nullptr);
  CHECK(info->vlmetalayers.size() == 2);
  CheckAgainstBlosc(frame, *info, reopened);
  blosc2_schunk_free(reopened);
}

TEST_CASE("sparse frame: chunks.b2frame and its chunk files") {
  TempDir dir;
  const std::string path = dir.path() + "/s.b2frame";
  blosc2_cparams cparams = Cparams(BLOSC_ZSTD, 4);
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = false;
  storage.urlpath = const_cast<char*>(path.c_str());
  blosc2_schunk* sc = MakeSchunk(&cparams, &storage);
  REQUIRE(blosc2_vlmeta_add(sc, "v", (uint8_t*)"\x01", 1, nullptr) >= 0);
  blosc2_schunk_free(sc);

  const Bytes frame = ReadFile(path + "/chunks.b2frame");
  auto info = Parse(frame);
  REQUIRE_OK(info);
  CHECK(info->sparse);
  // The chunk index of a sparse frame follows the header directly.
  CHECK(info->offsets_chunk_position == info->header_size);
  blosc2_schunk* reopened = blosc2_schunk_open(path.c_str());
  REQUIRE(reopened != nullptr);
  CheckAgainstBlosc(frame, *info, reopened, path);
  blosc2_schunk_free(reopened);
}

TEST_CASE("b2nd arrays: metalayer bytes and chunk geometry") {
  blosc2_cparams cparams = Cparams(BLOSC_ZSTD, 8);
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  storage.cparams = &cparams;
  const int64_t shape[] = {37, 50, 3};
  const int32_t chunkshape[] = {10, 25, 3};
  const int32_t blockshape[] = {4, 7, 3};
  B2ndArray a;
  a.ctx = b2nd_create_ctx(&storage, 3, shape, chunkshape, blockshape, "<f8", 0, nullptr, 0);
  REQUIRE(a.ctx != nullptr);
  std::vector<double> data(37 * 50 * 3);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<double>(i) * 0.5;
  REQUIRE(b2nd_from_cbuffer(a.ctx, &a.array, data.data(),
                            static_cast<int64_t>(data.size() * sizeof(double))) == 0);
  REQUIRE(blosc2_vlmeta_add(a.array->sc, "unit", (uint8_t*)"\xa1m", 2, nullptr) >= 0);
  const Bytes frame = ToCframe(a.array);
  auto info = Parse(frame);
  REQUIRE_OK(info);
  CHECK(info->nchunks == 4 * 2 * 1);
  CHECK(info->chunksize == 12 * 28 * 3 * 8);  // extchunkshape: blocks cover the chunk
  REQUIRE(info->metalayers.size() == 1);
  CHECK(info->metalayers[0].name == "b2nd");
  CheckAgainstBlosc(frame, *info, a.array->sc);
  auto meta = b2ndfs::format::DecodeB2ndMetalayer(info->metalayers[0].content);
  REQUIRE(meta.ok());
  CHECK(meta->shape == std::vector<int64_t>(shape, shape + 3));
  CHECK(meta->chunkshape == std::vector<int64_t>(chunkshape, chunkshape + 3));
  CHECK(meta->blockshape == std::vector<int64_t>(blockshape, blockshape + 3));
  CHECK(meta->dtype == "<f8");
  CHECK(meta->dtype_format == 0);
  CHECK(b2ndfs::format::DtypeItemSize(*meta->dtype) == info->typesize);
}

TEST_CASE("b2nd zeros: a chunk index made by fill_special") {
  blosc2_cparams cparams = Cparams(BLOSC_BLOSCLZ, 4);
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  storage.cparams = &cparams;
  const int64_t shape[] = {1000, 1000};
  const int32_t chunkshape[] = {100, 100};
  const int32_t blockshape[] = {10, 100};
  B2ndArray a;
  a.ctx = b2nd_create_ctx(&storage, 2, shape, chunkshape, blockshape, "<i4", 0, nullptr, 0);
  REQUIRE(b2nd_zeros(a.ctx, &a.array) == 0);
  const Bytes frame = ToCframe(a.array);
  auto info = Parse(frame);
  REQUIRE_OK(info);
  CHECK(info->nchunks == 100);
  CHECK(info->cbytes == 0);
  CheckAgainstBlosc(frame, *info, a.array->sc);
  for (int64_t raw : DecompressIndex(frame, *info)) {
    CHECK(b2ndfs::format::DecodeChunkOffset(raw)->kind == ChunkKind::kZeros);
  }
}

TEST_CASE("b2nd with an empty axis has no chunks") {
  blosc2_cparams cparams = Cparams(BLOSC_BLOSCLZ, 2);
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  storage.cparams = &cparams;
  const int64_t shape[] = {0, 10};
  const int32_t chunkshape[] = {5, 5};
  const int32_t blockshape[] = {5, 5};
  B2ndArray a;
  a.ctx = b2nd_create_ctx(&storage, 2, shape, chunkshape, blockshape, "<u2", 0, nullptr, 0);
  REQUIRE(b2nd_zeros(a.ctx, &a.array) == 0);
  const Bytes frame = ToCframe(a.array);
  auto info = Parse(frame);
  REQUIRE_OK(info);
  CHECK(info->nchunks == 0);
  CheckAgainstBlosc(frame, *info, a.array->sc);
}

}  // namespace
