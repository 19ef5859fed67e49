// views/image_writers: the byte layout of the image files (data.tiff,
// images/A/IDX.tiff, images/A/IDX.pgm) around pixels that stream unchanged
// from the array.
//
// A TIFF here is: the 8-byte (BigTIFF: 16-byte) file header, then one block
// per page (its IFD, then its StripOffsets and StripByteCounts arrays when a
// page has several strips), zero padding to a multiple of 16, then every
// page's pixels back to back in C order: exactly the array's box, so the
// pixels need no copy or transform. The byte order of the file is the
// dtype's ("II" little, "MM" big), so no item is ever swapped. Classic TIFF
// while the file fits in 4 GiB, BigTIFF above. The header bytes are computed
// on demand for any range (a stack of a million pages never sits in memory).
// A PGM (P5) is a short text header then big-endian samples: little-endian
// 16-bit items are swapped by the reader (PgmLayout::swap).
//
// A PNG (PngLayout) is 8-bit grayscale whose zlib stream is made of stored
// (uncompressed) deflate blocks, so that its size is a function of its width
// and height alone; its pixels are computed (previews), so it is read
// through callbacks that render rows.
//
// Pure values and functions: no I/O, immutable, any thread.
// Errors: when a format cannot hold the array (dtype, empty or too long
// axis) Make* return ENOTSUP with the reason in words, for meta.json.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "b2ndfs/util/status.h"

namespace b2ndfs::views {

// Rows of one strip are chosen so that a strip holds about this many bytes.
constexpr int64_t kTiffStripBytes = 1 << 20;

class TiffLayout {
 public:
  // `pages` images of `height` rows of `width` items of NumPy descr `descr`
  // (quoted as Container::npy_descr() gives it, or bare). Integers of 8, 16
  // and 32 bits (SampleFormat 1 and 2), floats of 32 and 64 bits (3), and
  // bool as 8-bit unsigned. `bigtiff_above` is the file size from which
  // BigTIFF is written (tests lower it).
  static Result<TiffLayout> Make(const std::string& descr, int64_t pages, int64_t height,
                                 int64_t width, int64_t bigtiff_above = int64_t{1} << 32);

  bool big_endian() const { return big_endian_; }
  bool bigtiff() const { return bigtiff_; }
  int64_t pages() const { return pages_; }
  int64_t rows_per_strip() const { return rows_per_strip_; }
  int64_t strips_per_page() const { return strips_; }
  // Bytes before the first pixel; the pixels follow, pages back to back.
  int64_t header_size() const { return header_size_; }
  int64_t page_bytes() const { return page_bytes_; }
  int64_t file_size() const { return header_size_ + pages_ * page_bytes_; }

  // Writes header bytes [offset, offset + length) to `out`; the range must
  // lie inside [0, header_size()).
  void ReadHeader(int64_t offset, size_t length, uint8_t* out) const;
  std::string Header() const;  // the whole header (tests, small files)

 private:
  TiffLayout() = default;
  int OffsetSize() const { return bigtiff_ ? 8 : 4; }
  int64_t IfdSize() const;
  int64_t ArraysSize() const { return strips_ > 1 ? 2 * strips_ * OffsetSize() : 0; }
  int64_t BlockSize() const { return IfdSize() + ArraysSize(); }
  int64_t FileHeaderSize() const { return bigtiff_ ? 16 : 8; }
  int64_t PageBlockOffset(int64_t page) const { return FileHeaderSize() + page * BlockSize(); }
  int64_t StripOffset(int64_t page, int64_t strip) const;
  int64_t StripByteCount(int64_t strip) const;
  std::string Ifd(int64_t page) const;
  void Put(uint64_t value, int bytes, uint8_t* out) const;

  bool big_endian_ = false;
  bool bigtiff_ = false;
  int bits_ = 8;
  int sample_format_ = 1;
  int64_t pages_ = 0, height_ = 0, width_ = 0;
  int64_t row_bytes_ = 0, page_bytes_ = 0;
  int64_t rows_per_strip_ = 0, strips_ = 0;
  int64_t header_size_ = 0;
};

struct PgmLayout {
  std::string header;  // "P5\n<width> <height>\n<maxval>\n"
  // Swap the bytes of each 16-bit sample (little-endian items): PGM is
  // big-endian.
  bool swap = false;
};

// A binary PGM of one `height` x `width` image of unsigned 8- or 16-bit items
// (maxval 255 or 65535).
Result<PgmLayout> MakePgm(const std::string& descr, int64_t height, int64_t width);

// An 8-bit grayscale, non-interlaced PNG: the signature; IHDR; an IDAT
// holding the zlib header (78 01); one IDAT per stored deflate block (its
// 5-byte header, then up to 65535 bytes of the filtered image: each row is a
// filter byte 0 and the row's pixels); an IDAT holding the Adler-32 of the
// filtered image; IEND. Every chunk carries its CRC-32. So
//   file_size = 75 + 17 * ceil(height * (width + 1) / 65535) + height * (width + 1).
class PngLayout {
 public:
  // Bytes [begin, end) of the filtered image (height * (width + 1) bytes).
  using FilteredFn = std::function<Status(int64_t begin, int64_t end, uint8_t* out)>;
  // The Adler-32 of the whole filtered image.
  using AdlerFn = std::function<Result<uint32_t>()>;

  static constexpr int64_t kBlockBytes = 65535;  // a stored block's largest payload

  // ENOTSUP for an empty image or a side over 2^31 - 1.
  static Result<PngLayout> Make(int64_t height, int64_t width);

  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  int64_t filtered_size() const { return height_ * (width_ + 1); }
  int64_t blocks() const { return (filtered_size() + kBlockBytes - 1) / kBlockBytes; }
  int64_t file_size() const { return 75 + 17 * blocks() + filtered_size(); }

  // Writes bytes [offset, offset + length) of the file (clipped at its end)
  // to `out`, asking `filtered` for the pieces of the image they hold (a
  // whole block where a read covers its chunk's CRC), and `adler` only when
  // the read reaches the Adler-32 or its chunk's CRC. Returns bytes written.
  Result<size_t> Read(int64_t offset, size_t length, uint8_t* out, const FilteredFn& filtered,
                      const AdlerFn& adler) const;

 private:
  PngLayout() = default;
  int64_t height_ = 0, width_ = 0;
};

}  // namespace b2ndfs::views
