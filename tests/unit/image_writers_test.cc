// The TIFF and PGM layouts: headers decoded back by a small independent TIFF
// reader (both byte orders, classic and BigTIFF, one and many strips), any
// window of the header equal to the same bytes of the whole, and the arrays
// each format cannot hold (with the reason meta.json shows).
#include "image_writers.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace b2ndfs::views {
namespace {

struct Tag {
  uint16_t type = 0;
  std::vector<uint64_t> values;
};
using Ifd = std::map<uint16_t, Tag>;

// Decodes every IFD of `file` (at least its header; values may point only
// into it). Fails the test on anything malformed.
struct TiffReader {
  const std::string& f;
  bool big = false;
  bool bigtiff = false;
  explicit TiffReader(const std::string& file) : f(file) {}

  uint64_t U(uint64_t at, int bytes) const {
    REQUIRE(at + bytes <= f.size());
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) {
      const uint64_t b = static_cast<uint8_t>(f[at + i]);
      v |= b << (8 * (big ? bytes - 1 - i : i));
    }
    return v;
  }

  std::vector<Ifd> Read() {
    REQUIRE(f.size() >= 8);
    REQUIRE((f.substr(0, 2) == "II" || f.substr(0, 2) == "MM"));
    big = f[0] == 'M';
    const uint64_t magic = U(2, 2);
    REQUIRE((magic == 42 || magic == 43));
    bigtiff = magic == 43;
    uint64_t next = bigtiff ? U(8, 8) : U(4, 4);
    if (bigtiff) {
      REQUIRE(U(4, 2) == 8);
      REQUIRE(U(6, 2) == 0);
    }
    const int field = bigtiff ? 8 : 4;
    std::vector<Ifd> ifds;
    while (next != 0) {
      REQUIRE(next % 2 == 0);  // word-aligned
      const uint64_t count = U(next, bigtiff ? 8 : 2);
      uint64_t e = next + (bigtiff ? 8 : 2);
      Ifd ifd;
      uint16_t previous = 0;
      for (uint64_t i = 0; i < count; ++i, e += bigtiff ? 20 : 12) {
        const auto tag = static_cast<uint16_t>(U(e, 2));
        REQUIRE(tag > previous);  // ascending
        previous = tag;
        Tag t;
        t.type = static_cast<uint16_t>(U(e + 2, 2));
        const uint64_t n = U(e + 4, field);
        const int size = t.type == 3 ? 2 : t.type == 4 ? 4 : t.type == 16 ? 8 : 0;
        REQUIRE(size != 0);
        const uint64_t at =
            n * size <= static_cast<uint64_t>(field) ? e + 4 + field : U(e + 4 + field, field);
        for (uint64_t k = 0; k < n; ++k) t.values.push_back(U(at + k * size, size));
        ifd[tag] = t;
      }
      ifds.push_back(ifd);
      next = U(e, field);
    }
    return ifds;
  }
};

uint64_t One(const Ifd& ifd, uint16_t tag) {
  auto it = ifd.find(tag);
  REQUIRE(it != ifd.end());
  REQUIRE(it->second.values.size() == 1);
  return it->second.values[0];
}

// Checks every page of `layout` (decoded from its header) against the
// geometry it should have: pixels back to back from header_size().
void CheckPages(const TiffLayout& layout, int64_t pages, int64_t height, int64_t width,
                int itemsize, int sample_format) {
  const std::string header = layout.Header();
  REQUIRE(static_cast<int64_t>(header.size()) == layout.header_size());
  CHECK(layout.header_size() % 16 == 0);
  TiffReader reader(header);
  const std::vector<Ifd> ifds = reader.Read();
  CHECK(reader.big == layout.big_endian());
  CHECK(reader.bigtiff == layout.bigtiff());
  REQUIRE(static_cast<int64_t>(ifds.size()) == pages);
  const int64_t page_bytes = height * width * itemsize;
  CHECK(layout.page_bytes() == page_bytes);
  CHECK(layout.file_size() == layout.header_size() + pages * page_bytes);
  for (int64_t p = 0; p < pages; ++p) {
    const Ifd& ifd = ifds[p];
    CHECK(One(ifd, 256) == static_cast<uint64_t>(width));
    CHECK(One(ifd, 257) == static_cast<uint64_t>(height));
    CHECK(One(ifd, 258) == static_cast<uint64_t>(8 * itemsize));
    CHECK(One(ifd, 259) == 1);
    CHECK(One(ifd, 262) == 1);
    CHECK(One(ifd, 277) == 1);
    CHECK(One(ifd, 339) == static_cast<uint64_t>(sample_format));
    const uint64_t rows = One(ifd, 278);
    const auto& offsets = ifd.at(273).values;
    const auto& counts = ifd.at(279).values;
    REQUIRE(offsets.size() == counts.size());
    REQUIRE(offsets.size() == (height + rows - 1) / rows);
    uint64_t at = static_cast<uint64_t>(layout.header_size() + p * page_bytes);
    for (size_t s = 0; s < offsets.size(); ++s) {
      CHECK(offsets[s] == at);
      const uint64_t rows_here = std::min<uint64_t>(rows, height - s * rows);
      CHECK(counts[s] == rows_here * width * itemsize);
      at += counts[s];
    }
    CHECK(at == static_cast<uint64_t>(layout.header_size() + (p + 1) * page_bytes));
  }
}

TEST_CASE("TIFF: one page, one strip, little-endian") {
  auto layout = TiffLayout::Make("'<i4'", 1, 45, 67);
  REQUIRE(layout.ok());
  CHECK_FALSE(layout->bigtiff());
  CHECK_FALSE(layout->big_endian());
  CHECK(layout->strips_per_page() == 1);
  CheckPages(*layout, 1, 45, 67, 4, 2);
  CHECK(layout->Header().substr(0, 4) == std::string("II\x2a\0", 4));
}

TEST_CASE("TIFF: a stack of pages with several strips each") {
  // Rows of 8000 bytes: 131 rows per 1 MiB strip, 8 strips per page.
  auto layout = TiffLayout::Make("<f8", 7, 1000, 1000);
  REQUIRE(layout.ok());
  CHECK(layout->rows_per_strip() == kTiffStripBytes / 8000);
  CHECK(layout->strips_per_page() == 8);
  CheckPages(*layout, 7, 1000, 1000, 8, 3);
}

TEST_CASE("TIFF: big-endian items give a big-endian (MM) file") {
  auto layout = TiffLayout::Make("'>u2'", 3, 5, 4);
  REQUIRE(layout.ok());
  CHECK(layout->big_endian());
  CheckPages(*layout, 3, 5, 4, 2, 1);
  CHECK(layout->Header().substr(0, 4) == std::string("MM\0\x2a", 4));
  // One-byte items have no byte order: little-endian.
  auto u1 = TiffLayout::Make("'|u1'", 2, 3, 3);
  REQUIRE(u1.ok());
  CHECK_FALSE(u1->big_endian());
  CheckPages(*u1, 2, 3, 3, 1, 1);
}

TEST_CASE("TIFF: bool is an 8-bit unsigned image") {
  auto layout = TiffLayout::Make("'|b1'", 1, 2, 9);
  REQUIRE(layout.ok());
  CheckPages(*layout, 1, 2, 9, 1, 1);
}

TEST_CASE("TIFF: BigTIFF when the file would reach the threshold (4 GiB by default)") {
  // 3 pages of 40000 x 40000 float32: 19.2 GB.
  auto huge = TiffLayout::Make("'<f4'", 3, 40000, 40000);
  REQUIRE(huge.ok());
  CHECK(huge->bigtiff());
  CheckPages(*huge, 3, 40000, 40000, 4, 3);
  // Just under 4 GiB stays classic; the same shape over a lowered threshold
  // is BigTIFF, in both byte orders.
  auto classic = TiffLayout::Make("'<u1'", 1, 65535, 65535);
  REQUIRE(classic.ok());
  CHECK_FALSE(classic->bigtiff());
  CHECK(classic->file_size() < (int64_t{1} << 32));
  for (const char* descr : {"'<i2'", "'>i2'", "'>f8'"}) {
    auto big = TiffLayout::Make(descr, 4, 300, 500, 1000);
    REQUIRE(big.ok());
    CHECK(big->bigtiff());
    const int size = descr[3] == '8' ? 8 : 2;
    CheckPages(*big, 4, 300, 500, size, descr[2] == 'f' ? 3 : 2);
  }
}

TEST_CASE("TIFF: any window of the header is those bytes of the whole header") {
  std::mt19937_64 rng(7);
  for (auto [descr, pages, height, width, above] :
       {std::tuple{"'<u2'", 5, 2000, 700, int64_t{1} << 32},
        std::tuple{"'>f4'", 9, 3, 3, int64_t{1} << 32},
        std::tuple{"'<f8'", 3, 900, 900, int64_t{100}}}) {
    auto layout = TiffLayout::Make(descr, pages, height, width, above);
    REQUIRE(layout.ok());
    const std::string whole = layout->Header();
    for (int i = 0; i < 300; ++i) {
      const int64_t offset = static_cast<int64_t>(rng() % whole.size());
      const size_t length = static_cast<size_t>(rng() % (whole.size() - offset + 1));
      std::string part(length, '\x55');
      layout->ReadHeader(offset, length, reinterpret_cast<uint8_t*>(part.data()));
      REQUIRE(part == whole.substr(offset, length));
    }
  }
}

TEST_CASE("TIFF: arrays TIFF cannot hold, and why") {
  for (const char* descr :
       {"'<c8'", "'|S4'", "'|V8'", "[('a', '<i4')]", "'<i8'", "'<u8'", "'<f2'", "'<M8[ns]'"}) {
    auto layout = TiffLayout::Make(descr, 1, 4, 4);
    CHECK_FALSE(layout.ok());
    CHECK(layout.status().error_number() == ENOTSUP);
    CHECK_FALSE(layout.status().message().empty());
  }
  CHECK_FALSE(TiffLayout::Make("'<f4'", 1, 0, 4).ok());
  CHECK_FALSE(TiffLayout::Make("'<f4'", 1, 4, 0).ok());
  CHECK_FALSE(TiffLayout::Make("'<f4'", 0, 4, 4).ok());
  CHECK_FALSE(TiffLayout::Make("'|u1'", 1, 1, int64_t{1} << 32).ok());
  CHECK(TiffLayout::Make("'|u1'", 1, 1, (int64_t{1} << 32) - 1).ok());
  CHECK(TiffLayout::Make("'<c8'", 1, 4, 4).status().message().find("TIFF") != std::string::npos);
}

TEST_CASE("PGM: header, maxval and byte swapping") {
  auto u1 = MakePgm("'|u1'", 3, 5);
  REQUIRE(u1.ok());
  CHECK(u1->header == "P5\n5 3\n255\n");
  CHECK_FALSE(u1->swap);
  auto le = MakePgm("'<u2'", 480, 640);
  REQUIRE(le.ok());
  CHECK(le->header == "P5\n640 480\n65535\n");
  CHECK(le->swap);
  auto be = MakePgm(">u2", 1, 1);
  REQUIRE(be.ok());
  CHECK_FALSE(be->swap);
  for (const char* descr : {"'<i2'", "'|i1'", "'<u4'", "'<f4'", "'|b1'", "'|S2'", "'<c8'"}) {
    auto pgm = MakePgm(descr, 4, 4);
    CHECK_FALSE(pgm.ok());
    CHECK(pgm.status().error_number() == ENOTSUP);
  }
  CHECK_FALSE(MakePgm("'|u1'", 0, 4).ok());
}

}  // namespace
}  // namespace b2ndfs::views
