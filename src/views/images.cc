// data.tiff and images/: the array as images. data.tiff holds a 2-D array as
// one image, a 3-D array as a stack of one page per index along axis 0 (so
// Fiji opens a stack); images/A/IDX.tiff (and .pgm for unsigned 8/16-bit
// items) hold each 2-D slice of a 3-D array along axis A, IDX padded as in
// slices/. The headers are computed (image_writers.h); the pixels stream from
// the array through the same reads as slices/, never materialized whole.
// meta.json says why a kind is absent (dtype, ndim, empty axis).
#include <cstring>
#include <utility>

#include "image_writers.h"
#include "kinds.h"

namespace b2ndfs::views {
namespace {

// A TIFF: the computed header, then the box's items in C order.
class TiffFile : public Node {
 public:
  TiffFile(std::string name, uint64_t ordinal, TiffLayout layout, geometry::Box box)
      : Node(std::move(name), ordinal), layout_(std::move(layout)), box_(std::move(box)) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container&) const override { return layout_.file_size(); }

  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override {
    if (offset < 0) return InvalidArgument("negative offset");
    const int64_t size = layout_.file_size();
    if (offset >= size) return size_t{0};
    const size_t n =
        static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(length), size - offset));
    const int64_t header = layout_.header_size();
    size_t done = 0;
    if (offset < header) {
      done = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(n), header - offset));
      layout_.ReadHeader(offset, done, out);
    }
    while (done < n) {
      B2NDFS_ASSIGN_OR_RETURN(
          size_t got,
          c.Read(Pixels(), offset + static_cast<int64_t>(done) - header, n - done, out + done));
      if (got == 0) return InvalidData(c.name() + ": the image's pixels end early");
      done += got;
    }
    return n;
  }

  void ReadAhead(const store::Container& c, int64_t offset, int64_t length) const override {
    const int64_t header = layout_.header_size();
    const int64_t begin = std::max<int64_t>(offset - header, 0);
    const int64_t end = offset + length - header;
    if (end > begin) c.Prefetch(Pixels(), begin, end - begin);
  }

 private:
  store::ArrayStream Pixels() const { return store::ArrayStream{std::string(), box_}; }
  TiffLayout layout_;
  geometry::Box box_;
};

// A PGM: its header, then the box's items, 16-bit ones swapped to big-endian
// when the array's are little-endian.
class PgmFile : public Node {
 public:
  PgmFile(std::string name, uint64_t ordinal, PgmLayout pgm, geometry::Box box)
      : Node(std::move(name), ordinal),
        swap_(pgm.swap),
        stream_{std::move(pgm.header), std::move(box)} {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container& c) const override { return c.StreamSize(stream_); }

  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override {
    if (!swap_) return c.Read(stream_, offset, length, out);
    if (offset < 0) return InvalidArgument("negative offset");
    // Byte q of a sample is byte q ^ 1 of the item: read whole items.
    const int64_t header = static_cast<int64_t>(stream_.header.size());
    const int64_t begin = offset < header ? offset : header + (offset - header) / 2 * 2;
    const int64_t end = offset + static_cast<int64_t>(length);
    std::vector<uint8_t> items(static_cast<size_t>(end - begin + 1));
    B2NDFS_ASSIGN_OR_RETURN(size_t got, c.Read(stream_, begin, items.size(), items.data()));
    const int64_t stop = std::min(end, begin + static_cast<int64_t>(got));
    for (int64_t q = offset; q < stop; ++q) {
      const int64_t from = q < header ? q : header + ((q - header) ^ 1);
      out[q - offset] = items[static_cast<size_t>(from - begin)];
    }
    return static_cast<size_t>(std::max<int64_t>(stop - offset, 0));
  }

  void ReadAhead(const store::Container& c, int64_t offset, int64_t length) const override {
    c.Prefetch(stream_, offset, length);
  }

 private:
  bool swap_;
  store::ArrayStream stream_;
};

// --- data.tiff ------------------------------------------------------------

Result<TiffLayout> DataTiffLayout(const store::Container& c) {
  if (!c.ok()) return Status(ENOENT, "the container cannot be decoded");
  const auto& shape = c.layout().shape();
  if (shape.size() == 2) return TiffLayout::Make(c.npy_descr(), 1, shape[0], shape[1]);
  if (shape.size() == 3) return TiffLayout::Make(c.npy_descr(), shape[0], shape[1], shape[2]);
  return Status(ENOTSUP, "TIFF images are made of 2-D arrays (3-D: one page per index of axis 0)");
}

class DataTiffEntry : public RootEntry {
 public:
  std::vector<ListEntry> Names(const store::Container& c, uint64_t base) const override {
    if (!DataTiffLayout(c).ok()) return {};
    return {ListEntry{kName, false, base}};
  }
  uint64_t OrdinalCount(const store::Container& c) const override { return c.ok() ? 1 : 0; }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name != kName) return std::shared_ptr<const Node>();
    Result<TiffLayout> layout = DataTiffLayout(c);
    if (!layout.ok()) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<TiffFile>(
        kName, base, std::move(layout).value(), geometry::Box::FromShape(c.layout().shape())));
  }
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    Result<TiffLayout> layout = DataTiffLayout(c);
    store::FileDescription d{kName, c.layout().shape(), 0, {}};
    if (layout.ok()) {
      d.size = layout->file_size();
    } else {
      d.absent = layout.status().message();
    }
    out->push_back(std::move(d));
  }

 private:
  static constexpr const char* kName = "data.tiff";
};

// --- images/A/IDX.{tiff,pgm} ------------------------------------------------

// Whether images/ exists: a 3-D array whose items TIFF can hold.
Status ImagesApply(const store::Container& c) {
  if (!c.ok()) return Status(ENOENT, "the container cannot be decoded");
  const auto& shape = c.layout().shape();
  if (shape.size() != 3) return Status(ENOTSUP, "images/ holds the 2-D slices of 3-D arrays");
  // A 1x1x1 probe: the dtype decides; empty axes are checked per axis.
  Result<TiffLayout> probe = TiffLayout::Make(c.npy_descr(), 1, 1, 1);
  return probe.ok() ? Status::Ok() : probe.status();
}

// The slice of `axis` as an image: height and width are the other axes.
std::pair<int64_t, int64_t> SliceImage(const geometry::ArrayLayout& layout, int axis) {
  const auto& s = layout.shape();
  if (axis == 0) return {s[1], s[2]};
  if (axis == 1) return {s[0], s[2]};
  return {s[0], s[1]};
}

struct AxisImages {
  Result<TiffLayout> tiff;
  Result<PgmLayout> pgm;
};
AxisImages ImagesOf(const store::Container& c, int axis) {
  auto [height, width] = SliceImage(c.layout(), axis);
  return {TiffLayout::Make(c.npy_descr(), 1, height, width), MakePgm(c.npy_descr(), height, width)};
}
// Files per index of the axis: IDX.pgm (sorting first) and IDX.tiff.
int KindsOf(const AxisImages& images) {
  if (!images.tiff.ok()) return 0;
  return images.pgm.ok() ? 2 : 1;
}

int IndexWidth(int64_t extent) { return DecimalWidth(extent > 0 ? extent - 1 : 0); }

// Ordinals from the images directory's base: the directory, the three axis
// directories, then two per index of axis 0, axis 1, axis 2 (whether or not
// the PGM exists, so that they need no dtype to compute).
uint64_t AxisDirOrdinal(uint64_t base, int axis) { return base + 1 + static_cast<uint64_t>(axis); }
uint64_t FirstFileOrdinal(const geometry::ArrayLayout& layout, uint64_t base, int axis) {
  uint64_t ordinal = base + 4;
  for (int a = 0; a < axis; ++a) ordinal += 2 * static_cast<uint64_t>(layout.shape()[a]);
  return ordinal;
}

class ImagesAxisDir : public Node {
 public:
  ImagesAxisDir(uint64_t base, int axis)
      : Node(std::to_string(axis), AxisDirOrdinal(base, axis)), base_(base), axis_(axis) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    const auto& layout = c.layout();
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos) return NotFound(name);
    const std::string ext = name.substr(dot + 1);
    const bool pgm = ext == "pgm";
    if (!pgm && ext != "tiff") return NotFound(name);
    const int64_t extent = layout.shape()[axis_];
    auto index = ParseIndex(name.substr(0, dot));
    if (!index || *index >= extent) return NotFound(name);
    AxisImages images = ImagesOf(c, axis_);
    if (!images.tiff.ok() || (pgm && !images.pgm.ok())) return NotFound(name);
    geometry::Box box = geometry::Box::FromShape(layout.shape());
    box.start[axis_] = *index;
    box.stop[axis_] = *index + 1;
    const uint64_t ordinal =
        FirstFileOrdinal(layout, base_, axis_) + 2 * static_cast<uint64_t>(*index) + (pgm ? 0 : 1);
    std::string file = Padded(*index, IndexWidth(extent)) + "." + ext;
    if (pgm) {
      return std::shared_ptr<const Node>(std::make_shared<PgmFile>(
          std::move(file), ordinal, std::move(images.pgm).value(), std::move(box)));
    }
    return std::shared_ptr<const Node>(std::make_shared<TiffFile>(
        std::move(file), ordinal, std::move(images.tiff).value(), std::move(box)));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    const int64_t extent = c.layout().shape()[axis_];
    const int kinds = KindsOf(ImagesOf(c, axis_));
    const int width = IndexWidth(extent);
    const uint64_t first = FirstFileOrdinal(c.layout(), base_, axis_);
    return MakeListing(static_cast<size_t>(extent) * kinds, [kinds, width, first](size_t i) {
      const size_t index = i / kinds;
      const bool pgm = kinds == 2 && i % 2 == 0;
      return ListEntry{Padded(static_cast<int64_t>(index), width) + (pgm ? ".pgm" : ".tiff"), false,
                       first + 2 * index + (pgm ? 0 : 1)};
    });
  }

 private:
  uint64_t base_;
  int axis_;
};

class ImagesDir : public Node {
 public:
  explicit ImagesDir(uint64_t base) : Node("images", base) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container&,
                                             const std::string& name) const override {
    if (name != "0" && name != "1" && name != "2") return NotFound(name);
    return std::shared_ptr<const Node>(std::make_shared<ImagesAxisDir>(ordinal(), name[0] - '0'));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container&) const override {
    const uint64_t base = ordinal();
    return MakeListing(3, [base](size_t i) {
      return ListEntry{std::to_string(i), true, AxisDirOrdinal(base, static_cast<int>(i))};
    });
  }
};

class ImagesEntry : public RootEntry {
 public:
  std::vector<ListEntry> Names(const store::Container& c, uint64_t base) const override {
    if (!ImagesApply(c).ok()) return {};
    return {ListEntry{"images", true, base}};
  }
  uint64_t OrdinalCount(const store::Container& c) const override {
    if (!c.ok() || c.layout().ndim() != 3) return 0;
    return FirstFileOrdinal(c.layout(), 0, 3);
  }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name != "images" || !ImagesApply(c).ok()) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<ImagesDir>(base));
  }
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    if (Status applies = ImagesApply(c); !applies.ok()) {
      out->push_back({"images", {}, 0, applies.message()});
      return;
    }
    for (int axis = 0; axis < 3; ++axis) {
      auto [height, width] = SliceImage(c.layout(), axis);
      const std::string dir = "images/" + std::to_string(axis) + "/IDX";
      AxisImages images = ImagesOf(c, axis);
      const int64_t pixels = height * width * c.layout().itemsize();
      store::FileDescription tiff{dir + ".tiff", {height, width}, 0, {}};
      if (images.tiff.ok()) {
        tiff.size = images.tiff->file_size();
      } else {
        tiff.absent = images.tiff.status().message();
      }
      out->push_back(std::move(tiff));
      store::FileDescription pgm{dir + ".pgm", {height, width}, 0, {}};
      if (images.pgm.ok()) {
        pgm.size = static_cast<int64_t>(images.pgm->header.size()) + pixels;
      } else {
        pgm.absent = images.pgm.status().message();
      }
      out->push_back(std::move(pgm));
    }
  }
};

}  // namespace

std::unique_ptr<RootEntry> MakeDataTiffEntry() { return std::make_unique<DataTiffEntry>(); }
std::unique_ptr<RootEntry> MakeImagesEntry() { return std::make_unique<ImagesEntry>(); }

}  // namespace b2ndfs::views
