// slices/A/IDX: for each axis A, one file per index along it holding the
// (ndim-1)-D slab. IDX is zero-padded to the width of the largest index so
// that `ls` sorts; unpadded (and over-padded) spellings name the same file.
// A 1-D array's slices are its items: a long series' slices/0 is one of the
// directories too long to list, whose names still open (README.md, "Layout").
#include "kinds.h"

namespace b2ndfs::views {
namespace {

// Ordinals from the slices directory's base: the directory, then one per
// axis directory, then the files of axis 0, axis 1, ...
uint64_t AxisDirOrdinal(uint64_t base, int axis) { return base + 1 + static_cast<uint64_t>(axis); }
uint64_t FileOrdinal(const geometry::ArrayLayout& layout, uint64_t base, int axis, int64_t index) {
  uint64_t ordinal = base + 1 + static_cast<uint64_t>(layout.ndim());
  for (int a = 0; a < axis; ++a) ordinal += static_cast<uint64_t>(layout.shape()[a]);
  return ordinal + static_cast<uint64_t>(index);
}

int Width(int64_t extent) { return DecimalWidth(extent > 0 ? extent - 1 : 0); }

// slices/AXIS/INDEX. Along axis 0 the files are consecutive pieces of the
// array's bytes, so a reader going through them in order is a sequential
// reader of `data`, and its read-ahead goes on into the next file. Along
// the other axes a few bytes of the next file can need a whole new plane of
// blocks: decoding it ahead would evict what the current file still needs
// from a cache sized to one plane.
class SliceFile : public StreamFile {
 public:
  static std::shared_ptr<const Node> Make(const geometry::ArrayLayout& layout, uint64_t base,
                                          int axis, int64_t index) {
    geometry::Box box = geometry::Box::FromShape(layout.shape());
    box.start[axis] = index;
    box.stop[axis] = index + 1;
    return std::make_shared<SliceFile>(
        Padded(index, Width(layout.shape()[axis])), FileOrdinal(layout, base, axis, index),
        store::ArrayStream{std::string(), std::move(box)}, base, axis, index);
  }
  SliceFile(std::string name, uint64_t ordinal, store::ArrayStream stream, uint64_t base, int axis,
            int64_t index)
      : StreamFile(std::move(name), ordinal, std::move(stream)),
        base_(base),
        axis_(axis),
        index_(index) {}

  std::shared_ptr<const Node> Next(const store::Container& c) const override {
    if (axis_ != 0 || index_ + 1 >= c.layout().shape()[axis_]) return nullptr;
    return Make(c.layout(), base_, axis_, index_ + 1);
  }

 private:
  uint64_t base_;
  int axis_;
  int64_t index_;
};

class SliceAxisDir : public Node {
 public:
  SliceAxisDir(uint64_t base, int axis)
      : Node(std::to_string(axis), AxisDirOrdinal(base, axis)), base_(base), axis_(axis) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    auto index = ParseIndex(name);
    if (!index || *index >= c.layout().shape()[axis_]) return NotFound(name);
    return SliceFile::Make(c.layout(), base_, axis_, *index);
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    const int64_t extent = c.layout().shape()[axis_];
    const int width = Width(extent);
    const uint64_t first = FileOrdinal(c.layout(), base_, axis_, 0);
    return MakeListing(static_cast<size_t>(extent), [width, first](size_t i) {
      return ListEntry{Padded(static_cast<int64_t>(i), width), false, first + i};
    });
  }

 private:
  uint64_t base_;
  int axis_;
};

class SlicesDir : public Node {
 public:
  explicit SlicesDir(uint64_t base) : Node("slices", base) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    auto axis = ParseIndex(name);
    if (!axis || *axis >= c.layout().ndim() || std::to_string(*axis) != name) {
      return NotFound(name);
    }
    return std::shared_ptr<const Node>(
        std::make_shared<SliceAxisDir>(ordinal(), static_cast<int>(*axis)));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    const uint64_t base = ordinal();
    return MakeListing(static_cast<size_t>(c.layout().ndim()), [base](size_t i) {
      return ListEntry{std::to_string(i), true, AxisDirOrdinal(base, static_cast<int>(i))};
    });
  }
};

class SlicesEntry : public RootEntry {
 public:
  static bool Applies(const store::Container& c) { return c.ok() && c.layout().ndim() > 0; }
  std::vector<ListEntry> Names(const store::Container& c, uint64_t base) const override {
    if (!Applies(c)) return {};
    return {ListEntry{"slices", true, base}};
  }
  uint64_t OrdinalCount(const store::Container& c) const override {
    if (!Applies(c)) return 0;
    uint64_t count = 1 + static_cast<uint64_t>(c.layout().ndim());
    for (int64_t extent : c.layout().shape()) count += static_cast<uint64_t>(extent);
    return count;
  }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name != "slices" || !Applies(c)) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<SlicesDir>(base));
  }
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    const auto& layout = c.layout();
    const int64_t data_size = layout.NumItems() * layout.itemsize();
    for (int a = 0; a < layout.ndim(); ++a) {
      if (layout.shape()[a] == 0) continue;
      std::vector<int64_t> slice_shape;
      for (int b = 0; b < layout.ndim(); ++b) {
        if (b != a) slice_shape.push_back(layout.shape()[b]);
      }
      out->push_back({"slices/" + std::to_string(a), slice_shape, data_size / layout.shape()[a]});
    }
  }
};

}  // namespace

std::unique_ptr<RootEntry> MakeSlicesEntry() { return std::make_unique<SlicesEntry>(); }

}  // namespace b2ndfs::views
