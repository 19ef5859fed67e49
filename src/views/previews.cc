// preview.png and preview/A/IDX.png: quick-look images (README.md,
// "Previews"). An 8-bit grayscale PNG of a 2-D slice, scaled between two
// percentiles of that slice (preview_scale.h), its zlib stream stored, not
// compressed, so that its size is known before any pixel is
// (image_writers.h, PngLayout). preview.png shows a 2-D array, or the middle
// slice of a 3-D array along axis 0 (index shape[0] // 2; 4-D and more: the
// middle index of every axis but the last two); preview/A/IDX.png each slice
// of a 3-D array along axis A (IDX padded as in slices/). 0-D and 1-D arrays,
// empty slices and dtypes that have no gray level (complex, strings,
// structured) have none: meta.json says why.
// Cost: the scale needs every item of the slice (slices of more than
// kPreviewSampleMax pixels: every s-th row and column, s the least integer
// that brings them under it); it is computed on the first read of an open
// file and kept with it (two doubles), as is the Adler-32 (one pass over
// the slice, when the end of the file is read). Other reads render only the
// rows their bytes hold.
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include "image_writers.h"
#include "kinds.h"
#include "preview_scale.h"

namespace b2ndfs::views {
namespace {

// Items read at once while scanning a slice.
constexpr int64_t kScanItems = int64_t{1} << 20;
// Pixels of a slice whose values the percentiles are computed from exactly.
constexpr int64_t kPreviewSampleMax = int64_t{1} << 22;

// A 2-D image of the array: `box` has extent 1 on every axis but row_axis
// and col_axis (row_axis < col_axis), so its C order is row-major.
struct ImageBox {
  geometry::Box box;
  int row_axis = 0;
  int col_axis = 1;
  int64_t height() const { return box.stop[row_axis] - box.start[row_axis]; }
  int64_t width() const { return box.stop[col_axis] - box.start[col_axis]; }
  // Rows [r0, r1), columns [c0, c1).
  geometry::Box Part(int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
    geometry::Box part = box;
    part.start[row_axis] = box.start[row_axis] + r0;
    part.stop[row_axis] = box.start[row_axis] + r1;
    part.start[col_axis] = box.start[col_axis] + c0;
    part.stop[col_axis] = box.start[col_axis] + c1;
    return part;
  }
};

class PreviewFile : public Node {
 public:
  PreviewFile(std::string name, uint64_t ordinal, PngLayout png, PreviewType type, ImageBox image)
      : Node(std::move(name), ordinal),
        png_(std::move(png)),
        type_(type),
        image_(std::move(image)) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container&) const override { return png_.file_size(); }

  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override {
    if (offset >= png_.file_size()) return size_t{0};
    // The scale only where pixels are read: `file` and thumbnailers that
    // read the header alone decode nothing.
    return png_.Read(
        offset, length, out,
        [&](int64_t begin, int64_t end, uint8_t* dst) -> Status {
          B2NDFS_ASSIGN_OR_RETURN(PreviewScale scale, Scale(c));
          return Filtered(c, scale, begin, end, dst);
        },
        [&]() -> Result<uint32_t> {
          B2NDFS_ASSIGN_OR_RETURN(PreviewScale scale, Scale(c));
          return Adler(c, scale);
        });
  }

 private:
  // Items as doubles: `n` items of `box` (read now) into values.
  Status ReadValues(const store::Container& c, const geometry::Box& box,
                    std::vector<double>* values) const {
    const int64_t itemsize = c.layout().itemsize();
    const int64_t n = box.NumItems();
    std::vector<uint8_t> items(static_cast<size_t>(n * itemsize));
    B2NDFS_RETURN_IF_ERROR(c.ReadArrayBox(box, items.data()));
    values->resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) (*values)[i] = PreviewValue(type_, items.data() + i * itemsize);
    return Status::Ok();
  }

  Result<PreviewScale> Scale(const store::Container& c) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (scale_) return *scale_;
    if (type_.kind == 'b') return *(scale_ = ScaleOf(type_, nullptr));
    const int64_t h = image_.height(), w = image_.width();
    int64_t step = 1;
    while (CeilDiv(h, step) * CeilDiv(w, step) > kPreviewSampleMax) ++step;
    std::vector<double> values, part;
    values.reserve(static_cast<size_t>(CeilDiv(h, step) * CeilDiv(w, step)));
    const int64_t rows_at_once = std::max<int64_t>(1, kScanItems / w);
    for (int64_t r = 0; r < h;) {
      const int64_t rows = step == 1 ? std::min(rows_at_once, h - r) : 1;
      B2NDFS_RETURN_IF_ERROR(ReadValues(c, image_.Part(r, r + rows, 0, w), &part));
      for (size_t i = 0; i < part.size(); i += static_cast<size_t>(step)) values.push_back(part[i]);
      r += step == 1 ? rows : step;
    }
    return *(scale_ = ScaleOf(type_, &values));
  }

  // Bytes [begin, end) of the filtered image: per row a 0 then the pixels.
  Status Filtered(const store::Container& c, const PreviewScale& scale, int64_t begin, int64_t end,
                  uint8_t* out) const {
    const int64_t w = image_.width();
    const int64_t row_bytes = w + 1;
    std::vector<double> values;
    int64_t at = begin;
    while (at < end) {
      const int64_t row = at / row_bytes;
      const int64_t col = at % row_bytes;  // 0: the filter byte
      int64_t rows = 1, c0 = std::max<int64_t>(col - 1, 0), c1 = w;
      if (col == 0 && end - at >= row_bytes) {
        // Whole rows at once.
        rows = std::min((end - at) / row_bytes, std::max<int64_t>(1, kScanItems / w));
      } else {
        c1 = std::min(w, (end - row * row_bytes) - 1);
      }
      if (c1 > c0) {
        B2NDFS_RETURN_IF_ERROR(ReadValues(c, image_.Part(row, row + rows, c0, c1), &values));
      } else {
        values.clear();
      }
      // Write rows*(row_bytes) or the partial row, clipped to [at, end).
      size_t v = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t row_at = (row + r) * row_bytes;
        int64_t q = std::max(at, row_at);
        const int64_t q_end = std::min(end, row_at + row_bytes);
        for (; q < q_end; ++q) {
          const int64_t k = q - row_at;
          out[q - begin] = k == 0 ? 0 : PreviewPixel(scale, values[v++]);
        }
        at = q_end;
      }
    }
    return Status::Ok();
  }

  Result<uint32_t> Adler(const store::Container& c, const PreviewScale& scale) const {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (adler_) return *adler_;
    }
    const int64_t total = png_.filtered_size();
    const int64_t piece = std::max<int64_t>(image_.width() + 1, kScanItems);
    std::vector<uint8_t> bytes;
    uLong adler = adler32(0L, Z_NULL, 0);
    for (int64_t at = 0; at < total; at += piece) {
      const int64_t n = std::min(piece, total - at);
      bytes.resize(static_cast<size_t>(n));
      B2NDFS_RETURN_IF_ERROR(Filtered(c, scale, at, at + n, bytes.data()));
      adler = adler32(adler, bytes.data(), static_cast<uInt>(n));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    adler_ = static_cast<uint32_t>(adler);
    return *adler_;
  }

  static int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

  PngLayout png_;
  PreviewType type_;
  ImageBox image_;
  // Per open file (the node lives as long as the handle): what the first
  // read computed. Leaf lock, held while computing (one computation).
  mutable std::mutex mutex_;
  mutable std::optional<PreviewScale> scale_;
  mutable std::optional<uint32_t> adler_;
};

// preview.png's image: the array (2-D), or the middle index of every axis
// but the last two.
Result<ImageBox> WholeImage(const store::Container& c) {
  if (!c.ok()) return Status(ENOENT, "the container cannot be decoded");
  const auto& shape = c.layout().shape();
  const int ndim = static_cast<int>(shape.size());
  if (ndim < 2) return Status(ENOTSUP, "a 0-D or 1-D array is not an image");
  ImageBox image{geometry::Box::FromShape(shape), ndim - 2, ndim - 1};
  for (int a = 0; a + 2 < ndim; ++a) {
    image.box.start[a] = shape[a] / 2;
    image.box.stop[a] = image.box.start[a] + 1;
    if (shape[a] == 0) return Status(ENOTSUP, "the array has an empty axis");
  }
  return image;
}

// Slice `index` of a 3-D array along `axis`.
ImageBox SliceImage(const store::Container& c, int axis, int64_t index) {
  ImageBox image{geometry::Box::FromShape(c.layout().shape()), axis == 0 ? 1 : 0,
                 axis == 2 ? 1 : 2};
  image.box.start[axis] = index;
  image.box.stop[axis] = index + 1;
  return image;
}

Result<std::pair<PngLayout, PreviewType>> Applies(const store::Container& c,
                                                  const ImageBox& image) {
  B2NDFS_ASSIGN_OR_RETURN(PreviewType type, PreviewTypeOf(c.npy_descr()));
  B2NDFS_ASSIGN_OR_RETURN(PngLayout png, PngLayout::Make(image.height(), image.width()));
  return std::make_pair(std::move(png), type);
}

int PreviewIndexWidth(int64_t extent) { return DecimalWidth(extent > 0 ? extent - 1 : 0); }

// Ordinals from the entry's base: preview.png, then (3-D arrays) preview/,
// its three axis directories, and one per index of axis 0, 1, 2.
uint64_t PreviewFirstOrdinal(const geometry::ArrayLayout& layout, uint64_t base, int axis) {
  uint64_t ordinal = base + 5;
  for (int a = 0; a < axis; ++a) ordinal += static_cast<uint64_t>(layout.shape()[a]);
  return ordinal;
}

class PreviewAxisDir : public Node {
 public:
  PreviewAxisDir(uint64_t base, int axis)
      : Node(std::to_string(axis), base + 2 + static_cast<uint64_t>(axis)),
        base_(base),
        axis_(axis) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    const int64_t extent = c.layout().shape()[axis_];
    if (name.size() < 5 || name.compare(name.size() - 4, 4, ".png") != 0) return NotFound(name);
    auto index = ParseIndex(name.substr(0, name.size() - 4));
    if (!index || *index >= extent) return NotFound(name);
    ImageBox image = SliceImage(c, axis_, *index);
    auto applies = Applies(c, image);
    if (!applies.ok()) return NotFound(name);
    return std::shared_ptr<const Node>(std::make_shared<PreviewFile>(
        Padded(*index, PreviewIndexWidth(extent)) + ".png",
        PreviewFirstOrdinal(c.layout(), base_, axis_) + static_cast<uint64_t>(*index),
        std::move(applies->first), applies->second, std::move(image)));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    const int64_t extent = c.layout().shape()[axis_];
    const int width = PreviewIndexWidth(extent);
    const uint64_t first = PreviewFirstOrdinal(c.layout(), base_, axis_);
    // A slice is empty exactly when another axis is: then none is listed.
    const bool some = Applies(c, SliceImage(c, axis_, 0)).ok();
    return MakeListing(some ? static_cast<size_t>(extent) : 0, [width, first](size_t i) {
      return ListEntry{Padded(static_cast<int64_t>(i), width) + ".png", false, first + i};
    });
  }

 private:
  uint64_t base_;
  int axis_;
};

class PreviewDir : public Node {
 public:
  explicit PreviewDir(uint64_t base) : Node("preview", base + 1), base_(base) {}
  bool IsDirectory() const override { return true; }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container&,
                                             const std::string& name) const override {
    if (name != "0" && name != "1" && name != "2") return NotFound(name);
    return std::shared_ptr<const Node>(std::make_shared<PreviewAxisDir>(base_, name[0] - '0'));
  }
  Result<std::shared_ptr<const Listing>> List(const store::Container&) const override {
    const uint64_t base = base_;
    return MakeListing(3, [base](size_t i) {
      return ListEntry{std::to_string(i), true, base + 2 + i};
    });
  }

 private:
  uint64_t base_;
};

// Whether preview/ exists: a 3-D array of a dtype previews read.
Status PreviewDirApplies(const store::Container& c) {
  if (!c.ok()) return Status(ENOENT, "the container cannot be decoded");
  if (c.layout().ndim() != 3) {
    // preview.png is named only where it exists (2-D and more, no empty axis,
    // a dtype previews read).
    const auto& shape = c.layout().shape();
    const bool png = shape.size() >= 2 && std::find(shape.begin(), shape.end(), 0) == shape.end() &&
                     PreviewTypeOf(c.npy_descr()).ok();
    return Status(ENOTSUP, std::string("preview/ holds the 2-D slices of 3-D arrays") +
                               (png ? " (other arrays: preview.png only)" : ""));
  }
  return PreviewTypeOf(c.npy_descr()).status();
}

std::string ScaleNote() {
  return "8-bit gray scaled per slice from its 0.5th (black) to its 99.5th (white) percentile "
         "(numpy.percentile, linear, of its finite items as float64); NaN black; README.md, "
         "Previews";
}

class PreviewEntry : public RootEntry {
 public:
  std::vector<ListEntry> Names(const store::Container& c, uint64_t base) const override {
    std::vector<ListEntry> names;
    auto whole = WholeImage(c);
    if (whole.ok() && Applies(c, *whole).ok()) names.push_back({kPng, false, base});
    if (PreviewDirApplies(c).ok()) names.push_back({"preview", true, base + 1});
    return names;
  }
  uint64_t OrdinalCount(const store::Container& c) const override {
    if (!c.ok() || c.layout().ndim() < 2) return 0;
    if (c.layout().ndim() != 3) return 1;
    return PreviewFirstOrdinal(c.layout(), 0, 3);
  }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name == "preview") {
      if (!PreviewDirApplies(c).ok()) return std::shared_ptr<const Node>();
      return std::shared_ptr<const Node>(std::make_shared<PreviewDir>(base));
    }
    if (name != kPng) return std::shared_ptr<const Node>();
    auto whole = WholeImage(c);
    if (!whole.ok()) return std::shared_ptr<const Node>();
    auto applies = Applies(c, *whole);
    if (!applies.ok()) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<PreviewFile>(
        kPng, base, std::move(applies->first), applies->second, std::move(whole).value()));
  }
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    auto describe = [&](std::string name, Result<ImageBox> image) {
      store::FileDescription d{std::move(name), {}, 0, {}};
      if (image.ok()) {
        d.shape = {image->height(), image->width()};
        auto applies = Applies(c, *image);
        if (applies.ok()) {
          d.size = applies->first.file_size();
          d.note = ScaleNote();
        } else {
          d.absent = applies.status().message();
        }
      } else {
        d.absent = image.status().message();
      }
      out->push_back(std::move(d));
    };
    describe(kPng, WholeImage(c));
    if (Status dir = PreviewDirApplies(c); !dir.ok()) {
      out->push_back({"preview", {}, 0, dir.message()});
      return;
    }
    for (int axis = 0; axis < 3; ++axis) {
      describe("preview/" + std::to_string(axis) + "/IDX.png", SliceImage(c, axis, 0));
    }
  }

 private:
  static constexpr const char* kPng = "preview.png";
};

}  // namespace

std::unique_ptr<RootEntry> MakePreviewEntry() { return std::make_unique<PreviewEntry>(); }

}  // namespace b2ndfs::views
