// Unit tests of codec/binding and the bound Decompressor: chunks of arrays
// written by c-blosc2's b2nd API with codecs and filters that read the
// super-chunk (ZFP, NDCELL, NDMEAN, BYTEDELTA meta 0) are refused by an
// unbound context (before c-blosc2 sees them: the fixed-rate ZFP getitem that
// crashes a bare context is among them), decode byte-exact with a bound one
// (compared with c-blosc2 decoding the chunk through the array's own
// super-chunk), and a bound context refuses chunks and geometry that do not
// fit it.
#include <b2nd.h>
#include <blosc2.h>
#include <blosc2/codecs-registry.h>
#include <blosc2/filters-registry.h>

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "b2ndfs/codec/binding.h"
#include "b2ndfs/codec/decompressor.h"

namespace {

using b2ndfs::Status;
using b2ndfs::codec::ArrayBinding;
using b2ndfs::codec::ArrayGeometry;
using b2ndfs::codec::Decompressor;
using Bytes = std::vector<uint8_t>;

struct Config {
  int typesize;
  std::vector<int64_t> shape;
  std::vector<int32_t> chunks;
  std::vector<int32_t> blocks;
  uint8_t codec;
  uint8_t codec_meta = 0;
  std::array<uint8_t, BLOSC2_MAX_FILTERS> filters{};
  std::array<uint8_t, BLOSC2_MAX_FILTERS> filters_meta{};
};

// An in-memory b2nd array written by c-blosc2, its chunk 0, and chunk 0 as
// c-blosc2 decodes it through the array's super-chunk.
struct Written {
  Config config;
  Bytes chunk;
  Bytes decoded;
  int32_t blocksize = 0;
};

Written Write(const Config& c) {
  b2ndfs::codec::EnsureInitialized();
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.compcode = c.codec;
  cp.compcode_meta = c.codec_meta;
  cp.typesize = c.typesize;
  cp.nthreads = 1;
  for (int i = 0; i < BLOSC2_MAX_FILTERS; ++i) {
    cp.filters[i] = c.filters[i];
    cp.filters_meta[i] = c.filters_meta[i];
  }
  blosc2_dparams dp = BLOSC2_DPARAMS_DEFAULTS;
  blosc2_storage st = BLOSC2_STORAGE_DEFAULTS;
  st.cparams = &cp;
  st.dparams = &dp;
  std::unique_ptr<b2nd_context_t, int (*)(b2nd_context_t*)> ctx(
      b2nd_create_ctx(&st, static_cast<int8_t>(c.shape.size()), c.shape.data(), c.chunks.data(),
                      c.blocks.data(), c.typesize == 8 ? "<f8" : "<f4", 0, nullptr, 0),
      b2nd_free_ctx);
  REQUIRE(ctx != nullptr);
  int64_t n = 1;
  for (int64_t s : c.shape) n *= s;
  Bytes data(static_cast<size_t>(n * c.typesize));
  for (int64_t i = 0; i < n; ++i) {
    const double v = std::sin(static_cast<double>(i) * 0.01) * 100 + static_cast<double>(i % 7);
    if (c.typesize == 8) {
      std::memcpy(&data[static_cast<size_t>(i) * 8], &v, 8);
    } else {
      const auto f = static_cast<float>(v);
      std::memcpy(&data[static_cast<size_t>(i) * 4], &f, 4);
    }
  }
  b2nd_array_t* raw = nullptr;
  REQUIRE(b2nd_from_cbuffer(ctx.get(), &raw, data.data(), static_cast<int64_t>(data.size())) >= 0);
  std::unique_ptr<b2nd_array_t, int (*)(b2nd_array_t*)> array(raw, b2nd_free);
  uint8_t* chunk = nullptr;
  bool needs_free = false;
  const int cbytes = blosc2_schunk_get_chunk(array->sc, 0, &chunk, &needs_free);
  REQUIRE(cbytes > 0);
  Written w{c, Bytes(chunk, chunk + cbytes), {}, array->sc->blocksize};
  if (needs_free) std::free(chunk);
  int32_t nbytes = 0;
  REQUIRE(blosc2_cbuffer_sizes(w.chunk.data(), &nbytes, nullptr, nullptr) >= 0);
  w.decoded.resize(static_cast<size_t>(nbytes));
  REQUIRE(blosc2_schunk_decompress_chunk(array->sc, 0, w.decoded.data(), nbytes) == nbytes);
  return w;
}

ArrayGeometry GeometryOf(const Config& c) {
  return ArrayGeometry{
      c.shape, {c.chunks.begin(), c.chunks.end()}, {c.blocks.begin(), c.blocks.end()}};
}

std::shared_ptr<const ArrayBinding> Bind(const Written& w) {
  auto binding = ArrayBinding::Create(w.config.typesize, w.blocksize, GeometryOf(w.config));
  INFO(binding.status().message());
  REQUIRE(binding.ok());
  return *binding;
}

Config Zfp(uint8_t codec, uint8_t meta, int typesize, std::vector<int64_t> shape,
           std::vector<int32_t> chunks, std::vector<int32_t> blocks) {
  return Config{typesize, std::move(shape), std::move(chunks), std::move(blocks), codec, meta};
}

Config Filtered(uint8_t filter, uint8_t meta, int typesize) {
  Config c{typesize, {40, 33}, {20, 16}, {8, 8}, BLOSC_ZSTD};
  c.filters = {0, 0, 0, 0, filter, BLOSC_SHUFFLE};
  c.filters_meta = {0, 0, 0, 0, meta, 0};
  return c;
}

// Every block of the chunk, then a range inside block 1, as c-blosc2 decodes it.
void CheckDecodes(Decompressor& d, const Written& w) {
  Bytes out(w.decoded.size());
  Status st = d.DecompressAll(w.chunk, out);
  INFO(st.message());
  REQUIRE(st.ok());
  CHECK(out == w.decoded);
  const int64_t bs = w.blocksize;
  for (int64_t off = 0; off < static_cast<int64_t>(w.decoded.size()); off += bs) {
    Bytes block(static_cast<size_t>(bs));
    st = d.DecompressRange(w.chunk, off, block);
    INFO("block at " << off << ": " << st.message());
    REQUIRE(st.ok());
    CHECK(block == Bytes(w.decoded.begin() + off, w.decoded.begin() + off + bs));
  }
  Bytes part(static_cast<size_t>(bs / 2 + 3));
  REQUIRE(d.DecompressRange(w.chunk, bs + 5, part).ok());
  CHECK(part == Bytes(w.decoded.begin() + bs + 5, w.decoded.begin() + bs + 5 + bs / 2 + 3));
}

void CheckRefusedUnbound(const Written& w, const std::string& words) {
  auto info = b2ndfs::codec::InspectChunk(w.chunk);
  REQUIRE(info.ok());
  CHECK(info->needs.any());
  Decompressor d;
  Bytes out(w.decoded.size());
  Status st = d.DecompressAll(w.chunk, out);
  CHECK_FALSE(st.ok());
  CHECK(st.message().find(words) != std::string::npos);
  Bytes part(16);
  CHECK_FALSE(d.DecompressRange(w.chunk, 0, part).ok());
}

TEST_CASE("ZFP, NDCELL, NDMEAN and BYTEDELTA meta 0 need a bound context") {
  const std::vector<Config> configs = {
      Zfp(BLOSC_CODEC_ZFP_FIXED_ACCURACY, static_cast<uint8_t>(-3), 4, {20, 18, 17}, {12, 10, 9},
          {4, 8, 4}),
      Zfp(BLOSC_CODEC_ZFP_FIXED_PRECISION, 20, 8, {40, 33}, {20, 16}, {8, 8}),
      Zfp(BLOSC_CODEC_ZFP_FIXED_RATE, 50, 4, {40, 33}, {20, 16}, {8, 8}),
      Zfp(BLOSC_CODEC_ZFP_FIXED_RATE, 40, 8, {300}, {100}, {20}),
      // One-cell 4-D blocks: c-blosc2's own getitem (ZFP's cell decoder)
      // fails on them; b2ndfs decodes fixed-rate chunks whole.
      Zfp(BLOSC_CODEC_ZFP_FIXED_RATE, 60, 4, {9, 8, 9, 8}, {8, 8, 8, 8}, {4, 4, 4, 4}),
      Filtered(BLOSC_FILTER_NDCELL, 4, 4),
      Filtered(BLOSC_FILTER_NDMEAN, 4, 8),
  };
  for (const Config& c : configs) {
    const Written w = Write(c);
    INFO("codec " << int{c.codec} << ", filter " << int{c.filters[4]} << ", ndim "
                  << c.shape.size());
    CheckRefusedUnbound(w, "reads the array's shape");
    Decompressor bound(Bind(w));
    CheckDecodes(bound, w);
  }
  Config bytedelta = Filtered(0, 0, 4);
  bytedelta.filters = {0, 0, 0, 0, BLOSC_SHUFFLE, BLOSC_FILTER_BYTEDELTA};
  const Written w = Write(bytedelta);
  CheckRefusedUnbound(w, "reads the item size");
  // The item size is all it needs: a plain super-chunk's binding will do.
  auto plain = ArrayBinding::Create(4, w.blocksize, std::nullopt);
  REQUIRE(plain.ok());
  Decompressor d(*plain);
  CheckDecodes(d, w);
}

TEST_CASE("fixed-rate ZFP is never decoded through getitem") {
  const Written w = Write(Zfp(BLOSC_CODEC_ZFP_FIXED_RATE, 50, 4, {40, 33}, {20, 16}, {8, 8}));
  auto info = b2ndfs::codec::InspectChunk(w.chunk);
  REQUIRE(info.ok());
  CHECK(info->needs_whole_chunk);
  // Split into byte streams (flags bit 4 cleared), the chunk needs no
  // geometry as far as the header says; an unbound context must still fail
  // cleanly, not reach ZFP's cell decoder with no super-chunk.
  Bytes split = w.chunk;
  split[2] &= static_cast<uint8_t>(~0x10);
  Decompressor bare;
  Bytes part(16);
  CHECK_FALSE(bare.DecompressRange(split, 4, part).ok());
  // A bound context refuses it: ZFP would write a whole block into a stream.
  Decompressor bound(Bind(w));
  Bytes out(w.decoded.size());
  Status st = bound.DecompressAll(split, out);
  CHECK_FALSE(st.ok());
  CHECK(st.message().find("split into byte streams") != std::string::npos);
}

TEST_CASE("ArrayBinding refuses geometry that disagrees with the blocks") {
  const ArrayGeometry g{{40, 33}, {20, 16}, {8, 8}};
  CHECK(ArrayBinding::Create(4, 256, g).ok());
  CHECK_FALSE(ArrayBinding::Create(4, 512, g).ok());  // blocks of 128 items
  CHECK_FALSE(ArrayBinding::Create(8, 256, g).ok());
  CHECK_FALSE(ArrayBinding::Create(0, 256, g).ok());
  CHECK_FALSE(ArrayBinding::Create(256, 256 * 64, g).ok());
  CHECK_FALSE(ArrayBinding::Create(4, 256, ArrayGeometry{{40, 33}, {20, 16}, {8, 8, 1}}).ok());
  CHECK_FALSE(ArrayBinding::Create(4, 256, ArrayGeometry{{40, 33}, {4, 16}, {8, 8}}).ok());
  CHECK_FALSE(ArrayBinding::Create(4, 4, ArrayGeometry{}).ok());  // 0-D
  // c-blosc2's plugins hold at most 8 axes.
  const ArrayGeometry nine{std::vector<int64_t>(9, 2), std::vector<int64_t>(9, 1),
                           std::vector<int64_t>(9, 1)};
  CHECK_FALSE(ArrayBinding::Create(4, 4, nine).ok());
  CHECK(ArrayBinding::Create(4, 4, std::nullopt).ok());
}

TEST_CASE("the b2nd metalayer is laid out as c-blosc2 writes it") {
  const ArrayGeometry g{{40, 33, 70000000000}, {20, 16, 5}, {8, 8, 1}};
  const int64_t shape[] = {40, 33, 70000000000};
  const int32_t chunks[] = {20, 16, 5};
  const int32_t blocks[] = {8, 8, 1};
  uint8_t* smeta = nullptr;
  char dtype[] = "|V4";
  const int32_t len = b2nd_serialize_meta(3, shape, chunks, blocks, dtype, 0, &smeta);
  REQUIRE(len > 0);
  const Bytes expected(smeta, smeta + len);
  std::free(smeta);
  CHECK(b2ndfs::codec::SerializeB2ndMeta(g, 4) == expected);
}

TEST_CASE("a bound context refuses chunks that do not fit its array") {
  const Written w = Write(Filtered(BLOSC_FILTER_NDCELL, 4, 4));
  Bytes out(w.decoded.size());
  // Same block size, other shape: consistent, but not this array's typesize.
  auto other = ArrayBinding::Create(8, w.blocksize, ArrayGeometry{{40, 33}, {20, 16}, {8, 4}});
  REQUIRE(other.ok());
  CHECK_FALSE(Decompressor(*other).DecompressAll(w.chunk, out).ok());
  // Other block size.
  auto bigger =
      ArrayBinding::Create(4, w.blocksize * 2, ArrayGeometry{{40, 33}, {20, 16}, {16, 8}});
  REQUIRE(bigger.ok());
  CHECK_FALSE(Decompressor(*bigger).DecompressAll(w.chunk, out).ok());
  // No geometry (a plain super-chunk): c-blosc2 cannot decode NDCELL there.
  auto plain = ArrayBinding::Create(4, w.blocksize, std::nullopt);
  REQUIRE(plain.ok());
  Status st = Decompressor(*plain).DecompressAll(w.chunk, out);
  CHECK_FALSE(st.ok());
  CHECK(st.message().find("plain super-chunk") != std::string::npos);
  // NDCELL's cell length is a divisor in c-blosc2: 0 and negatives refused.
  Decompressor bound(Bind(w));
  for (uint8_t cell : {uint8_t{0}, uint8_t{0x80}, uint8_t{0xff}, uint8_t{9}}) {
    Bytes bad = w.chunk;
    bad[24 + 4] = cell;  // filters_meta of slot 4
    INFO("cell " << int{cell});
    CHECK_FALSE(bound.DecompressAll(bad, out).ok());
  }
  // Lazy chunks would be read from the super-chunk's frame, which it lacks.
  Bytes lazy = w.chunk;
  lazy[31] |= 0x08;
  CHECK_FALSE(bound.DecompressAll(lazy, out).ok());
  CHECK(bound.DecompressAll(w.chunk, out).ok());
  CHECK(out == w.decoded);
}

}  // namespace
