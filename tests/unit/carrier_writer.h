#pragma once
// Containers for carrier tests (vfs_provenance_test, vfs_carrier_test):
// int32 operands and carriers (a saved LazyExpr of one operand, o0) as
// python-blosc2 writes them, with c-blosc2's own API.
#include <b2nd.h>
#include <blosc2.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <msgpack.hpp>
#include <string>
#include <vector>

#include "b2nd_writer.h"

namespace b2ndfs::testing {

// Writes a b2nd container of int32 `values` with one chunk of `blocks`.
inline void WriteInt32(const std::string& path, const std::vector<int64_t>& shape,
                       const std::vector<int32_t>& chunks, const std::vector<int32_t>& blocks,
                       const std::vector<int32_t>& values) {
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = 4;
  cparams.nthreads = 1;
  cparams.compcode = BLOSC_LZ4;
  b2nd_free(WriteContiguous(path, cparams, static_cast<int8_t>(shape.size()), shape.data(),
                            chunks.data(), blocks.data(), "<i4", values.data(),
                            static_cast<int64_t>(values.size()) * 4));
}

// A saved LazyExpr as python-blosc2 writes it (tests/fixtures/make_lazy.cc):
// an empty int32 array with metalayer and vlmeta "b2o".
inline void WriteCarrier(const std::string& path, const std::vector<int64_t>& shape,
                         const std::vector<int32_t>& chunks, const std::vector<int32_t>& blocks,
                         const std::string& expression, const std::string& operand_path) {
  msgpack::sbuffer tag;
  {
    msgpack::packer<msgpack::sbuffer> p(tag);
    p.pack_map(2);
    p.pack("kind");
    p.pack("lazyexpr");
    p.pack("version");
    p.pack(1);
  }
  msgpack::sbuffer recipe;
  {
    msgpack::packer<msgpack::sbuffer> p(recipe);
    p.pack_map(4);
    p.pack("kind");
    p.pack("lazyexpr");
    p.pack("version");
    p.pack(1);
    p.pack("expression");
    p.pack(expression);
    p.pack("operands");
    p.pack_map(1);
    p.pack("o0");
    p.pack_map(3);
    p.pack("kind");
    p.pack("urlpath");
    p.pack("version");
    p.pack(1);
    p.pack("urlpath");
    p.pack(operand_path);
  }
  blosc2_init();
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = 4;
  cparams.nthreads = 1;
  blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
  std::string url = path;
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  storage.urlpath = url.data();
  storage.cparams = &cparams;
  storage.dparams = &dparams;
  char name[] = "b2o";
  blosc2_metalayer meta{name, reinterpret_cast<uint8_t*>(tag.data()),
                        static_cast<int32_t>(tag.size())};
  b2nd_context_t* ctx =
      b2nd_create_ctx(&storage, static_cast<int8_t>(shape.size()), shape.data(), chunks.data(),
                      blocks.data(), "<i4", DTYPE_NUMPY_FORMAT, &meta, 1);
  REQUIRE(ctx != nullptr);
  b2nd_array_t* array = nullptr;
  REQUIRE(b2nd_uninit(ctx, &array) == 0);
  b2nd_free_ctx(ctx);
  REQUIRE(blosc2_vlmeta_add(array->sc, "b2o", reinterpret_cast<uint8_t*>(recipe.data()),
                            static_cast<int32_t>(recipe.size()), nullptr) >= 0);
  b2nd_free(array);
}

}  // namespace b2ndfs::testing
