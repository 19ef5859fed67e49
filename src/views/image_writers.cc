#include "image_writers.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "b2ndfs/util/checked_math.h"
#include "header_writers.h"

namespace b2ndfs::views {
namespace {

Status Unsupported(std::string why) { return Status(ENOTSUP, std::move(why)); }

// The item type, bool included (an 8-bit image of 0 and 1).
Result<NumericType> ImageType(const char* format, const std::string& descr) {
  if (UnquotedDescr(descr) == "|b1") return NumericType{'b', 1, false};
  Result<NumericType> t = ParseNumericDescr(descr);
  if (!t.ok()) return Unsupported(std::string(format) + ": " + t.status().message());
  return t;
}

Status CheckExtent(const char* format, int64_t n, int64_t max) {
  if (n <= 0) return Unsupported(std::string(format) + " cannot hold an empty image");
  if (n > max) {
    return Unsupported(std::string(format) + " images are at most " + std::to_string(max) +
                       " pixels wide or high");
  }
  return Status::Ok();
}

// Copies src (the bytes at file position `at`) where it meets the window
// [begin, end) that `out` holds.
void CopyClipped(const uint8_t* src, int64_t at, int64_t n, int64_t begin, int64_t end,
                 uint8_t* out) {
  const int64_t from = std::max(at, begin);
  const int64_t to = std::min(at + n, end);
  if (from < to)
    std::memcpy(out + (from - begin), src + (from - at), static_cast<size_t>(to - from));
}

constexpr uint16_t kShort = 3, kLong = 4, kLong8 = 16;
constexpr int kIfdEntries = 11;

}  // namespace

Result<TiffLayout> TiffLayout::Make(const std::string& descr, int64_t pages, int64_t height,
                                    int64_t width, int64_t bigtiff_above) {
  B2NDFS_ASSIGN_OR_RETURN(NumericType t, ImageType("TIFF", descr));
  TiffLayout l;
  switch (t.kind) {
    case 'b':
    case 'u':
    case 'i':
      // 64-bit integers are not baseline TIFF: ImageJ, libtiff's tools and
      // most viewers refuse them.
      if (t.size > 4)
        return Unsupported("TIFF has no common type for items " + UnquotedDescr(descr));
      l.sample_format_ = t.kind == 'i' ? 2 : 1;
      break;
    case 'f':
      if (t.size != 4 && t.size != 8) {
        return Unsupported("TIFF has no common type for items " + UnquotedDescr(descr));
      }
      l.sample_format_ = 3;
      break;
    default:
      return Unsupported("TIFF has no type for items " + UnquotedDescr(descr));
  }
  // ImageWidth and ImageLength are LONG.
  B2NDFS_RETURN_IF_ERROR(CheckExtent("TIFF", height, UINT32_MAX));
  B2NDFS_RETURN_IF_ERROR(CheckExtent("TIFF", width, UINT32_MAX));
  if (pages <= 0) return Unsupported("TIFF cannot hold an empty stack");
  l.big_endian_ = t.big_endian;
  l.bits_ = 8 * t.size;
  l.pages_ = pages;
  l.height_ = height;
  l.width_ = width;
  // Sizes of the array's own boxes: the layout has checked they fit.
  l.row_bytes_ = width * t.size;
  l.page_bytes_ = height * l.row_bytes_;
  l.rows_per_strip_ = std::clamp<int64_t>(kTiffStripBytes / l.row_bytes_, 1, height);
  l.strips_ = CeilDiv(height, l.rows_per_strip_);
  for (bool big : {false, true}) {
    l.bigtiff_ = big;
    auto blocks = CheckedMul(pages, l.BlockSize());
    auto header = blocks ? CheckedAdd(*blocks, l.FileHeaderSize() + 15) : std::nullopt;
    if (!header) return Unsupported("the TIFF header would be too large");
    l.header_size_ = *header / 16 * 16;  // pixels aligned to 16 bytes
    auto pixels = CheckedMul(pages, l.page_bytes_);
    auto size = pixels ? CheckedAdd(*pixels, l.header_size_) : std::nullopt;
    if (!size) return Unsupported("the TIFF file would be too large");
    if (big || *size < bigtiff_above) break;
  }
  return l;
}

int64_t TiffLayout::IfdSize() const {
  return bigtiff_ ? 8 + 20 * kIfdEntries + 8 : 2 + 12 * kIfdEntries + 4;
}

int64_t TiffLayout::StripOffset(int64_t page, int64_t strip) const {
  return header_size_ + page * page_bytes_ + strip * rows_per_strip_ * row_bytes_;
}

int64_t TiffLayout::StripByteCount(int64_t strip) const {
  return std::min(rows_per_strip_, height_ - strip * rows_per_strip_) * row_bytes_;
}

void TiffLayout::Put(uint64_t value, int bytes, uint8_t* out) const {
  for (int i = 0; i < bytes; ++i) {
    const int shift = 8 * (big_endian_ ? bytes - 1 - i : i);
    out[i] = static_cast<uint8_t>((value >> shift) & 0xff);
  }
}

std::string TiffLayout::Ifd(int64_t page) const {
  std::string ifd(static_cast<size_t>(IfdSize()), '\0');
  auto* p = reinterpret_cast<uint8_t*>(ifd.data());
  const int count_size = bigtiff_ ? 8 : 2;
  const int entry_size = bigtiff_ ? 20 : 12;
  const int field = OffsetSize();  // the count and the value/offset field
  Put(kIfdEntries, count_size, p);
  int entry = 0;
  // Entries in ascending tag order, as TIFF requires.
  auto add = [&](uint16_t tag, uint16_t type, uint64_t count, uint64_t value) {
    uint8_t* e = p + count_size + entry_size * entry++;
    Put(tag, 2, e);
    Put(type, 2, e + 2);
    Put(count, field, e + 4);
    // An inline value is left-justified in its field.
    const int value_size = type == kShort ? 2 : type == kLong ? 4 : 8;
    Put(value, count == 1 ? value_size : field, e + 4 + field);
  };
  const uint16_t offset_type = bigtiff_ ? kLong8 : kLong;
  const int64_t arrays = PageBlockOffset(page) + IfdSize();
  const bool inline_strips = strips_ == 1;
  add(256, kLong, 1, static_cast<uint64_t>(width_));
  add(257, kLong, 1, static_cast<uint64_t>(height_));
  add(258, kShort, 1, static_cast<uint64_t>(bits_));
  add(259, kShort, 1, 1);  // no compression
  add(262, kShort, 1, 1);  // BlackIsZero
  add(273, offset_type, static_cast<uint64_t>(strips_),
      static_cast<uint64_t>(inline_strips ? StripOffset(page, 0) : arrays));
  add(277, kShort, 1, 1);  // one sample per pixel
  add(278, kLong, 1, static_cast<uint64_t>(rows_per_strip_));
  add(279, offset_type, static_cast<uint64_t>(strips_),
      static_cast<uint64_t>(inline_strips ? StripByteCount(0) : arrays + strips_ * OffsetSize()));
  add(284, kShort, 1, 1);  // chunky
  add(339, kShort, 1, static_cast<uint64_t>(sample_format_));
  const int64_t next = page + 1 < pages_ ? PageBlockOffset(page + 1) : 0;
  Put(static_cast<uint64_t>(next), field, p + count_size + entry_size * kIfdEntries);
  return ifd;
}

void TiffLayout::ReadHeader(int64_t offset, size_t length, uint8_t* out) const {
  const int64_t begin = offset;
  const int64_t end = offset + static_cast<int64_t>(length);
  std::memset(out, 0, length);
  uint8_t head[16] = {};
  head[0] = head[1] = big_endian_ ? 'M' : 'I';
  if (bigtiff_) {
    Put(43, 2, head + 2);
    Put(8, 2, head + 4);  // offset size
    Put(16, 8, head + 8);
  } else {
    Put(42, 2, head + 2);
    Put(8, 4, head + 4);
  }
  CopyClipped(head, 0, FileHeaderSize(), begin, end, out);
  const int64_t block = BlockSize();
  const int osz = OffsetSize();
  for (int64_t page = std::max<int64_t>(0, (begin - FileHeaderSize()) / block);
       page < pages_ && PageBlockOffset(page) < end; ++page) {
    const int64_t at = PageBlockOffset(page);
    if (at + IfdSize() > begin) {
      const std::string ifd = Ifd(page);
      CopyClipped(reinterpret_cast<const uint8_t*>(ifd.data()), at, IfdSize(), begin, end, out);
    }
    if (strips_ == 1) continue;
    // StripOffsets then StripByteCounts: only the entries in the window.
    for (int array = 0; array < 2; ++array) {
      const int64_t base = at + IfdSize() + array * strips_ * osz;
      const int64_t first = std::max<int64_t>(0, (begin - base) / osz);
      const int64_t last = std::min(strips_, CeilDiv(std::max<int64_t>(0, end - base), osz));
      for (int64_t s = first; s < last; ++s) {
        uint8_t value[8];
        Put(static_cast<uint64_t>(array == 0 ? StripOffset(page, s) : StripByteCount(s)), osz,
            value);
        CopyClipped(value, base + s * osz, osz, begin, end, out);
      }
    }
  }
}

std::string TiffLayout::Header() const {
  std::string out(static_cast<size_t>(header_size_), '\0');
  ReadHeader(0, out.size(), reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

Result<PgmLayout> MakePgm(const std::string& descr, int64_t height, int64_t width) {
  B2NDFS_ASSIGN_OR_RETURN(NumericType t, ImageType("PGM", descr));
  if (t.kind != 'u' || t.size > 2) {
    return Unsupported("PGM holds unsigned 8- or 16-bit items, not " + UnquotedDescr(descr));
  }
  B2NDFS_RETURN_IF_ERROR(CheckExtent("PGM", height, INT32_MAX));
  B2NDFS_RETURN_IF_ERROR(CheckExtent("PGM", width, INT32_MAX));
  PgmLayout pgm;
  pgm.header = "P5\n" + std::to_string(width) + " " + std::to_string(height) + "\n" +
               (t.size == 1 ? "255" : "65535") + "\n";
  pgm.swap = t.size == 2 && !t.big_endian;
  return pgm;
}

namespace {

void PutBig32(uint32_t v, uint8_t* out) {
  out[0] = static_cast<uint8_t>(v >> 24);
  out[1] = static_cast<uint8_t>(v >> 16);
  out[2] = static_cast<uint8_t>(v >> 8);
  out[3] = static_cast<uint8_t>(v);
}

// A PNG chunk of `data`: length, type, data, CRC-32 of type and data.
std::vector<uint8_t> PngChunk(const char* type, const uint8_t* data, size_t n) {
  std::vector<uint8_t> chunk(12 + n);
  PutBig32(static_cast<uint32_t>(n), chunk.data());
  std::memcpy(chunk.data() + 4, type, 4);
  if (n > 0) std::memcpy(chunk.data() + 8, data, n);
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), chunk.data() + 4, static_cast<uInt>(4 + n));
  PutBig32(static_cast<uint32_t>(crc), chunk.data() + 8 + n);
  return chunk;
}

// deflate, 32 KiB window, no dictionary; (0x78 * 256 + 0x01) % 31 == 0.
constexpr uint8_t kZlibHeader[2] = {0x78, 0x01};

// The head of a PNG: signature, IHDR, the IDAT of the zlib header (47 bytes).
std::vector<uint8_t> PngHead(int64_t height, int64_t width) {
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> head(kSignature, kSignature + 8);
  uint8_t ihdr[13] = {};
  PutBig32(static_cast<uint32_t>(width), ihdr);
  PutBig32(static_cast<uint32_t>(height), ihdr + 4);
  ihdr[8] = 8;  // bit depth; color type 0 (gray), deflate, filter 0, no interlace
  for (const auto& chunk :
       {PngChunk("IHDR", ihdr, sizeof ihdr), PngChunk("IDAT", kZlibHeader, 2)}) {
    head.insert(head.end(), chunk.begin(), chunk.end());
  }
  return head;
}

}  // namespace

Result<PngLayout> PngLayout::Make(int64_t height, int64_t width) {
  B2NDFS_RETURN_IF_ERROR(CheckExtent("PNG", height, INT32_MAX));
  B2NDFS_RETURN_IF_ERROR(CheckExtent("PNG", width, INT32_MAX));
  auto filtered = CheckedMul(height, width + 1);
  if (!filtered || *filtered > (int64_t{1} << 60)) return Unsupported("the PNG would be too large");
  PngLayout l;
  l.height_ = height;
  l.width_ = width;
  return l;
}

Result<size_t> PngLayout::Read(int64_t offset, size_t length, uint8_t* out,
                               const FilteredFn& filtered, const AdlerFn& adler) const {
  if (offset < 0) return Status(EINVAL, "negative offset");
  const int64_t size = file_size();
  if (offset >= size) return size_t{0};
  const int64_t begin = offset;
  const int64_t end = std::min(size, offset + static_cast<int64_t>(length));
  constexpr int64_t kHead = 47;
  if (begin < kHead) {
    const std::vector<uint8_t> head = PngHead(height_, width_);
    CopyClipped(head.data(), 0, kHead, begin, end, out);
  }
  // Block chunks: length, "IDAT", 5-byte block header, payload, CRC.
  const int64_t n = blocks();
  const int64_t total = filtered_size();
  const int64_t stride = 17 + kBlockBytes;
  const int64_t blocks_end = kHead + 17 * n + total;
  std::vector<uint8_t> chunk;
  for (int64_t k = std::max<int64_t>(0, (begin - kHead) / stride); k < n; ++k) {
    const int64_t at = kHead + k * stride;
    if (at >= end) break;
    const int64_t first = k * kBlockBytes;
    const int64_t payload = std::min(kBlockBytes, total - first);
    const int64_t chunk_size = 17 + payload;
    chunk.assign(static_cast<size_t>(chunk_size), 0);
    PutBig32(static_cast<uint32_t>(5 + payload), chunk.data());
    std::memcpy(chunk.data() + 4, "IDAT", 4);
    chunk[8] = k + 1 == n ? 1 : 0;  // BFINAL, BTYPE 00 (stored)
    chunk[9] = static_cast<uint8_t>(payload & 0xff);
    chunk[10] = static_cast<uint8_t>(payload >> 8);
    chunk[11] = static_cast<uint8_t>(~payload & 0xff);
    chunk[12] = static_cast<uint8_t>((~payload >> 8) & 0xff);
    const bool needs_crc = end > at + 13 + payload;
    // The payload: all of it for the CRC, else only what the read covers.
    const int64_t p0 = needs_crc ? 0 : std::clamp<int64_t>(begin - at - 13, 0, payload);
    const int64_t p1 = needs_crc ? payload : std::clamp<int64_t>(end - at - 13, 0, payload);
    if (p1 > p0) B2NDFS_RETURN_IF_ERROR(filtered(first + p0, first + p1, chunk.data() + 13 + p0));
    if (needs_crc) {
      const uLong crc =
          crc32(crc32(0L, Z_NULL, 0), chunk.data() + 4, static_cast<uInt>(chunk_size - 8));
      PutBig32(static_cast<uint32_t>(crc), chunk.data() + chunk_size - 4);
    }
    CopyClipped(chunk.data(), at, chunk_size, begin, end, out);
  }
  if (end > blocks_end) {
    // The Adler-32 chunk (its length and type need no Adler), then IEND.
    uint8_t value[4] = {};
    std::vector<uint8_t> tail;
    if (end > blocks_end + 8) {
      B2NDFS_ASSIGN_OR_RETURN(uint32_t a, adler());
      PutBig32(a, value);
      tail = PngChunk("IDAT", value, 4);
    } else {
      tail = PngChunk("IDAT", value, 4);  // the CRC is not in the window
    }
    const std::vector<uint8_t> iend = PngChunk("IEND", nullptr, 0);
    tail.insert(tail.end(), iend.begin(), iend.end());
    CopyClipped(tail.data(), blocks_end, static_cast<int64_t>(tail.size()), begin, end, out);
  }
  return static_cast<size_t>(end - begin);
}

}  // namespace b2ndfs::views
