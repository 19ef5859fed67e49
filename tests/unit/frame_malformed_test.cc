// Unit tests of format/frame: malformed, truncated and mutated frames that
// must fail cleanly (the frames c-blosc2 writes: frame_test.cc).
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

#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/ndmeta.h"
#include "frame_test_util.h"

namespace {

using b2ndfs::Result;
using b2ndfs::format::ParseFrame;
using b2ndfs::format::ReadAt;
using b2ndfs::format::testing::B2ndArray;
using b2ndfs::format::testing::Bytes;
using b2ndfs::format::testing::Cparams;
using b2ndfs::format::testing::ErrorOf;
using b2ndfs::format::testing::MakeSchunk;
using b2ndfs::format::testing::Parse;
using b2ndfs::format::testing::ReaderOf;
using b2ndfs::format::testing::ToBuffer;
using b2ndfs::format::testing::ToCframe;

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
