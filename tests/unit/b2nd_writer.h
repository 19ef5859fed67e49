#pragma once
// Writes a contiguous b2nd container with c-blosc2's own API, for unit tests
// that read it back through the store and compare with c-blosc2.
#include <b2nd.h>
#include <blosc2.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

namespace b2ndfs::testing {

// The array of `nbytes` at `data`, written to `path` with `cparams` (its
// nthreads and typesize included) as a contiguous frame; the caller frees the
// array (b2nd_free) it returns open.
inline b2nd_array_t* WriteContiguous(const std::string& path, blosc2_cparams cparams, int8_t ndim,
                                     const int64_t* shape, const int32_t* chunks,
                                     const int32_t* blocks, const char* dtype, const void* data,
                                     int64_t nbytes) {
  blosc2_init();
  blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
  std::string url = path;
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  storage.urlpath = url.data();
  storage.cparams = &cparams;
  storage.dparams = &dparams;
  b2nd_context_t* ctx =
      b2nd_create_ctx(&storage, ndim, shape, chunks, blocks, dtype, DTYPE_NUMPY_FORMAT, nullptr, 0);
  REQUIRE(ctx != nullptr);
  b2nd_array_t* array = nullptr;
  const int rc = b2nd_from_cbuffer(ctx, &array, data, nbytes);
  b2nd_free_ctx(ctx);
  REQUIRE(rc == 0);
  return array;
}

}  // namespace b2ndfs::testing
