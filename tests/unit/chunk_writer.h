#pragma once
// Compresses one Blosc2 chunk with c-blosc2's own API, for unit tests that
// decode it through the codec layer and compare with the bytes given.
#include <blosc2.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

namespace b2ndfs::testing {

// `data` as one chunk made with `cparams` (a context of its own).
inline std::vector<uint8_t> CompressChunk(const std::vector<uint8_t>& data,
                                          const blosc2_cparams& cparams) {
  blosc2_init();
  blosc2_context* cctx = blosc2_create_cctx(cparams);
  REQUIRE(cctx != nullptr);
  std::vector<uint8_t> out(data.size() + BLOSC2_MAX_OVERHEAD);
  const int n = blosc2_compress_ctx(cctx, data.data(), static_cast<int32_t>(data.size()),
                                    out.data(), static_cast<int32_t>(out.size()));
  blosc2_free_ctx(cctx);
  REQUIRE(n > 0);
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace b2ndfs::testing
