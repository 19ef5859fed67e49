// Unit tests of codec/builtin and the plugin guard of codec/decompressor:
// chunks written by c-blosc2 and then patched to name a codec or filter that
// c-blosc2 would load as a plugin are refused by every entry point, before
// c-blosc2 decodes them. A trap proves the "before": PATH starts with a
// directory whose `python` and `python3` leave a marker file when run (what
// c-blosc2's plugin loader runs); a control test shows that c-blosc2 itself
// does run it for the same chunk, so the trap can catch a missing check.
#include <blosc2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "b2ndfs/codec/builtin.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/format/meta_json.h"
#include "chunk_writer.h"

namespace {

namespace fs = std::filesystem;
using b2ndfs::Status;
using b2ndfs::codec::CheckChunkPipeline;
using b2ndfs::codec::ChunkSpan;
using b2ndfs::codec::Decompressor;
using b2ndfs::codec::InspectChunk;
using b2ndfs::codec::InspectChunkHeader;
using b2ndfs::codec::UnsupportedPipeline;
using Bytes = std::vector<uint8_t>;
using Filters = std::array<uint8_t, BLOSC2_MAX_FILTERS>;

constexpr size_t kFlags = 2;
constexpr size_t kFilterBytes = 16;
constexpr size_t kUdcodec = 22;
constexpr size_t kBlosc2Flags = 31;

// ---- the trap -----------------------------------------------------------------

// A temporary directory put first on PATH, holding `python` and `python3`
// scripts that create `marker` when run. Restores PATH on destruction.
class PluginTrap {
 public:
  PluginTrap() {
    char tmpl[] = "/tmp/b2ndfs-codec-test.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    marker_ = dir_ / "marker";
    for (const char* name : {"python", "python3"}) {
      const fs::path script = dir_ / name;
      std::ofstream(script) << "#!/bin/sh\necho \"$0 $*\" >> '" << marker_.string() << "'\n";
      fs::permissions(script, fs::perms::owner_all);
    }
    const char* old = std::getenv("PATH");
    old_path_ = old != nullptr ? old : "";
    setenv("PATH", (dir_.string() + ":" + old_path_).c_str(), 1);
  }
  ~PluginTrap() {
    setenv("PATH", old_path_.c_str(), 1);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  bool Sprung() const { return fs::exists(marker_); }
  std::string What() const {
    std::ifstream in(marker_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  fs::path dir_;
  fs::path marker_;
  std::string old_path_;
};

// ---- chunks ---------------------------------------------------------------------

struct BloscInit {
  BloscInit() { blosc2_init(); }
  ~BloscInit() { blosc2_destroy(); }
};
const BloscInit blosc_init;

// 64 KiB of int32 that zstd and friends do compress (so the blocks go through
// the codec, not the stored-uncompressed path).
Bytes Data() {
  Bytes data(64 * 1024);
  for (size_t i = 0; i < data.size() / 4; ++i) {
    const int32_t v = static_cast<int32_t>(i / 7) ^ static_cast<int32_t>((i * 2654435761u) >> 29);
    std::memcpy(data.data() + 4 * i, &v, 4);
  }
  return data;
}

Bytes Compress(int compcode, const Filters& filters, int clevel = 5, int use_dict = 0) {
  const Bytes data = Data();
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.compcode = static_cast<uint8_t>(compcode);
  cp.clevel = static_cast<uint8_t>(clevel);
  cp.typesize = 4;
  cp.blocksize = 8 * 1024;
  cp.nthreads = 1;
  cp.use_dict = use_dict;
  cp.splitmode = BLOSC_NEVER_SPLIT;
  for (int i = 0; i < BLOSC2_MAX_FILTERS; ++i) {
    cp.filters[i] = filters[i];
    // trunc_prec: mantissa bits kept (0 is refused); bytedelta: the typesize
    // (0 means "ask the super-chunk", and there is none).
    cp.filters_meta[i] = filters[i] == BLOSC_TRUNC_PREC ? 20 : filters[i] >= 34 ? 4 : 0;
  }
  return b2ndfs::testing::CompressChunk(data, cp);
}

constexpr Filters kShuffle = {0, 0, 0, 0, 0, BLOSC_SHUFFLE};

// A zstd chunk whose header says that the user-defined codec `id` made it.
Bytes NamingCodec(uint8_t id, Bytes chunk = Compress(BLOSC_ZSTD, kShuffle)) {
  chunk[kFlags] = static_cast<uint8_t>((chunk[kFlags] & 0x1f) | (BLOSC_UDCODEC_FORMAT << 5));
  chunk[kUdcodec] = id;
  return chunk;
}

Bytes NamingFilter(uint8_t id, int slot) {
  Bytes chunk = Compress(BLOSC_ZSTD, kShuffle);
  chunk[kFilterBytes + static_cast<size_t>(slot)] = id;
  return chunk;
}

std::string ErrorOf(const Status& s) { return s.ok() ? std::string("(ok)") : s.message(); }
template <typename T>
std::string ErrorOf(const b2ndfs::Result<T>& r) {
  return r.ok() ? std::string("(ok)") : r.status().message();
}

// Every entry point refuses `chunk` with EIO and a message containing
// `words`, and none of them lets c-blosc2 reach its plugin loader.
void ExpectRefusedEverywhere(const Bytes& chunk, const std::string& words) {
  PluginTrap trap;
  INFO("expected: " << words);
  const auto header = InspectChunkHeader(std::span(chunk).first(32));
  CHECK(header.status().error_number() == EIO);
  CHECK_THAT(ErrorOf(header), Catch::Contains(words));
  const auto whole = InspectChunk(chunk);
  CHECK(whole.status().error_number() == EIO);
  CHECK_THAT(ErrorOf(whole), Catch::Contains(words));
  const Status check = CheckChunkPipeline(chunk);
  CHECK(check.error_number() == EIO);
  CHECK_THAT(ErrorOf(check), Catch::Contains(words));

  Decompressor d;
  Bytes out(Data().size());
  const Status all = d.DecompressAll(chunk, out);
  CHECK(all.error_number() == EIO);
  CHECK_THAT(ErrorOf(all), Catch::Contains(words));
  const Status range = d.DecompressRange(chunk, 4096, std::span(out).first(100));
  CHECK(range.error_number() == EIO);
  CHECK_THAT(ErrorOf(range), Catch::Contains(words));
  // The head and one block's bytes, as the store passes them.
  b2ndfs::codec::ChunkInfo info;
  info.nbytes = static_cast<int32_t>(out.size());
  info.cbytes = static_cast<int32_t>(chunk.size());
  info.blocksize = 8 * 1024;
  info.typesize = 4;
  info.header_size = 32;
  info.nblocks = 8;
  const int64_t head_size = b2ndfs::codec::ChunkHeadSize(info);
  int32_t start = 0;
  std::memcpy(&start, chunk.data() + 32, 4);
  const ChunkSpan span{start, static_cast<int64_t>(chunk.size())};
  const Status part = d.DecompressRangeFromPart(
      std::span(chunk).first(static_cast<size_t>(head_size)), info, span,
      std::span(chunk).subspan(static_cast<size_t>(start)), 0, std::span(out).first(100));
  CHECK(part.error_number() == EIO);
  CHECK_THAT(ErrorOf(part), Catch::Contains(words));
  INFO("the plugin loader ran: " << trap.What());
  CHECK_FALSE(trap.Sprung());
}

// ---- tests ----------------------------------------------------------------------

TEST_CASE("the trap catches c-blosc2 loading a plugin (control)") {
  // The same bytes as below, given to c-blosc2 directly: it looks for
  // libblosc2_grok.so and then asks python. If this stops holding (c-blosc2
  // changed), the no-marker checks below prove nothing and must be revisited.
  const Bytes chunk = NamingCodec(37);
  PluginTrap trap;
  Bytes out(Data().size());
  const int rc = blosc2_decompress(chunk.data(), static_cast<int32_t>(chunk.size()), out.data(),
                                   static_cast<int32_t>(out.size()));
  CHECK(rc < 0);
  CHECK(trap.Sprung());
}

TEST_CASE("plugin codecs are refused before c-blosc2 sees the chunk") {
  ExpectRefusedEverywhere(
      NamingCodec(37),
      "codec grok (id 37) needs the external plugin blosc2_grok, which b2ndfs never loads");
  ExpectRefusedEverywhere(NamingCodec(36),
                          "codec openhtj2k (id 36) needs the external plugin "
                          "blosc2_openhtj2k, which b2ndfs never loads");
  ExpectRefusedEverywhere(NamingCodec(38),
                          "codec openzl (id 38) needs the external plugin "
                          "blosc2_openzl");
  ExpectRefusedEverywhere(NamingCodec(39),
                          "codec j2k (id 39) needs the external plugin blosc2_j2k");
  ExpectRefusedEverywhere(NamingCodec(40),
                          "codec htj2k (id 40) needs the external plugin blosc2_htj2k");
}

TEST_CASE("unknown and user codec ids are refused") {
  for (int id : {41, 100, 159}) {
    ExpectRefusedEverywhere(
        NamingCodec(static_cast<uint8_t>(id)),
        "the chunk is damaged: it names codec id " + std::to_string(id) + ", which c-blosc2");
  }
  for (int id : {160, 200, 255}) {
    ExpectRefusedEverywhere(NamingCodec(static_cast<uint8_t>(id)),
                            "codec id " + std::to_string(id) + " is a user-registered codec");
  }
  // The user-defined slot only reaches registered codecs: a built-in id there
  // is nothing c-blosc2 decodes.
  ExpectRefusedEverywhere(NamingCodec(BLOSC_ZSTD),
                          "the chunk is damaged: it names codec zstd (id 5) in its user-defined "
                          "codec slot");
}

TEST_CASE("unknown and user filter ids are refused in every slot") {
  for (int slot = 0; slot < BLOSC2_MAX_FILTERS; ++slot) {
    INFO("slot " << slot);
    ExpectRefusedEverywhere(NamingFilter(200, slot), "filter id 200 is a user-registered filter");
    // Ids no c-blosc2 and no plugin writes: damage, not a missing plugin.
    for (int id : {5, 31, 37, 90, 159}) {
      ExpectRefusedEverywhere(NamingFilter(static_cast<uint8_t>(id), slot),
                              "the chunk is damaged: it names filter id " + std::to_string(id) +
                                  ", which c-blosc2 " + b2ndfs::codec::LibraryVersion() +
                                  " never writes and no plugin may use");
    }
  }
}

TEST_CASE("reserved codec formats are refused") {
  for (int format : {2, 5, 7}) {
    Bytes chunk = Compress(BLOSC_ZSTD, kShuffle);
    chunk[kFlags] = static_cast<uint8_t>((chunk[kFlags] & 0x1f) | (format << 5));
    ExpectRefusedEverywhere(chunk, format == 5
                                       ? std::string("the chunk is damaged: its codec format 5")
                                       : "chunk codec format " + std::to_string(format));
  }
}

TEST_CASE("the check is not bypassed by headers c-blosc2 treats specially") {
  SECTION("stored uncompressed (memcpyed)") {
    const Bytes chunk = NamingCodec(37, Compress(BLOSC_ZSTD, kShuffle, /*clevel=*/0));
    REQUIRE((chunk[kFlags] & BLOSC_MEMCPYED) != 0);
    ExpectRefusedEverywhere(chunk, "codec grok (id 37)");
  }
  SECTION("special values") {
    Bytes zeros(BLOSC_EXTENDED_HEADER_LENGTH);
    blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
    cp.typesize = 4;
    REQUIRE(blosc2_chunk_zeros(cp, 64 * 1024, zeros.data(), static_cast<int32_t>(zeros.size())) ==
            BLOSC_EXTENDED_HEADER_LENGTH);
    const auto intact = InspectChunk(zeros);
    REQUIRE(intact.ok());
    REQUIRE(intact->special);
    Bytes chunk = NamingCodec(37, zeros);
    PluginTrap trap;
    CHECK_THAT(ErrorOf(InspectChunkHeader(chunk)), Catch::Contains("codec grok (id 37)"));
    CHECK_THAT(ErrorOf(InspectChunk(chunk)), Catch::Contains("codec grok (id 37)"));
    Decompressor d;
    Bytes out(64 * 1024);
    CHECK_THAT(ErrorOf(d.DecompressAll(chunk, out)), Catch::Contains("codec grok (id 37)"));
    CHECK_THAT(ErrorOf(d.DecompressRange(chunk, 8, std::span(out).first(8))),
               Catch::Contains("codec grok (id 37)"));
    chunk = zeros;
    chunk[kFilterBytes] = 200;
    CHECK_THAT(ErrorOf(d.DecompressAll(chunk, out)), Catch::Contains("filter id 200"));
    CHECK_FALSE(trap.Sprung());
  }
  SECTION("dictionary flag") {
    const Bytes dict_chunk = Compress(BLOSC_ZSTD, kShuffle, 5, /*use_dict=*/1);
    REQUIRE((dict_chunk[kBlosc2Flags] & BLOSC2_USEDICT) != 0);
    REQUIRE(InspectChunk(dict_chunk).ok());
    ExpectRefusedEverywhere(NamingCodec(37, dict_chunk), "codec grok (id 37)");
  }
  SECTION("a 16-byte Blosc1 header has no user-defined codec byte") {
    // Stored uncompressed behind a 16-byte header: flags 0x02, no extended
    // header. Its bytes 16..31 are data, which c-blosc2 never reads as codec
    // or filter ids, so neither may the check.
    Bytes chunk(16 + 256);
    chunk[0] = 2;  // Blosc1 format
    chunk[1] = 1;
    chunk[kFlags] = BLOSC_MEMCPYED;
    chunk[3] = 1;
    const int32_t nbytes = 256, cbytes = 16 + 256;
    std::memcpy(&chunk[4], &nbytes, 4);
    std::memcpy(&chunk[8], &nbytes, 4);
    std::memcpy(&chunk[12], &cbytes, 4);
    for (int i = 0; i < 256; ++i)
      chunk[16 + static_cast<size_t>(i)] = static_cast<uint8_t>(200 - i);
    REQUIRE(CheckChunkPipeline(chunk).ok());
    const auto info = InspectChunk(chunk);
    INFO(ErrorOf(info));
    REQUIRE(info.ok());
    CHECK(info->header_size == 16);
    Decompressor d;
    Bytes out(256);
    REQUIRE(d.DecompressAll(chunk, out).ok());
    CHECK(std::equal(out.begin(), out.end(), chunk.begin() + 16));
    // The same header claiming the user-defined codec: c-blosc2 would look
    // up codec 0 there; refused.
    chunk[kFlags] = static_cast<uint8_t>(BLOSC_MEMCPYED | (BLOSC_UDCODEC_FORMAT << 5));
    CHECK_THAT(ErrorOf(CheckChunkPipeline(chunk)), Catch::Contains("user-defined codec slot"));
    CHECK_THAT(ErrorOf(d.DecompressAll(chunk, out)), Catch::Contains("user-defined codec slot"));
  }
  SECTION("the alpha format ignores the sixth filter, the others do not") {
    Bytes chunk = Compress(BLOSC_ZSTD, {0, 0, 0, 0, BLOSC_SHUFFLE, 0});
    chunk[0] = 3;  // BLOSC2_VERSION_FORMAT_ALPHA
    chunk[kFilterBytes + 5] = 200;
    CHECK(CheckChunkPipeline(chunk).ok());
    chunk[kFilterBytes + 4] = 200;
    CHECK_THAT(ErrorOf(CheckChunkPipeline(chunk)), Catch::Contains("filter id 200"));
    chunk = Compress(BLOSC_ZSTD, kShuffle);
    chunk[kFilterBytes + 5] = 200;  // current format: the sixth filter counts
    CHECK_THAT(ErrorOf(CheckChunkPipeline(chunk)), Catch::Contains("filter id 200"));
  }
  SECTION("a truncated extended header") {
    const Bytes chunk = Compress(BLOSC_ZSTD, kShuffle);
    for (size_t n : {0, 15, 16, 31}) {
      CHECK(CheckChunkPipeline(std::span(chunk).first(n)).error_number() == EIO);
    }
    CHECK(CheckChunkPipeline(std::span(chunk).first(32)).ok());
  }
}

TEST_CASE("built-in codecs and filters pass and decode") {
  const Bytes data = Data();
  Decompressor d;
  for (int codec : {BLOSC_BLOSCLZ, BLOSC_LZ4, BLOSC_LZ4HC, BLOSC_ZLIB, BLOSC_ZSTD}) {
    for (const Filters& f :
         {Filters{0, 0, 0, 0, 0, 0}, kShuffle, Filters{0, 0, 0, 0, 0, BLOSC_BITSHUFFLE},
          Filters{0, 0, 0, 0, BLOSC_DELTA, BLOSC_SHUFFLE},
          Filters{0, 0, 0, 0, BLOSC_TRUNC_PREC, BLOSC_SHUFFLE},
          Filters{0, 0, 0, 0, BLOSC_SHUFFLE, 35 /* bytedelta */},
          Filters{0, 0, 0, 0, BLOSC_SHUFFLE, 34 /* bytedelta_buggy */}}) {
      INFO("codec " << codec << " filters " << int{f[4]} << "," << int{f[5]});
      const Bytes chunk = Compress(codec, f);
      CHECK(CheckChunkPipeline(chunk).ok());
      CHECK(InspectChunk(chunk).ok());
      Bytes out(data.size());
      const Status s = d.DecompressAll(chunk, out);
      INFO(ErrorOf(s));
      REQUIRE(s.ok());
      if (f[4] != BLOSC_TRUNC_PREC) CHECK(out == data);  // trunc_prec is lossy
    }
  }
  // Built-in registered codecs and filters, as header bytes (their encoders
  // need b2nd parameters): the check lets them through.
  for (uint8_t id = 32; id <= 35; ++id) CHECK(CheckChunkPipeline(NamingCodec(id)).ok());
  for (uint8_t id = 32; id <= 36; ++id) {
    for (int slot = 0; slot < BLOSC2_MAX_FILTERS; ++slot) {
      CHECK(CheckChunkPipeline(NamingFilter(id, slot)).ok());
    }
  }
}

TEST_CASE("every header byte value: refused exactly when not built in") {
  const Bytes base = Compress(BLOSC_ZSTD, kShuffle);
  for (int id = 0; id < 256; ++id) {
    INFO("id " << id);
    const bool codec_builtin = id >= 32 && id <= 35;
    CHECK(CheckChunkPipeline(NamingCodec(static_cast<uint8_t>(id), base)).ok() == codec_builtin);
    const bool filter_builtin = id <= 4 || (id >= 32 && id <= 36);
    Bytes chunk = base;
    chunk[kFilterBytes + 2] = static_cast<uint8_t>(id);
    CHECK(CheckChunkPipeline(chunk).ok() == filter_builtin);
  }
}

TEST_CASE("UnsupportedPipeline describes the frame") {
  const Filters none{};
  CHECK_FALSE(UnsupportedPipeline(BLOSC_ZSTD, BLOSC_ZSTD, kShuffle));
  CHECK_FALSE(UnsupportedPipeline(BLOSC_LZ4HC, 0, none));
  CHECK_FALSE(UnsupportedPipeline(6, 33, Filters{0, 0, 0, 32, 35, 36}));
  // A frame's udcodec is the codec id whatever it is (frame.c).
  CHECK_FALSE(UnsupportedPipeline(6, BLOSC_ZLIB, none));
  CHECK(UnsupportedPipeline(6, 37, kShuffle) ==
        "codec grok (id 37) needs the external plugin blosc2_grok, which b2ndfs never loads");
  // The udcodec byte only counts under codec 6 (c-blosc2 writes the compcode there).
  CHECK_FALSE(UnsupportedPipeline(BLOSC_ZSTD, 37, none));
  const auto both = UnsupportedPipeline(6, 200, Filters{0, 0, 0, 0, 180, 180});
  REQUIRE(both);
  CHECK(*both ==
        "codec id 200 is a user-registered codec; it needs an external plugin, which b2ndfs never "
        "loads; filter id 180 is a user-registered filter; it needs an external plugin, which "
        "b2ndfs never loads");
  CHECK_THAT(UnsupportedPipeline(3, 0, none).value_or(""),
             Catch::Contains("codec snappy (id 3) is not built into c-blosc2 " +
                             b2ndfs::codec::LibraryVersion()));
  CHECK_THAT(UnsupportedPipeline(9, 0, none).value_or(""),
             Catch::Contains("the frame header is damaged: it names codec id 9"));
  CHECK_THAT(UnsupportedPipeline(BLOSC_ZSTD, 0, Filters{0, 0, 0, 0, 0, 7}).value_or(""),
             Catch::Contains("the frame header is damaged: it names filter id 7, which"));
}

TEST_CASE("codec names are c-blosc2's") {
  for (int id = 0; id < 256; ++id) {
    INFO("id " << id);
    // c-blosc2's own name wherever it has one (built-in and registered codecs).
    const char* name = nullptr;
    blosc2_compcode_to_compname(id, &name);
    if (name != nullptr) CHECK(b2ndfs::CodecIdName(id) == name);
    CHECK(b2ndfs::CodecName(6, static_cast<uint8_t>(id)) == b2ndfs::CodecIdName(id));
  }
  CHECK(b2ndfs::CodecIdName(37) == "grok");
  CHECK(b2ndfs::FilterIdName(36) == "int_trunc");
  CHECK(b2ndfs::FilterIdName(200) == "user-registered:200");
}

TEST_CASE("LibraryVersion is the linked c-blosc2's") {
  CHECK(b2ndfs::codec::LibraryVersion() == blosc2_get_version_string());
  CHECK(b2ndfs::codec::LibraryVersion().rfind(std::to_string(BLOSC2_VERSION_MAJOR) + ".", 0) == 0);
}

// ---- variable-length blocks (chunk format 6, c-blosc2 3.3) --------------------

TEST_CASE("chunks with variable-length blocks are one block, decoded whole") {
  std::vector<int32_t> items(4000);
  for (size_t i = 0; i < items.size(); ++i) items[i] = static_cast<int32_t>(i * 2654435761u);
  const void* srcs[3] = {items.data(), items.data() + 100, items.data() + 3100};
  const int32_t sizes[3] = {400, 12000, 200};
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = 4;
  cparams.compcode = BLOSC_ZSTD;
  blosc2_context* cctx = blosc2_create_cctx(cparams);
  REQUIRE(cctx != nullptr);
  Bytes chunk(12600 + 3 * BLOSC2_MAX_OVERHEAD);
  const int cbytes =
      blosc2_vlcompress_ctx(cctx, srcs, sizes, 3, chunk.data(), static_cast<int32_t>(chunk.size()));
  blosc2_free_ctx(cctx);
  REQUIRE(cbytes > 0);
  chunk.resize(static_cast<size_t>(cbytes));
  REQUIRE(chunk[0] == BLOSC2_VERSION_FORMAT_VL_BLOCKS);

  auto info = InspectChunk(chunk);
  REQUIRE(info.ok());
  CHECK(info->vl_blocks);
  CHECK(info->needs_whole_chunk);
  CHECK(info->nbytes == 12600);
  CHECK(info->nblocks == 3);  // the header's blocksize field
  CHECK(info->blocksize == 12600);
  CHECK(b2ndfs::codec::ChunkHeadSize(*info) == BLOSC_EXTENDED_HEADER_LENGTH + 3 * 4);
  // Byte for byte what went in: the blocks concatenated.
  Bytes expected(12600);
  std::memcpy(expected.data(), items.data(), 400);
  std::memcpy(expected.data() + 400, items.data() + 100, 12000);
  std::memcpy(expected.data() + 12400, items.data() + 3100, 200);
  Decompressor d;
  Bytes out(12600);
  REQUIRE(d.DecompressAll(chunk, out).ok());
  CHECK(out == expected);
  for (auto [offset, length] : {std::pair{0, 10}, {397, 9}, {401, 12199}, {12590, 10}}) {
    Bytes part(static_cast<size_t>(length));
    Status st = d.DecompressRange(chunk, offset, part);
    INFO(offset << "+" << length << ": " << st.message());
    REQUIRE(st.ok());
    CHECK(part == Bytes(expected.begin() + offset, expected.begin() + offset + length));
  }
  CHECK_FALSE(b2ndfs::codec::SpanForRange(chunk, *info, 0, 10).ok());
  // A hostile block count: the head it implies outgrows the chunk (which the
  // store refuses before reading it), and decoding fails cleanly.
  Bytes bad = chunk;
  const int32_t many = 1 << 20;
  std::memcpy(bad.data() + 8, &many, 4);
  auto hostile = InspectChunkHeader(bad);
  REQUIRE(hostile.ok());
  CHECK(hostile->nblocks == many);
  CHECK(b2ndfs::codec::ChunkHeadSize(*hostile) > hostile->cbytes);
  CHECK_FALSE(d.DecompressAll(bad, out).ok());
}

}  // namespace

namespace {

// c-blosc2 3.3.5 compressing an incompressible buffer with a dictionary
// writes a chunk flagged stored-uncompressed that is laid out as compressed
// blocks (8 bytes of block offset and size before the data): c-blosc2 cannot
// decompress it, and a reader taking the bytes after the header would serve
// them shifted.
TEST_CASE("a stored-uncompressed chunk of the wrong size is refused") {
  b2ndfs::codec::EnsureInitialized();
  const char payload[] = "\xaah\xc3\xa9llo \xe2\x9c\x93";
  const int32_t n = 11;
  for (int use_dict : {0, 1}) {
    blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
    cp.compcode = BLOSC_ZSTD;
    cp.clevel = 5;
    cp.typesize = 1;
    cp.use_dict = use_dict;
    cp.nthreads = 1;
    blosc2_context* ctx = blosc2_create_cctx(cp);
    Bytes chunk(n + BLOSC2_MAX_OVERHEAD + 64);
    const int size =
        blosc2_compress_ctx(ctx, payload, n, chunk.data(), static_cast<int32_t>(chunk.size()));
    blosc2_free_ctx(ctx);
    REQUIRE(size > 0);
    chunk.resize(static_cast<size_t>(size));
    REQUIRE((chunk[2] & BLOSC_MEMCPYED) != 0);
    INFO("use_dict " << use_dict);
    if (use_dict == 0) {
      CHECK(InspectChunk(chunk).ok());
    } else {
      CHECK_THAT(ErrorOf(InspectChunkHeader(chunk)), Catch::Contains("stored uncompressed"));
    }
  }
}

}  // namespace
