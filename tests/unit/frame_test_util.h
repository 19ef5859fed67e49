// Helpers shared by the frame unit tests (frame_test.cc,
// frame_malformed_test.cc): frames written by c-blosc2 in memory and as b2nd
// arrays, parsed through an in-memory ReadAt, and errors read back.
#pragma once

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

namespace b2ndfs::format::testing {

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
inline const BloscInit blosc_init;

inline ReadAt ReaderOf(const Bytes& bytes) {
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

inline Result<FrameInfo> Parse(const Bytes& bytes) {
  return ParseFrame(ReaderOf(bytes), static_cast<int64_t>(bytes.size()));
}

inline std::string ErrorOf(const Result<FrameInfo>& r) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().error_number() == EIO);
  return r.status().message();
}

inline Bytes ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline Bytes ToBuffer(blosc2_schunk* sc) {
  uint8_t* buffer = nullptr;
  bool needs_free = false;
  const int64_t len = blosc2_schunk_to_buffer(sc, &buffer, &needs_free);
  REQUIRE(len > 0);
  Bytes out(buffer, buffer + len);
  if (needs_free) free(buffer);
  return out;
}

inline int32_t LittleInt32(const uint8_t* p) {
  return static_cast<int32_t>(uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
                              uint32_t{p[3]} << 24);
}

inline std::vector<int64_t> DecompressIndex(const Bytes& frame_file, const FrameInfo& info) {
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

inline blosc2_cparams Cparams(int compcode, int typesize) {
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
inline blosc2_schunk* MakeSchunk(blosc2_cparams* cparams, blosc2_storage* storage,
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

struct B2ndArray {
  b2nd_context_t* ctx = nullptr;
  b2nd_array_t* array = nullptr;
  ~B2ndArray() {
    if (array) b2nd_free(array);
    if (ctx) b2nd_free_ctx(ctx);
  }
};

inline Bytes ToCframe(const b2nd_array_t* array) {
  uint8_t* cframe = nullptr;
  int64_t len = 0;
  bool needs_free = false;
  REQUIRE(b2nd_to_cframe(array, &cframe, &len, &needs_free) == 0);
  Bytes out(cframe, cframe + len);
  if (needs_free) free(cframe);
  return out;
}

}  // namespace b2ndfs::format::testing
