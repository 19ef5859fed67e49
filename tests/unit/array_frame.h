#pragma once
// A float32 array written by c-blosc2 as a contiguous frame, for tests that
// serve it from a fake source tree (fuse_adapter.h, vfs_read_ahead_test):
// the frame's bytes and the array's C-order bytes to compare reads with.
#include <b2nd.h>
#include <blosc2.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "b2nd_writer.h"
#include "temp_dir.h"

namespace b2ndfs::testing {

using Bytes = std::vector<uint8_t>;  // as fake_tree.h

// A float32 array of `shape` written by c-blosc2 as a frame: the frame's
// bytes and the array's C-order bytes.
struct Array {
  Bytes frame;
  Bytes data;
};

inline Array MakeArray(std::vector<int64_t> shape, std::vector<int32_t> chunks,
                       std::vector<int32_t> blocks, float seed,
                       uint8_t compcode = BLOSC2_CPARAMS_DEFAULTS.compcode) {
  TempDir dir("b2ndfs_array");
  const std::string path = (dir.path / "a.b2nd").string();
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    values[static_cast<size_t>(i)] = seed + static_cast<float>(i % 977);
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = 4;
  cparams.nthreads = 1;
  cparams.compcode = compcode;
  b2nd_array_t* array =
      WriteContiguous(path, cparams, static_cast<int8_t>(shape.size()), shape.data(), chunks.data(),
                      blocks.data(), "<f4", values.data(), n * 4);
  b2nd_free(array);
  std::ifstream in(path, std::ios::binary);
  Array out;
  out.frame.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  out.data.resize(static_cast<size_t>(n * 4));
  std::memcpy(out.data.data(), values.data(), out.data.size());
  return out;
}

}  // namespace b2ndfs::testing
