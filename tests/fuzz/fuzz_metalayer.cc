// fuzz_metalayer: the shape metalayer decoders, NumPy dtype parsing and
// msgpack -> JSON, all fed the raw input (format/ndmeta.h, meta_json.h).
//
// Beyond "does not crash", it checks what the headers promise: a decoded
// metalayer satisfies every documented bound (so the store can trust it), a
// dtype's item size is positive, an .npy descr is a non-empty Python literal
// without a newline, and MsgpackToJson output is valid JSON of at most
// 16 MiB.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include "b2ndfs/format/meta_json.h"
#include "b2ndfs/format/ndmeta.h"
#include "b2ndfs/util/checked_math.h"
#include "fuzz_common.h"

namespace b2ndfs::fuzz {
namespace {

void CheckNdMeta(const format::NdMeta& m, bool b2nd) {
  FUZZ_CHECK(m.format == "b2nd" || m.format == "caterva", "format " + m.format);
  FUZZ_CHECK(m.ndim >= 0 && m.ndim <= format::kMaxNdim, "ndim " + std::to_string(m.ndim));
  FUZZ_CHECK(m.version >= 0 && m.version <= 127, "version");
  const auto n = static_cast<size_t>(m.ndim);
  FUZZ_CHECK(m.shape.size() == n && m.chunkshape.size() == n && m.blockshape.size() == n,
             "shape arrays do not have ndim entries");
  for (size_t i = 0; i < n; ++i) {
    FUZZ_CHECK(m.shape[i] >= 0, "negative shape");
    FUZZ_CHECK(m.chunkshape[i] >= 1 && m.chunkshape[i] <= std::numeric_limits<int32_t>::max(),
               "chunkshape out of 1..INT32_MAX");
    FUZZ_CHECK(m.blockshape[i] >= 1 && m.blockshape[i] <= m.chunkshape[i],
               "blockshape out of 1..chunkshape");
  }
  FUZZ_CHECK(CheckedProduct(m.shape).has_value(), "prod(shape) overflows");
  FUZZ_CHECK(CheckedProduct(m.chunkshape).has_value(), "prod(chunkshape) overflows");
  if (!m.has_blockshape) FUZZ_CHECK(m.blockshape == m.chunkshape, "implied blockshape");
  if (b2nd) {
    FUZZ_CHECK(m.format == "b2nd", "b2nd decoder returned " + m.format);
  } else {
    FUZZ_CHECK(m.format == "caterva", "caterva decoder returned " + m.format);
    FUZZ_CHECK(!m.dtype && !m.dtype_format, "caterva metalayer with a dtype");
  }
  if (m.dtype_format) {
    FUZZ_CHECK(*m.dtype_format >= 0 && *m.dtype_format <= 127, "dtype_format");
  }
  if (m.dtype) {
    FUZZ_CHECK(m.dtype->size() <= format::kMaxDtypeLength, "dtype too long");
    for (char c : *m.dtype) {
      FUZZ_CHECK(c >= 0x20 && c < 0x7f, "dtype is not printable ASCII");
    }
    if (auto size = format::DtypeItemSize(*m.dtype)) {
      // When the item size is known, prod(shape) * itemsize must fit too.
      auto items = CheckedProduct(m.shape);
      FUZZ_CHECK(items && CheckedMul(*items, *size).has_value(), "nbytes overflows");
    }
  }
}

void CheckDescr(const std::string& descr) {
  FUZZ_CHECK(!descr.empty(), "empty npy descr");
  FUZZ_CHECK(descr.find('\n') == std::string::npos, "npy descr with a newline: " + descr);
  FUZZ_CHECK(descr.front() == '\'' || descr.front() == '"' || descr.front() == '[',
             "npy descr is not a literal: " + descr);
}

void CheckDtype(const std::string& dtype, int64_t fallback_itemsize) {
  const auto size = format::DtypeItemSize(dtype);
  if (size) FUZZ_CHECK(*size > 0, "dtype item size " + std::to_string(*size));
  const std::string descr = format::NpyDescr(dtype, size ? *size : fallback_itemsize);
  CheckDescr(descr);
  if (!size) {
    // Unknown item size: the descr must be the opaque void type.
    FUZZ_CHECK(descr == "'|V" + std::to_string(fallback_itemsize) + "'",
               "descr of an unparsable dtype: " + descr);
  }
  // A mismatching item size must also fall back to void.
  CheckDescr(format::NpyDescr(dtype, (size ? *size : fallback_itemsize) + 1));
}

}  // namespace
}  // namespace b2ndfs::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace b2ndfs;        // NOLINT
  using namespace b2ndfs::fuzz;  // NOLINT
  const std::span<const uint8_t> input(data, size);

  auto b2nd = format::DecodeB2ndMetalayer(input);
  if (b2nd.ok()) {
    CheckNdMeta(*b2nd, true);
  } else {
    FUZZ_CHECK(b2nd.status().error_number() == EIO, "b2nd decode error is not EIO");
  }
  auto caterva = format::DecodeCatervaMetalayer(input);
  if (caterva.ok()) {
    CheckNdMeta(*caterva, false);
  } else {
    FUZZ_CHECK(caterva.status().error_number() == EIO, "caterva decode error is not EIO");
  }
  if (b2nd.ok() && b2nd->dtype) CheckDtype(*b2nd->dtype, 1);

  // The input as a dtype string (the store passes any printable str).
  const std::string text(reinterpret_cast<const char*>(data),
                         std::min(size, format::kMaxDtypeLength));
  CheckDtype(text, static_cast<int64_t>(size % 17) + 1);
  CheckDescr(format::NpyDescr(std::nullopt, 4));

  if (auto json = format::MsgpackToJson(input)) {
    FUZZ_CHECK(json->size() <= (size_t{16} << 20), "msgpack JSON over 16 MiB");
    std::string error;
    FUZZ_CHECK(IsValidJson(*json, &error), "MsgpackToJson wrote invalid JSON: " + error);
  }
  return 0;
}
