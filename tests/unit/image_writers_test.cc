// The TIFF and PGM layouts: headers decoded back by a small independent TIFF
// reader (both byte orders, classic and BigTIFF, one and many strips), any
// window of the header equal to the same bytes of the whole, and the arrays
// each format cannot hold (with the reason meta.json shows). The PNG layout of
// the previews, inflated by zlib, and their scaling against NumPy's numbers.
#include "image_writers.h"

#include <zlib.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "preview_scale.h"

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

namespace b2ndfs::views {
namespace {

// The filtered image of a PngLayout test: byte q of it, a function of q.
uint8_t FilteredByte(int64_t q, int64_t width) {
  return q % (width + 1) == 0 ? 0 : static_cast<uint8_t>((q * 7 + q / 3) & 0xff);
}

std::string WholePng(const PngLayout& png, int* adler_calls) {
  std::string file(static_cast<size_t>(png.file_size()), '\0');
  auto got = png.Read(
      0, file.size(), reinterpret_cast<uint8_t*>(file.data()),
      [&](int64_t begin, int64_t end, uint8_t* out) {
        for (int64_t q = begin; q < end; ++q) out[q - begin] = FilteredByte(q, png.width());
        return Status::Ok();
      },
      [&]() -> Result<uint32_t> {
        ++*adler_calls;
        std::vector<uint8_t> all(static_cast<size_t>(png.filtered_size()));
        for (size_t q = 0; q < all.size(); ++q) all[q] = FilteredByte(q, png.width());
        return static_cast<uint32_t>(adler32(adler32(0, Z_NULL, 0), all.data(), all.size()));
      });
  REQUIRE(got.ok());
  REQUIRE(*got == file.size());
  return file;
}

TEST_CASE("PNG of stored deflate blocks: size from width and height, zlib inflates it", "[png]") {
  for (const auto& size : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {3, 5}, {300, 400}, {2, 65534}, {1, 65535}, {1, 70000}, {200, 1000}}) {
    // Not a structured binding: the lambdas below capture w (C++20 allows
    // that; clang 14, which builds the fuzz tree, does not).
    const int64_t h = size.first, w = size.second;
    CAPTURE(h, w);
    auto png = PngLayout::Make(h, w);
    REQUIRE(png.ok());
    const int64_t filtered = h * (w + 1);
    CHECK(png->file_size() == 75 + 17 * ((filtered + 65534) / 65535) + filtered);
    int adler_calls = 0;
    const std::string file = WholePng(*png, &adler_calls);
    CHECK(adler_calls == 1);
    CHECK(file.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
    // Walk the chunks: CRCs, IHDR, and the IDATs' concatenation inflates
    // (zlib checks the Adler-32) to exactly the filtered image.
    std::string idat, types;
    size_t pos = 8;
    auto be32 = [&](size_t at) {
      return static_cast<uint32_t>(static_cast<uint8_t>(file[at])) << 24 |
             static_cast<uint32_t>(static_cast<uint8_t>(file[at + 1])) << 16 |
             static_cast<uint32_t>(static_cast<uint8_t>(file[at + 2])) << 8 |
             static_cast<uint8_t>(file[at + 3]);
    };
    while (pos < file.size()) {
      const uint32_t n = be32(pos);
      const std::string type = file.substr(pos + 4, 4);
      const auto* body = reinterpret_cast<const Bytef*>(file.data() + pos + 4);
      CHECK(crc32(crc32(0, Z_NULL, 0), body, n + 4) == be32(pos + 8 + n));
      if (type == "IHDR") {
        CHECK(be32(pos + 8) == static_cast<uint32_t>(w));
        CHECK(be32(pos + 12) == static_cast<uint32_t>(h));
        CHECK(file.substr(pos + 16, 5) == std::string("\x08\0\0\0\0", 5));
      }
      if (type == "IDAT") idat += file.substr(pos + 8, n);
      types += type[0];
      pos += 12 + n;
    }
    CHECK(pos == file.size());
    CHECK(types.front() == 'I');
    CHECK(types.substr(types.size() - 1) == "I");  // IEND
    std::vector<uint8_t> raw(static_cast<size_t>(filtered) + 1);
    uLongf raw_size = raw.size();
    REQUIRE(uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()),
                       idat.size()) == Z_OK);
    REQUIRE(raw_size == static_cast<uLongf>(filtered));
    bool same = true;
    for (int64_t q = 0; q < filtered; ++q) same = same && raw[q] == FilteredByte(q, w);
    CHECK(same);
    // Any window equals the same bytes of the whole; the Adler-32 is asked
    // for only by windows that reach it (or its chunk's CRC).
    std::mt19937_64 rng(static_cast<uint64_t>(h * 131 + w));
    for (int i = 0; i < 40; ++i) {
      const int64_t off = static_cast<int64_t>(rng() % file.size());
      const size_t len = 1 + rng() % 70000;
      std::string window(len, '\0');
      int calls = 0;
      auto got = png->Read(
          off, len, reinterpret_cast<uint8_t*>(window.data()),
          [&](int64_t begin, int64_t end, uint8_t* out) {
            REQUIRE(begin >= 0);
            REQUIRE(end <= filtered);
            for (int64_t q = begin; q < end; ++q) out[q - begin] = FilteredByte(q, w);
            return Status::Ok();
          },
          [&]() -> Result<uint32_t> {
            ++calls;
            return static_cast<uint32_t>(
                be32(file.size() - 12 - 8));  // the value the whole file holds
          });
      REQUIRE(got.ok());
      const size_t n = std::min(len, file.size() - static_cast<size_t>(off));
      CHECK(*got == n);
      CHECK(window.substr(0, n) == file.substr(static_cast<size_t>(off), n));
      const int64_t adler_at = static_cast<int64_t>(file.size()) - 12 - 8;
      CHECK(calls == (off + static_cast<int64_t>(n) > adler_at ? 1 : 0));
    }
  }
  CHECK(PngLayout::Make(0, 5).status().error_number() == ENOTSUP);
  CHECK(PngLayout::Make(5, int64_t{1} << 31).status().error_number() == ENOTSUP);
}

TEST_CASE("preview scaling: NumPy's percentiles, the gray levels, the dtypes", "[png]") {
  // Values numpy.percentile (1.24, method linear) gives for these.
  std::vector<double> v{3.0, -1.5, 7.25, 0.0, 2.0, 100.0, 5.5, -20.0, 9.0, 1e-3, 4.0};
  CHECK(Percentile(&v, 0.5) == -19.075);
  CHECK(Percentile(&v, 99.5) == 95.44999999999993);
  CHECK(Percentile(&v, 50) == 3.0);
  CHECK(Percentile(&v, 37.3) == 1.46027);
  std::vector<double> w;
  for (int i = 1; i <= 2000; ++i) w.push_back(i * 0.1);
  CHECK(Percentile(&w, 0.5) == 1.0995000000000001);
  CHECK(Percentile(&w, 99.5) == 199.0005);
  std::vector<double> one{4.5};
  CHECK(Percentile(&one, 0.5) == 4.5);

  const PreviewScale s{10, 20, false};
  CHECK(PreviewPixel(s, 10) == 0);
  CHECK(PreviewPixel(s, 5) == 0);
  CHECK(PreviewPixel(s, 20) == 255);
  CHECK(PreviewPixel(s, INFINITY) == 255);
  CHECK(PreviewPixel(s, -INFINITY) == 0);
  CHECK(PreviewPixel(s, NAN) == 0);
  CHECK(PreviewPixel(s, 15) == 128);                       // 127.5 rounds up
  CHECK(PreviewPixel(PreviewScale{3, 3, false}, 3) == 0);  // constant
  CHECK(PreviewPixel(PreviewScale{0, 0, true}, 1) == 255);
  std::vector<double> with_nan{NAN, 1, 2, INFINITY};
  const PreviewScale finite = ScaleOf(PreviewType{'f', 8, false}, &with_nan);
  CHECK(finite.lo == 1.005);
  CHECK(finite.hi == 1.995);

  const uint8_t half[2] = {0x00, 0x3c};  // 1.0 in float16, little-endian
  CHECK(PreviewValue(*PreviewTypeOf("'<f2'"), half) == 1.0);
  const uint8_t i16be[2] = {0xff, 0xfe};  // -2
  CHECK(PreviewValue(*PreviewTypeOf("'>i2'"), i16be) == -2.0);
  const uint8_t u64[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  CHECK(PreviewValue(*PreviewTypeOf("'<u8'"), u64) == 18446744073709551615.0);
  CHECK(PreviewTypeOf("'|b1'")->kind == 'b');
  CHECK(PreviewTypeOf("'<c8'").status().error_number() == ENOTSUP);
  CHECK(PreviewTypeOf("'|S4'").status().error_number() == ENOTSUP);
  CHECK(PreviewTypeOf("[('a', '<i4')]").status().error_number() == ENOTSUP);
}

}  // namespace
}  // namespace b2ndfs::views
