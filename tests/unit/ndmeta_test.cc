// Unit tests of format/ndmeta: golden and malformed b2nd / caterva metalayers,
// NumPy dtype item sizes and .npy descrs.
#include "b2ndfs/format/ndmeta.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <msgpack.hpp>
#include <random>
#include <string>
#include <vector>

namespace {

using b2ndfs::format::DecodeB2ndMetalayer;
using b2ndfs::format::DecodeCatervaMetalayer;
using b2ndfs::format::DtypeItemSize;
using b2ndfs::format::NdMeta;
using b2ndfs::format::NpyDescr;
using Bytes = std::vector<uint8_t>;

void PutBig(Bytes& out, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

// Exactly what c-blosc2's b2nd_serialize_meta writes (blosc/b2nd.c): fixarray,
// fixint version and ndim, int64 shape, int32 chunk/block shapes, fixint
// dtype_format, str32 dtype.
Bytes B2ndBytes(const std::vector<int64_t>& shape, const std::vector<int32_t>& chunks,
                const std::vector<int32_t>& blocks, const std::string& dtype, int version = 0,
                int dtype_format = 0) {
  Bytes out;
  const auto ndim = static_cast<uint8_t>(shape.size());
  out.push_back(0x97);
  out.push_back(static_cast<uint8_t>(version));
  out.push_back(ndim);
  out.push_back(0x90 + ndim);
  for (int64_t s : shape) {
    out.push_back(0xd3);
    PutBig(out, static_cast<uint64_t>(s), 8);
  }
  out.push_back(0x90 + ndim);
  for (int32_t c : chunks) {
    out.push_back(0xd2);
    PutBig(out, static_cast<uint32_t>(c), 4);
  }
  out.push_back(0x90 + ndim);
  for (int32_t b : blocks) {
    out.push_back(0xd2);
    PutBig(out, static_cast<uint32_t>(b), 4);
  }
  out.push_back(static_cast<uint8_t>(dtype_format));
  out.push_back(0xdb);
  PutBig(out, dtype.size(), 4);
  out.insert(out.end(), dtype.begin(), dtype.end());
  return out;
}

// A msgpack array built with msgpack-cxx's packer, for variants.
template <typename Fn>
Bytes Pack(Fn&& fn) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  fn(packer);
  return Bytes(buffer.data(), buffer.data() + buffer.size());
}

std::string ErrorOf(const b2ndfs::Result<NdMeta>& r) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().error_number() == EIO);
  return r.status().message();
}

TEST_CASE("b2nd golden bytes as c-blosc2 writes them") {
  // [0, 2, [400, 3], [110, 3], [57, 3], 0, "|u1"]: the example of
  // README_CFRAME_FORMAT.rst.
  const Bytes bytes = B2ndBytes({400, 3}, {110, 3}, {57, 3}, "|u1");
  const Bytes expected = {0x97, 0x00, 0x02, 0x92, 0xd3, 0,    0,    0,   0,  0, 0,
                          0x01, 0x90, 0xd3, 0,    0,    0,    0,    0,   0,  0, 0x03,
                          0x92, 0xd2, 0,    0,    0,    0x6e, 0xd2, 0,   0,  0, 0x03,
                          0x92, 0xd2, 0,    0,    0,    0x39, 0xd2, 0,   0,  0, 0x03,
                          0x00, 0xdb, 0,    0,    0,    0x03, '|',  'u', '1'};
  REQUIRE(bytes == expected);
  auto meta = DecodeB2ndMetalayer(bytes);
  REQUIRE(meta.ok());
  CHECK(meta->format == "b2nd");
  CHECK(meta->version == 0);
  CHECK(meta->ndim == 2);
  CHECK(meta->shape == std::vector<int64_t>{400, 3});
  CHECK(meta->chunkshape == std::vector<int64_t>{110, 3});
  CHECK(meta->blockshape == std::vector<int64_t>{57, 3});
  CHECK(meta->has_blockshape);
  CHECK(meta->dtype_format == 0);
  CHECK(meta->dtype == "|u1");
}

TEST_CASE("b2nd 0-d array") {
  auto meta = DecodeB2ndMetalayer(B2ndBytes({}, {}, {}, "<f8"));
  REQUIRE(meta.ok());
  CHECK(meta->ndim == 0);
  CHECK(meta->shape.empty());
  CHECK(meta->dtype == "<f8");
}

TEST_CASE("caterva 5-entry and oldest 4-entry metalayers") {
  // [version 0, ndim 3, shape, chunkshape, blockshape] with the widths caterva
  // used (int64 shape, int32 chunks and blocks).
  Bytes caterva = {0x95, 0x00, 0x03, 0x93};
  for (uint64_t s : {10, 20, 30}) {
    caterva.push_back(0xd3);
    PutBig(caterva, s, 8);
  }
  caterva.push_back(0x93);
  for (uint64_t c : {5, 20, 7}) {
    caterva.push_back(0xd2);
    PutBig(caterva, c, 4);
  }
  caterva.push_back(0x93);
  for (uint64_t b : {5, 4, 7}) {
    caterva.push_back(0xd2);
    PutBig(caterva, b, 4);
  }
  auto meta = DecodeCatervaMetalayer(caterva);
  REQUIRE(meta.ok());
  CHECK(meta->format == "caterva");
  CHECK(meta->ndim == 3);
  CHECK(meta->shape == std::vector<int64_t>{10, 20, 30});
  CHECK(meta->chunkshape == std::vector<int64_t>{5, 20, 7});
  CHECK(meta->blockshape == std::vector<int64_t>{5, 4, 7});
  CHECK(meta->has_blockshape);
  CHECK_FALSE(meta->dtype);
  CHECK_FALSE(meta->dtype_format);

  // Oldest: [version, ndim, shape, partshape], with small positive fixints.
  const Bytes oldest = {0x94, 0x00, 0x02, 0x92, 0x64, 0xcd, 0x01, 0x2c, 0x92, 0x0a, 0x1e};
  auto old = DecodeCatervaMetalayer(oldest);
  REQUIRE(old.ok());
  CHECK(old->shape == std::vector<int64_t>{100, 300});
  CHECK(old->chunkshape == std::vector<int64_t>{10, 30});
  CHECK(old->blockshape == old->chunkshape);
  CHECK_FALSE(old->has_blockshape);

  // A caterva layer is not a b2nd one, and vice versa.
  CHECK_FALSE(DecodeB2ndMetalayer(oldest).ok());
  CHECK_FALSE(DecodeCatervaMetalayer(B2ndBytes({4}, {2}, {1}, "<i4")).ok());
}

TEST_CASE("b2nd without dtype (5 entries) is accepted like c-blosc2 does") {
  Bytes bytes = Pack([](auto& p) {
    p.pack_array(5);
    p.pack(0);
    p.pack(1);
    p.pack(std::vector<int64_t>{10});
    p.pack(std::vector<int64_t>{5});
    p.pack(std::vector<int64_t>{5});
  });
  auto meta = DecodeB2ndMetalayer(bytes);
  REQUIRE(meta.ok());
  CHECK_FALSE(meta->dtype);
  CHECK_FALSE(meta->dtype_format);
}

TEST_CASE("any msgpack integer width is accepted") {
  // uint8 / uint16 / uint32 / uint64 / int8 / int16 encodings of the same values.
  Bytes bytes = {0x97, 0xcc, 0x01, 0xd0, 0x02, 0x92, 0xce, 0,    0,    0x01, 0x00, 0xcf,
                 0,    0,    0,    0,    0,    0,    0,    0x10, 0x92, 0xcd, 0,    0x10,
                 0xd1, 0,    0x08, 0x92, 0x08, 0x04, 0xd0, 0x00, 0xa3, '<',  'i',  '8'};
  auto meta = DecodeB2ndMetalayer(bytes);
  REQUIRE(meta.ok());
  CHECK(meta->version == 1);
  CHECK(meta->shape == std::vector<int64_t>{256, 16});
  CHECK(meta->chunkshape == std::vector<int64_t>{16, 8});
  CHECK(meta->blockshape == std::vector<int64_t>{8, 4});
  CHECK(meta->dtype == "<i8");
}

TEST_CASE("every truncation of a valid metalayer is an error") {
  const std::vector<Bytes> valid = {
      B2ndBytes({400, 3}, {110, 3}, {57, 3}, "|u1"),
      B2ndBytes({7, 8, 9}, {7, 8, 9}, {1, 2, 3}, "[('a', '<i4'), ('b', '<f8', (2,))]"),
  };
  for (const Bytes& bytes : valid) {
    REQUIRE(DecodeB2ndMetalayer(bytes).ok());
    for (size_t n = 0; n < bytes.size(); ++n) {
      INFO("prefix of " << n << " bytes");
      const Bytes prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
      CHECK_FALSE(DecodeB2ndMetalayer(prefix).ok());
      CHECK_FALSE(DecodeCatervaMetalayer(prefix).ok());
    }
  }
  // Messages say what is wrong.
  const Bytes& b = valid[0];
  CHECK(ErrorOf(DecodeB2ndMetalayer(Bytes(b.begin(), b.begin() + 10))).find("truncated") !=
        std::string::npos);
  CHECK(ErrorOf(DecodeB2ndMetalayer(Bytes{})).find("empty") != std::string::npos);
}

TEST_CASE("wrong types in every position are errors") {
  // Each entry of [0, 1, [4], [2], [1], 0, "<i4"] replaced by each of nil,
  // true, 1.5, "x", [1], {1: 1}, bin and -1 (where -1 is out of range).
  const auto pack_with = [](int position, int kind) {
    return Pack([&](auto& p) {
      p.pack_array(7);
      for (int i = 0; i < 7; ++i) {
        if (i == position) {
          switch (kind) {
            case 0:
              p.pack_nil();
              break;
            case 1:
              p.pack_true();
              break;
            case 2:
              p.pack_double(1.5);
              break;
            case 3:
              p.pack(std::string("x"));
              break;
            case 4:
              p.pack(std::vector<int>{1});
              break;
            case 5:
              p.pack_map(1);
              p.pack(1);
              p.pack(1);
              break;
            case 6:
              p.pack_bin(1);
              p.pack_bin_body("x", 1);
              break;
            default:
              p.pack(-1);
          }
          continue;
        }
        switch (i) {
          case 0:
            p.pack(0);
            break;
          case 1:
            p.pack(1);
            break;
          case 2:
            p.pack(std::vector<int>{4});
            break;
          case 3:
            p.pack(std::vector<int>{2});
            break;
          case 4:
            p.pack(std::vector<int>{1});
            break;
          case 5:
            p.pack(0);
            break;
          default:
            p.pack(std::string("<i4"));
        }
      }
    });
  };
  REQUIRE(DecodeB2ndMetalayer(pack_with(-1, 0)).ok());
  for (int position = 0; position < 7; ++position) {
    for (int kind = 0; kind < 8; ++kind) {
      // An array in place of the 1-entry shapes is [1], a string in place of
      // the dtype is "x": both valid.
      if (kind == 4 && position >= 2 && position <= 4) continue;
      if (kind == 3 && position == 6) continue;
      INFO("position " << position << " kind " << kind);
      auto r = DecodeB2ndMetalayer(pack_with(position, kind));
      CHECK_FALSE(r.ok());
    }
  }
  // Inside the shape arrays, too.
  for (int axis_kind = 0; axis_kind < 4; ++axis_kind) {
    Bytes bytes = Pack([&](auto& p) {
      p.pack_array(7);
      p.pack(0);
      p.pack(2);
      p.pack_array(2);
      p.pack(4);
      if (axis_kind == 0) p.pack_nil();
      if (axis_kind == 1) p.pack(std::string("4"));
      if (axis_kind == 2) p.pack_double(4.5);  // (4.0 would be packed as an integer)
      if (axis_kind == 3) p.pack(std::vector<int>{4});
      p.pack(std::vector<int>{2, 2});
      p.pack(std::vector<int>{1, 1});
      p.pack(0);
      p.pack(std::string("<i4"));
    });
    INFO("axis kind " << axis_kind);
    auto r = DecodeB2ndMetalayer(bytes);
    CHECK(ErrorOf(r).find("shape[1]") != std::string::npos);
  }
  // The whole thing not an array.
  CHECK(ErrorOf(DecodeB2ndMetalayer(Pack([](auto& p) { p.pack(7); }))).find("array") !=
        std::string::npos);
}

Bytes NdimBytes(int ndim, size_t entries) {
  return Pack([&](auto& p) {
    p.pack_array(7);
    p.pack(0);
    p.pack(ndim);
    for (int k = 0; k < 3; ++k) {
      p.pack_array(static_cast<uint32_t>(entries));
      for (size_t i = 0; i < entries; ++i) p.pack(1);
    }
    p.pack(0);
    p.pack(std::string("|u1"));
  });
}

TEST_CASE("ndim limits and mismatches") {
  auto r127 = DecodeB2ndMetalayer(NdimBytes(127, 127));
  REQUIRE(r127.ok());
  CHECK(r127->ndim == 127);
  CHECK(r127->shape.size() == 127);
  CHECK(ErrorOf(DecodeB2ndMetalayer(NdimBytes(128, 128))).find("ndim") != std::string::npos);
  CHECK(ErrorOf(DecodeB2ndMetalayer(NdimBytes(-1, 0))).find("ndim") != std::string::npos);
  CHECK(ErrorOf(DecodeB2ndMetalayer(NdimBytes(3, 2))).find("ndim is 3") != std::string::npos);
  CHECK_FALSE(DecodeB2ndMetalayer(NdimBytes(2, 3)).ok());
  // Mismatch in one array only.
  Bytes bytes = Pack([](auto& p) {
    p.pack_array(7);
    p.pack(0);
    p.pack(2);
    p.pack(std::vector<int>{4, 4});
    p.pack(std::vector<int>{2, 2});
    p.pack(std::vector<int>{1});
    p.pack(0);
    p.pack(std::string("<i4"));
  });
  CHECK(ErrorOf(DecodeB2ndMetalayer(bytes)).find("blockshape has 1 entries") != std::string::npos);
}

TEST_CASE("sizes that overflow int64 are errors") {
  const int64_t big = std::numeric_limits<int64_t>::max();
  // 2^63-1 items of 8 bytes overflow.
  CHECK(ErrorOf(DecodeB2ndMetalayer(B2ndBytes({big}, {1}, {1}, "<f8"))).find("2^63") !=
        std::string::npos);
  // ... but 2^63-1 items of 1 byte do not.
  CHECK(DecodeB2ndMetalayer(B2ndBytes({big}, {1}, {1}, "|u1")).ok());
  // An unknown dtype does not let the shape product overflow either.
  CHECK_FALSE(DecodeB2ndMetalayer(B2ndBytes({big, 2}, {1, 1}, {1, 1}, "weird")).ok());
  // Products of chunk extents.
  const int32_t c = std::numeric_limits<int32_t>::max();
  CHECK_FALSE(DecodeB2ndMetalayer(B2ndBytes({1, 1, 1}, {c, c, c}, {1, 1, 1}, "|u1")).ok());
  CHECK(DecodeB2ndMetalayer(B2ndBytes({1, 1}, {c, c}, {1, 1}, "|u1")).ok());
  CHECK_FALSE(DecodeB2ndMetalayer(B2ndBytes({1, 1}, {c, c}, {1, 1}, "<f8")).ok());
  // uint64 above int64 max.
  Bytes huge = B2ndBytes({1}, {1}, {1}, "|u1");
  huge[4] = 0xcf;  // int64 -> uint64 marker, then set the top bit
  huge[5] = 0x80;
  CHECK(ErrorOf(DecodeB2ndMetalayer(huge)).find("too large") != std::string::npos);
}

TEST_CASE("chunk and block extents") {
  CHECK(ErrorOf(DecodeB2ndMetalayer(B2ndBytes({10}, {0}, {1}, "|u1"))).find("chunkshape[0] is 0") !=
        std::string::npos);
  CHECK(ErrorOf(DecodeB2ndMetalayer(B2ndBytes({10}, {5}, {0}, "|u1"))).find("blockshape[0] is 0") !=
        std::string::npos);
  CHECK(ErrorOf(DecodeB2ndMetalayer(B2ndBytes({10}, {-5}, {1}, "|u1"))).find("chunkshape[0]") !=
        std::string::npos);
  CHECK_FALSE(DecodeB2ndMetalayer(B2ndBytes({10}, {5}, {-1}, "|u1")).ok());
  CHECK_FALSE(DecodeB2ndMetalayer(B2ndBytes({-10}, {5}, {1}, "|u1")).ok());
  CHECK(ErrorOf(DecodeB2ndMetalayer(B2ndBytes({10, 10}, {5, 5}, {5, 6}, "|u1")))
            .find("blockshape[1] 6 is larger than chunkshape[1] 5") != std::string::npos);
  // Chunk extents above int32 (the format stores int32).
  Bytes wide = Pack([](auto& p) {
    p.pack_array(7);
    p.pack(0);
    p.pack(1);
    p.pack(std::vector<int64_t>{int64_t{1} << 40});
    p.pack(std::vector<int64_t>{int64_t{1} << 31});
    p.pack(std::vector<int64_t>{1});
    p.pack(0);
    p.pack(std::string("|u1"));
  });
  CHECK_FALSE(DecodeB2ndMetalayer(wide).ok());
  // On an empty axis, 0 extents are read as 1.
  auto empty = DecodeB2ndMetalayer(B2ndBytes({0, 4}, {0, 2}, {0, 1}, "|u1"));
  REQUIRE(empty.ok());
  CHECK(empty->chunkshape == std::vector<int64_t>{1, 2});
  CHECK(empty->blockshape == std::vector<int64_t>{1, 1});
}

TEST_CASE("dtype and dtype_format checks") {
  CHECK(DecodeB2ndMetalayer(B2ndBytes({2}, {2}, {2}, "<f4", 0, 127)).ok());
  CHECK_FALSE(DecodeB2ndMetalayer(B2ndBytes({2}, {2}, {2}, "<f4", 0, 128)).ok());
  CHECK_FALSE(DecodeB2ndMetalayer(B2ndBytes({2}, {2}, {2}, "<f4", 128, 0)).ok());
  CHECK(ErrorOf(DecodeB2ndMetalayer(B2ndBytes({2}, {2}, {2}, "<f4\n"))).find("non-printable") !=
        std::string::npos);
  CHECK_FALSE(DecodeB2ndMetalayer(B2ndBytes({2}, {2}, {2}, "\xc3\xa9")).ok());
  const std::string long_dtype(b2ndfs::format::kMaxDtypeLength + 1, 'x');
  CHECK(ErrorOf(DecodeB2ndMetalayer(B2ndBytes({2}, {2}, {2}, long_dtype))).find("bytes long") !=
        std::string::npos);
  // An unknown but printable dtype is kept (the frame's typesize rules).
  auto odd = DecodeB2ndMetalayer(B2ndBytes({2}, {2}, {2}, "my-type"));
  REQUIRE(odd.ok());
  CHECK(odd->dtype == "my-type");
}

TEST_CASE("hostile sizes never allocate") {
  // A bin header claiming 4 GiB where the dtype should be.
  Bytes bin = {0x97, 0x00, 0x01, 0x91, 0x01, 0x91, 0x01, 0x91,
               0x01, 0x00, 0xc6, 0xff, 0xff, 0xff, 0xff};
  CHECK_FALSE(DecodeB2ndMetalayer(bin).ok());
  // A str32 and an array32 and a map32 claiming 4 Gi entries.
  CHECK_FALSE(DecodeB2ndMetalayer(Bytes{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}).ok());
  CHECK(ErrorOf(DecodeB2ndMetalayer(Bytes{0xdd, 0xff, 0xff, 0xff, 0xff, 0x00}))
            .find("declares a size") != std::string::npos);
  CHECK_FALSE(DecodeB2ndMetalayer(Bytes{0x97, 0x00, 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff}).ok());
  CHECK_FALSE(DecodeCatervaMetalayer(Bytes{0xdf, 0xff, 0xff, 0xff, 0xff}).ok());
  // Deep nesting.
  Bytes deep(1000, 0x91);
  deep.push_back(0x00);
  CHECK_FALSE(DecodeB2ndMetalayer(deep).ok());
  // Reserved byte 0xc1.
  CHECK_FALSE(DecodeB2ndMetalayer(Bytes{0xc1}).ok());
}

TEST_CASE("trailing bytes after the object are ignored") {
  Bytes bytes = B2ndBytes({4}, {2}, {1}, "<i4");
  bytes.push_back(0xc1);
  bytes.push_back(0xff);
  CHECK(DecodeB2ndMetalayer(bytes).ok());
}

TEST_CASE("random mutations never crash") {
  const std::vector<Bytes> seeds = {
      B2ndBytes({400, 3}, {110, 3}, {57, 3}, "|u1"),
      B2ndBytes({7, 8, 9, 10}, {7, 8, 9, 5}, {1, 2, 3, 5}, "[('a', '<i4'), ('b', '<f8', (2,))]"),
      NdimBytes(127, 127),
      Bytes{0x94, 0x00, 0x02, 0x92, 0x64, 0xcd, 0x01, 0x2c, 0x92, 0x0a, 0x1e},
  };
  std::mt19937 rng(12345);
  int ok_count = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    Bytes bytes = seeds[static_cast<size_t>(iteration) % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 4) {
        case 0:
          bytes[at] = static_cast<uint8_t>(rng());
          break;
        case 1:
          bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 2:
          bytes.resize(at);
          break;
        default:
          bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                       static_cast<uint8_t>(rng()));
      }
    }
    for (bool b2nd : {true, false}) {
      auto r = b2nd ? DecodeB2ndMetalayer(bytes) : DecodeCatervaMetalayer(bytes);
      if (!r.ok()) {
        REQUIRE(!r.status().message().empty());
        continue;
      }
      ++ok_count;
      // Whatever is accepted is consistent.
      REQUIRE(r->ndim >= 0);
      REQUIRE(r->ndim <= 127);
      REQUIRE(r->shape.size() == static_cast<size_t>(r->ndim));
      REQUIRE(r->chunkshape.size() == r->shape.size());
      REQUIRE(r->blockshape.size() == r->shape.size());
      for (int i = 0; i < r->ndim; ++i) {
        REQUIRE(r->shape[i] >= 0);
        REQUIRE(r->chunkshape[i] > 0);
        REQUIRE(r->blockshape[i] > 0);
        REQUIRE(r->blockshape[i] <= r->chunkshape[i]);
      }
    }
  }
  CHECK(ok_count > 0);  // some mutations (e.g. in shape values) stay valid
}

TEST_CASE("DtypeItemSize") {
  CHECK(DtypeItemSize("<f4") == 4);
  CHECK(DtypeItemSize(">f8") == 8);
  CHECK(DtypeItemSize("|u1") == 1);
  CHECK(DtypeItemSize("=i2") == 2);
  CHECK(DtypeItemSize("i8") == 8);
  CHECK(DtypeItemSize("|b1") == 1);
  CHECK(DtypeItemSize("?") == 1);
  CHECK(DtypeItemSize("|?") == 1);
  CHECK(DtypeItemSize("<c16") == 16);
  CHECK(DtypeItemSize("|S10") == 10);
  CHECK(DtypeItemSize("|a3") == 3);
  CHECK(DtypeItemSize("<U3") == 12);
  CHECK(DtypeItemSize("|V7") == 7);
  CHECK(DtypeItemSize("<M8[ns]") == 8);
  CHECK(DtypeItemSize("<m8[s]") == 8);
  CHECK(DtypeItemSize("<M8") == 8);
  CHECK(DtypeItemSize("|O") == 8);
  CHECK(DtypeItemSize("float32") == 4);
  CHECK(DtypeItemSize("uint16") == 2);
  CHECK(DtypeItemSize("complex128") == 16);
  CHECK(DtypeItemSize("bool") == 1);
  CHECK(DtypeItemSize("[('a', '<i4'), ('b', '<f8')]") == 12);
  CHECK(DtypeItemSize("[('a', '<i4'), ('b', '<f8', (2,))]") == 20);
  CHECK(DtypeItemSize("[('a', '<i4'), ('b', '<f8', (2, 3))]") == 52);
  CHECK(DtypeItemSize("[('a', '<i4'), ('b', '<f8', 2)]") == 20);
  CHECK(DtypeItemSize("[(('Title', 'a'), '<i4'), ('', '|V4')]") == 8);
  CHECK(DtypeItemSize("[('p', [('x', '<f4'), ('y', '<f4')]), ('n', '<U2')]") == 16);
  CHECK(DtypeItemSize("[(\"q\", \"<i2\")]") == 2);
  CHECK(DtypeItemSize("[('a', '<i4'),]") == 4);
  // What cannot be worked out.
  for (const char* bad : {"",
                          "<",
                          "<f",
                          "<fx",
                          "f-4",
                          "<S0",
                          "<q8",
                          "<M4[ns]",
                          "<M8[n s]",
                          "<M8[",
                          "float",
                          "[",
                          "[]",
                          "[('a')]",
                          "[('a', '<i4')",
                          "[('a', '<i4', (-1,))]",
                          "[('a', 5)]",
                          "[('a', '<i4'), ('b', '<f8', (99999999999, 99999999999))]",
                          "[(1, '<i4')]",
                          "[('a', '<i4')] x",
                          "<f4 ",
                          "|O3",
                          "<i99999999999999"}) {
    INFO(bad);
    CHECK_FALSE(DtypeItemSize(bad));
  }
  // Deep nesting does not recurse without bound.
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "[('a', ";
  CHECK_FALSE(DtypeItemSize(deep));
  std::string deep_parens = "[('a', '<i4', " + std::string(100000, '(');
  CHECK_FALSE(DtypeItemSize(deep_parens));
}

TEST_CASE("NpyDescr") {
  CHECK(NpyDescr(std::string("<f4"), 4) == "'<f4'");
  CHECK(NpyDescr(std::string("<M8[ns]"), 8) == "'<M8[ns]'");
  CHECK(NpyDescr(std::string("float64"), 8) == "'<f8'");
  CHECK(NpyDescr(std::string("[('a', '<i4'), ('b', '<f8', (2,))]"), 20) ==
        "[('a', '<i4'), ('b', '<f8', (2,))]");
  // No usable dtype.
  CHECK(NpyDescr(std::nullopt, 4) == "'|V4'");
  CHECK(NpyDescr(std::string("weird"), 3) == "'|V3'");
  CHECK(NpyDescr(std::string("<f8"), 4) == "'|V4'");  // size disagrees with the frame
  CHECK(NpyDescr(std::string("|O"), 8) == "'|V8'");   // pointers
  CHECK(NpyDescr(std::string("<f4'"), 4) == "'|V4'");
  CHECK(NpyDescr(std::string("[('a', '<i4')]\n"), 4) == "'|V4'");
  CHECK(NpyDescr(std::string(""), 1) == "'|V1'");
}

}  // namespace

namespace {

using b2ndfs::format::CheckDtype;

Bytes WithHeader(Bytes bytes, uint8_t header) {
  bytes[0] = header;
  return bytes;
}

TEST_CASE("6-entry b2nd metalayers are read by position, as c-blosc2 does") {
  // Header says 6, yet dtype_format and dtype follow (c-blosc2 reads them).
  const Bytes seven = B2ndBytes({10, 4}, {5, 4}, {5, 2}, "<i4");
  auto a = DecodeB2ndMetalayer(WithHeader(seven, 0x96));
  REQUIRE(a.ok());
  CHECK(a->dtype == std::optional<std::string>("<i4"));
  CHECK(a->dtype_format == std::optional<int>(0));
  REQUIRE(a->notes.size() == 1);
  CHECK(a->notes[0].find("says 6 entries") != std::string::npos);
  CHECK(DecodeB2ndMetalayer(seven)->notes.empty());
  // [version, ndim, shape, chunkshape, blockshape, dtype] (no dtype_format).
  Bytes six = Pack([](auto& p) {
    p.pack_array(6);
    p.pack(0);
    p.pack(1);
    p.pack(std::vector<int64_t>{10});
    p.pack(std::vector<int64_t>{5});
    p.pack(std::vector<int64_t>{5});
    p.pack(std::string("<f8"));
  });
  auto b = DecodeB2ndMetalayer(six);
  REQUIRE(b.ok());
  CHECK(b->dtype == std::optional<std::string>("<f8"));
  CHECK_FALSE(b->dtype_format);
  REQUIRE(b->notes.size() == 1);
  CHECK(b->notes[0].find("6th being the dtype") != std::string::npos);
  // Six entries ending with dtype_format and nothing after: no dtype.
  Bytes bare(seven.begin(), seven.end() - 4 - 1 - 3);
  bare[0] = 0x96;
  auto c = DecodeB2ndMetalayer(bare);
  REQUIRE(c.ok());
  CHECK_FALSE(c->dtype);
  CHECK(c->dtype_format == std::optional<int>(0));
  // 8 entries stay an error; so does a 6th entry of another type.
  CHECK_FALSE(DecodeB2ndMetalayer(WithHeader(seven, 0x98)).ok());
  Bytes nil6 = Pack([](auto& p) {
    p.pack_array(6);
    p.pack(0);
    p.pack(1);
    p.pack(std::vector<int64_t>{10});
    p.pack(std::vector<int64_t>{5});
    p.pack(std::vector<int64_t>{5});
    p.pack_nil();
  });
  CHECK_FALSE(DecodeB2ndMetalayer(nil6).ok());
}

TEST_CASE("16-D metalayers with c-blosc2's 0x90 + ndim headers") {
  const std::vector<int64_t> shape(16, 2);
  const std::vector<int32_t> chunks(16, 1), blocks(16, 1);
  const Bytes bytes = B2ndBytes(shape, chunks, blocks, "|u1");
  REQUIRE(bytes[3] == 0xa0);  // what c-blosc2 writes: a msgpack fixstr
  auto meta = DecodeB2ndMetalayer(bytes);
  REQUIRE(meta.ok());
  CHECK(meta->ndim == 16);
  CHECK(meta->shape == shape);
  CHECK(meta->dtype == std::optional<std::string>("|u1"));
  REQUIRE(meta->notes.size() == 1);
  CHECK(meta->notes[0].find("ndim 16") != std::string::npos);
  // 15 axes are a real fixarray: nothing to repair.
  auto fifteen =
      DecodeB2ndMetalayer(B2ndBytes(std::vector<int64_t>(15, 2), std::vector<int32_t>(15, 1),
                                    std::vector<int32_t>(15, 1), "|u1"));
  REQUIRE(fifteen.ok());
  CHECK(fifteen->notes.empty());
  // Every truncation of the 16-D form is an error, never a crash.
  for (size_t n = 0; n + 1 < bytes.size() - 4 - 3; ++n) {
    CHECK_FALSE(DecodeB2ndMetalayer(Bytes(bytes.begin(), bytes.begin() + n)).ok());
  }
}

TEST_CASE("dict-form and nested structured dtypes as NumPy prints them") {
  // Strings from NumPy 1.24's str(dtype); descrs from its dtype.descr.
  const std::string titled =
      "{'names': ['b', 'a'], 'formats': [('<f4', (2,)), '<i4'], 'offsets': [0, 8], "
      "'titles': [None, 'TA'], 'itemsize': 16}";
  CHECK(DtypeItemSize(titled) == 16);
  CHECK(NpyDescr(titled, 16) == "[('b', '<f4', (2,)), (('TA', 'a'), '<i4'), ('', '|V4')]");
  const std::string aligned =
      "{'names': ['a', 'b'], 'formats': ['<i4', '<f8'], 'offsets': [0, 8], 'itemsize': 16, "
      "'aligned': True}";
  CHECK(NpyDescr(aligned, 16) == "[('a', '<i4'), ('', '|V4'), ('b', '<f8')]");
  const std::string nested_dict =
      "[('a', 'u1'), ('n', {'names': ['x'], 'formats': ['<i2'], 'offsets': [2], 'itemsize': 6})]";
  CHECK(NpyDescr(nested_dict, 7) ==
        "[('a', 'u1'), ('n', [('', '|V2'), ('x', '<i2'), ('', '|V2')])]");
  CHECK(NpyDescr(std::string("[('n', [('x', '<i2'), ('y', '>f8')]), ('s', 'S3')]"), 13) ==
        "[('n', [('x', '<i2'), ('y', '>f8')]), ('s', 'S3')]");
  CHECK(NpyDescr(std::string("[('a', [('b', '<i2', (2,))], (3,))]"), 12) ==
        "[('a', [('b', '<i2', (2,))], (3,))]");
  CHECK(NpyDescr(std::string("[(('title A', 'a'), '<i4'), ('b', '>U2')]"), 12) ==
        "[(('title A', 'a'), '<i4'), ('b', '>U2')]");
  CHECK(NpyDescr(std::string(">U5"), 20) == "'>U5'");
  // Out-of-order or overlapping offsets: .npy cannot describe them.
  const std::string unordered =
      "{'names': ['a', 'b'], 'formats': ['<i4', ('<f4', (2,))], 'offsets': [8, 0], "
      "'titles': ['TA', None], 'itemsize': 16}";
  CHECK(DtypeItemSize(unordered) == std::nullopt);
  CHECK(NpyDescr(unordered, 16) == "'|V16'");
  // itemsize smaller than the fields, unknown keys, object fields.
  CHECK(NpyDescr(std::string("{'names': ['a'], 'formats': ['<i8'], 'itemsize': 4}"), 4) == "'|V4'");
  CHECK(NpyDescr(std::string("{'names': ['a'], 'formats': ['<i4'], 'bogus': 1}"), 4) == "'|V4'");
  CHECK(NpyDescr(std::string("[('a', 'O'), ('b', '<i4')]"), 12) == "'|V12'");
}

TEST_CASE("CheckDtype says what is inconsistent") {
  CHECK_FALSE(CheckDtype(std::string("<f4"), 4).note);
  CHECK_FALSE(CheckDtype(std::nullopt, 4).note);
  auto mismatch = CheckDtype(std::string("|u1"), 4);
  CHECK(mismatch.npy_descr == "'|V4'");
  REQUIRE(mismatch.note);
  CHECK(mismatch.note->find("dtype '|u1' has 1-byte items but the chunks hold 4-byte") == 0);
  auto unknown = CheckDtype(std::string("my_custom<4>"), 4);
  REQUIRE(unknown.note);
  CHECK(unknown.note->find("not understood") != std::string::npos);
  CHECK(CheckDtype(std::string("|O"), 8).note->find("Python objects") != std::string::npos);
}

}  // namespace
