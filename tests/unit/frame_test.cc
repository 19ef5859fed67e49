// Unit tests of format/frame: frames written by c-blosc2 (in memory, on disk,
// sparse, b2nd) parsed and compared with what c-blosc2 itself reports, and
// malformed / truncated / mutated frames that must fail cleanly.
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

namespace {

using b2ndfs::Result;
using b2ndfs::format::ChunkKind;
using b2ndfs::format::FrameInfo;
using b2ndfs::format::ParseFrame;
using b2ndfs::format::ReadAt;
using Bytes = std::vector<uint8_t>;

struct BloscInit {
  BloscInit() { blosc2_init(); }
  ~BloscInit() { blosc2_destroy(); }
};
const BloscInit blosc_init;

ReadAt ReaderOf(const Bytes& bytes) {
  return [&bytes](int64_t offset, int64_t length) -> Result<Bytes> {
    if (offset < 0 || length < 0 || offset > static_cast<int64_t>(bytes.size()) ||
        length > static_cast<int64_t>(bytes.size()) - offset) {
      return b2ndfs::InvalidData("read past the end");
    }
    return Bytes(bytes.begin() + offset, bytes.begin() + offset + length);
  };
}

// REQUIRE(r.ok()), saying why not.
#define REQUIRE_OK(r)                                          \
  do {                                                         \
    INFO(((r).ok() ? std::string() : (r).status().message())); \
    REQUIRE((r).ok());                                         \
  } while (0)

Result<FrameInfo> Parse(const Bytes& bytes) {
  return ParseFrame(ReaderOf(bytes), static_cast<int64_t>(bytes.size()));
}

std::string ErrorOf(const Result<FrameInfo>& r) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().error_number() == EIO);
  return r.status().message();
}

Bytes ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Bytes ToBuffer(blosc2_schunk* sc) {
  uint8_t* buffer = nullptr;
  bool needs_free = false;
  const int64_t len = blosc2_schunk_to_buffer(sc, &buffer, &needs_free);
  REQUIRE(len > 0);
  Bytes out(buffer, buffer + len);
  if (needs_free) free(buffer);
  return out;
}

int32_t LittleInt32(const uint8_t* p) {
  return static_cast<int32_t>(uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
                              uint32_t{p[3]} << 24);
}

std::vector<int64_t> DecompressIndex(const Bytes& frame_file, const FrameInfo& info) {
  std::vector<int64_t> offsets(static_cast<size_t>(info.nchunks));
  if (info.nchunks == 0) return offsets;
  const int rc = blosc2_decompress(frame_file.data() + info.offsets_chunk_position,
                                   static_cast<int32_t>(info.offsets_chunk_size), offsets.data(),
                                   static_cast<int32_t>(offsets.size() * 8));
  REQUIRE(rc == static_cast<int>(offsets.size() * 8));
  return offsets;
}

class TempDir {
 public:
  TempDir() {
    char templ[] = "/tmp/b2ndfs_frame_test.XXXXXX";
    REQUIRE(mkdtemp(templ) != nullptr);
    path_ = templ;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

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
          ReadFile(sparse_dir + "/" + b2ndfs::format::SparseChunkFileName(location->offset));
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

blosc2_cparams Cparams(int compcode, int typesize) {
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = typesize;
  cparams.compcode = static_cast<uint8_t>(compcode);
  cparams.clevel = 5;
  cparams.nthreads = 1;
  return cparams;
}

// A super-chunk of 4-byte items: a data chunk, a zero chunk, another data
// chunk, and a short last data chunk; with metalayer `meta_name` (added before
// the data, as c-blosc2 requires) when given.
blosc2_schunk* MakeSchunk(blosc2_cparams* cparams, blosc2_storage* storage,
                          const char* meta_name = nullptr) {
  storage->cparams = cparams;
  blosc2_schunk* sc = blosc2_schunk_new(storage);
  REQUIRE(sc != nullptr);
  if (meta_name != nullptr) {
    uint8_t meta[] = {0x93, 0x01, 0x02, 0x03};
    REQUIRE(blosc2_meta_add(sc, meta_name, meta, sizeof meta) >= 0);
  }
  std::vector<int32_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i * 7);
  const int32_t nbytes = static_cast<int32_t>(data.size() * sizeof(int32_t));
  REQUIRE(blosc2_schunk_append_buffer(sc, data.data(), nbytes) == 1);
  std::vector<uint8_t> zeros(BLOSC_EXTENDED_HEADER_LENGTH);
  REQUIRE(blosc2_chunk_zeros(*cparams, nbytes, zeros.data(), BLOSC_EXTENDED_HEADER_LENGTH) > 0);
  REQUIRE(blosc2_schunk_append_chunk(sc, zeros.data(), true) == 2);
  for (auto& v : data) v += 3;
  REQUIRE(blosc2_schunk_append_buffer(sc, data.data(), nbytes) == 3);
  REQUIRE(blosc2_schunk_append_buffer(sc, data.data(), nbytes / 2) == 4);
  return sc;
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

  CHECK(b2ndfs::format::SparseChunkFileName(0) == "00000000.chunk");
  CHECK(b2ndfs::format::SparseChunkFileName(10) == "0000000A.chunk");
  CHECK(b2ndfs::format::SparseChunkFileName(0xabcdef12) == "ABCDEF12.chunk");

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

struct B2ndArray {
  b2nd_context_t* ctx = nullptr;
  b2nd_array_t* array = nullptr;
  ~B2ndArray() {
    if (array) b2nd_free(array);
    if (ctx) b2nd_free_ctx(ctx);
  }
};

Bytes ToCframe(const b2nd_array_t* array) {
  uint8_t* cframe = nullptr;
  int64_t len = 0;
  bool needs_free = false;
  REQUIRE(b2nd_to_cframe(array, &cframe, &len, &needs_free) == 0);
  Bytes out(cframe, cframe + len);
  if (needs_free) free(cframe);
  return out;
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

// A small valid frame for the malformed cases below.
Bytes SampleFrame() {
  blosc2_cparams cparams = Cparams(BLOSC_ZSTD, 4);
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  blosc2_schunk* sc = MakeSchunk(&cparams, &storage, "m");
  REQUIRE(blosc2_vlmeta_add(sc, "v", (uint8_t*)"\x01", 1, nullptr) >= 0);
  Bytes frame = ToBuffer(sc);
  blosc2_schunk_free(sc);
  return frame;
}

void PutBig(Bytes& bytes, size_t at, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) {
    bytes[at + static_cast<size_t>(i)] = static_cast<uint8_t>(value >> (8 * (width - 1 - i)));
  }
}

TEST_CASE("header fields that do not fit the file are reported in words") {
  const Bytes good = SampleFrame();
  auto parsed = Parse(good);
  REQUIRE_OK(parsed);
  const int64_t size = static_cast<int64_t>(good.size());
  {
    Bytes bad = good;
    PutBig(bad, 11, 99999, 4);
    CHECK(ErrorOf(Parse(bad)) == "frame header says header_size 99999 but the file has " +
                                     std::to_string(size) + " bytes");
  }
  {
    Bytes bad = good;
    PutBig(bad, 11, 50, 4);
    CHECK(ErrorOf(Parse(bad)).find("header_size 50, less than the minimal 87") !=
          std::string::npos);
  }
  {
    Bytes bad = good;
    PutBig(bad, 16, static_cast<uint64_t>(size) + 1, 8);
    CHECK(ErrorOf(Parse(bad)) == "frame header says frame_size " + std::to_string(size + 1) +
                                     " but the file has " + std::to_string(size) + " bytes");
    PutBig(bad, 16, ~uint64_t{0}, 8);
    CHECK(ErrorOf(Parse(bad)).find("frame_size 18446744073709551615") != std::string::npos);
  }
  {
    Bytes bad = good;
    PutBig(bad, 48, 0, 4);
    CHECK(ErrorOf(Parse(bad)).find("typesize 0") != std::string::npos);
  }
  {
    Bytes bad = good;  // chunksize no longer matches the chunk index
    PutBig(bad, 58, 2000, 4);
    CHECK(ErrorOf(Parse(bad))
              .find("chunk index has 4 entries, but nbytes 14000 in chunks of "
                    "2000 bytes make 7") != std::string::npos);
  }
  {
    Bytes bad = good;
    PutBig(bad, 39, 1 << 30, 8);  // cbytes
    CHECK(ErrorOf(Parse(bad)).find("cbytes 1073741824") != std::string::npos);
  }
  {
    Bytes bad = good;
    bad[26] = 2;  // frame type
    CHECK(ErrorOf(Parse(bad)).find("frame_type is 2") != std::string::npos);
  }
  {
    Bytes bad = good;
    bad[25] = 0x14;  // frame format version 4
    CHECK(ErrorOf(Parse(bad)).find("version 4 is newer") != std::string::npos);
  }
  {
    Bytes bad = good;
    bad[70] = 7;  // number of filters
    CHECK(ErrorOf(Parse(bad)).find("7 filters") != std::string::npos);
  }
  {
    Bytes bad = good;
    bad[47] = 0xd3;
    CHECK(ErrorOf(Parse(bad)).find("byte 47 is 0xd3, expected 0xd2 before typesize") !=
          std::string::npos);
  }
  {
    Bytes bad = good;
    bad[3] = 'X';
    CHECK(ErrorOf(Parse(bad)).find("not a Blosc2 frame") != std::string::npos);
  }
  {
    // The trailer length marker, 23 bytes before the end.
    Bytes bad = good;
    bad[bad.size() - 23] = 0xcd;
    CHECK(ErrorOf(Parse(bad)).find("expected 0xce") != std::string::npos);
    bad = good;
    PutBig(bad, bad.size() - 22, 0xfffffff0u, 4);
    CHECK(ErrorOf(Parse(bad)).find("trailer_len 4294967280") != std::string::npos);
    bad = good;
    PutBig(bad, bad.size() - 22, 10, 4);
    CHECK_FALSE(Parse(bad).ok());
  }
  CHECK(ErrorOf(ParseFrame(ReaderOf(good), 50)).find("fewer than the 87") != std::string::npos);
}

TEST_CASE("metalayer offsets outside the header") {
  const Bytes good = SampleFrame();
  auto info = Parse(good);
  REQUIRE_OK(info);
  // The header map {"m": int32 offset}: 0xa1 'm' 0xd2 <offset>.
  size_t at = 0;
  for (size_t i = 87; i + 2 < good.size(); ++i) {
    if (good[i] == 0xa1 && good[i + 1] == 'm' && good[i + 2] == 0xd2) {
      at = i + 3;
      break;
    }
  }
  REQUIRE(at != 0);
  Bytes bad = good;
  PutBig(bad, at, static_cast<uint64_t>(info->header_size), 4);
  CHECK(ErrorOf(Parse(bad)).find("lies outside") != std::string::npos);
  PutBig(bad, at, 0xffffffffu, 4);  // -1
  CHECK(ErrorOf(Parse(bad)).find("offset -1") != std::string::npos);
  PutBig(bad, at, 20, 4);  // not a bin32 there
  CHECK(ErrorOf(Parse(bad)).find("instead of a bin32") != std::string::npos);
}

TEST_CASE("every truncation of a frame is an error") {
  const Bytes good = SampleFrame();
  for (size_t n = 0; n < good.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    const Bytes prefix(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    auto r = Parse(prefix);
    REQUIRE_FALSE(r.ok());
    REQUIRE_FALSE(r.status().message().empty());
  }
  // A read function that fails is reported with context.
  ReadAt failing = [](int64_t, int64_t) -> Result<Bytes> {
    return b2ndfs::InvalidData("disk on fire");
  };
  auto r = ParseFrame(failing, 1000);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "reading the frame header: disk on fire");
  // A reader that throws is caught.
  ReadAt throwing = [](int64_t, int64_t) -> Result<Bytes> { throw std::runtime_error("boom"); };
  CHECK_FALSE(ParseFrame(throwing, 1000).ok());
}

TEST_CASE("random mutations of frames never crash") {
  const Bytes seeds[] = {SampleFrame(), [] {
                           blosc2_cparams cparams = Cparams(BLOSC_BLOSCLZ, 8);
                           blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
                           storage.contiguous = true;
                           storage.cparams = &cparams;
                           const int64_t shape[] = {20, 30};
                           const int32_t chunkshape[] = {10, 10};
                           const int32_t blockshape[] = {5, 5};
                           B2ndArray a;
                           a.ctx = b2nd_create_ctx(&storage, 2, shape, chunkshape, blockshape,
                                                   "<f8", 0, nullptr, 0);
                           REQUIRE(b2nd_zeros(a.ctx, &a.array) == 0);
                           return ToCframe(a.array);
                         }()};
  std::mt19937 rng(4242);
  int ok_count = 0;
  for (int iteration = 0; iteration < 6000; ++iteration) {
    Bytes bytes = seeds[iteration % 2];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      // Bias edits to the header and the trailer, where the metadata is.
      size_t at;
      switch (rng() % 3) {
        case 0:
          at = rng() % std::min<size_t>(bytes.size(), 200);
          break;
        case 1:
          at = bytes.size() - 1 - rng() % std::min<size_t>(bytes.size(), 120);
          break;
        default:
          at = rng() % bytes.size();
      }
      if (rng() % 2) {
        bytes[at] = static_cast<uint8_t>(rng());
      } else {
        bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      }
    }
    auto r = Parse(bytes);
    if (!r.ok()) continue;
    ++ok_count;
    // Whatever is accepted lies inside the file.
    const int64_t size = static_cast<int64_t>(bytes.size());
    REQUIRE(r->header_size >= 87);
    REQUIRE(r->frame_size <= size);
    REQUIRE(r->trailer_offset >= r->header_size);
    REQUIRE(r->trailer_offset + r->trailer_size == r->frame_size);
    REQUIRE(r->offsets_chunk_position + r->offsets_chunk_size <= r->trailer_offset);
    REQUIRE(r->nchunks >= 0);
    REQUIRE(r->typesize > 0);
  }
  CHECK(ok_count > 0);
}

}  // namespace
