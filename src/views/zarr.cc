// zarr/: the array as an uncompressed Zarr v2 store. .zarray describes it,
// .zattrs holds the vlmetalayers (the "vlmeta" object of meta.json), and one
// file per chunk holds the FULL chunk shape in C order: Zarr v2 requires every
// chunk to be whole, so edge chunks are padded with zero bytes (the fill
// value), unlike chunks/ which trims them. Offered only for regular layouts
// whose dtype Zarr v2 can describe; meta.json says why otherwise.
#include <algorithm>
#include <cstring>

#include "kinds.h"
#include "zarr_meta.h"

namespace b2ndfs::views {
namespace {

// Why the store is absent, or its dtype.
Result<ZarrDtype> ZarrApplies(const store::Container& c) {
  if (!c.ok()) return Status(ENOENT, "the container cannot be decoded");
  if (!c.layout().regular()) return InvalidArgument("Zarr v2 needs chunks of equal shape");
  return ZarrDtypeOf(c.npy_descr());
}

// The whole chunk's box: the trimmed ChunkBox extended to the chunk shape.
// Fits in int64: the layout checked prod(extchunkshape).
geometry::Box FullChunkBox(const geometry::ArrayLayout& layout, int64_t chunk) {
  geometry::Box box = layout.ChunkBox(chunk);
  for (size_t i = 0; i < box.stop.size(); ++i) box.stop[i] = box.start[i] + layout.chunkshape()[i];
  return box;
}

// .zarray, or .zattrs as a range of the generation's meta.json (which can be
// large, so it is not copied at lookup).
class ZarrTextFile : public Node {
 public:
  ZarrTextFile(std::string name, uint64_t ordinal, std::string text)
      : Node(std::move(name), ordinal), text_(std::move(text)), from_meta_(false) {}
  ZarrTextFile(std::string name, uint64_t ordinal, size_t begin, size_t end)
      : Node(std::move(name), ordinal), from_meta_(true), begin_(begin), end_(end) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container& c) const override {
    return static_cast<int64_t>(Text(c).size());
  }
  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override {
    if (offset < 0) return InvalidArgument("negative offset");
    const std::string_view text = Text(c);
    if (offset >= static_cast<int64_t>(text.size())) return size_t{0};
    const size_t n = std::min(length, text.size() - static_cast<size_t>(offset));
    std::memcpy(out, text.data() + offset, n);
    return n;
  }

 private:
  std::string_view Text(const store::Container& c) const {
    if (!from_meta_) return text_;
    return std::string_view(c.meta_json()).substr(begin_, end_ - begin_);
  }
  std::string text_;
  bool from_meta_;
  size_t begin_ = 0, end_ = 0;
};

// One chunk, padded to the chunk shape.
class ZarrChunkFile : public Node {
 public:
  ZarrChunkFile(std::string name, uint64_t ordinal, geometry::Box inside, geometry::Box full)
      : Node(std::move(name), ordinal), inside_(std::move(inside)), full_(std::move(full)) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container& c) const override {
    return full_.NumItems() * c.layout().itemsize();
  }
  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override {
    if (inside_ == full_)
      return c.Read(store::ArrayStream{std::string(), inside_}, offset, length, out);
    if (offset < 0) return InvalidArgument("negative offset");
    const int64_t size = Size(c);
    if (offset >= size) return size_t{0};
    const size_t n =
        static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(length), size - offset));
    const int64_t itemsize = c.layout().itemsize();
    const int64_t item_begin = offset / itemsize;
    const int64_t item_end = (offset + static_cast<int64_t>(n) + itemsize - 1) / itemsize;
    // Whole items of the range, zero (the fill value) where outside the array.
    std::vector<uint8_t> items(static_cast<size_t>((item_end - item_begin) * itemsize), 0);
    std::vector<uint8_t> part;
    size_t at = 0;
    for (const geometry::Box& piece : geometry::LinearRangeToBoxes(full_, item_begin, item_end)) {
      const geometry::Box region = geometry::Intersect(piece, inside_);
      uint8_t* dst = items.data() + at;
      at += static_cast<size_t>(piece.NumItems() * itemsize);
      if (region.empty()) continue;
      if (region == piece) {
        B2NDFS_RETURN_IF_ERROR(c.ReadArrayBox(region, dst));
        continue;
      }
      part.resize(static_cast<size_t>(region.NumItems() * itemsize));
      B2NDFS_RETURN_IF_ERROR(c.ReadArrayBox(region, part.data()));
      geometry::CopyRegion(part.data(), region, dst, piece, region, itemsize);
    }
    std::memcpy(out, items.data() + (offset - item_begin * itemsize), n);
    return n;
  }
  void ReadAhead(const store::Container& c, int64_t offset, int64_t length) const override {
    // Padded chunks are edge chunks: small, or read whole anyway.
    const store::ArrayStream stream{std::string(), inside_};
    if (inside_ == full_) {
      c.Prefetch(stream, offset, length);
    } else if (offset == 0) {
      c.Prefetch(stream, 0, c.StreamSize(stream));
    }
  }

 private:
  geometry::Box inside_;  // the chunk's region of the array
  geometry::Box full_;    // the whole chunk, past the array's edges
};

// Ordinals: the directory at base, .zarray base + 1, .zattrs base + 2, chunk i
// at base + 3 + i.
class ZarrDir : public Node {
 public:
  ZarrDir(uint64_t base, ZarrDtype dtype) : Node("zarr", base), dtype_(std::move(dtype)) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    const auto& layout = c.layout();
    if (name == ".zarray") {
      return std::shared_ptr<const Node>(std::make_shared<ZarrTextFile>(
          name, ordinal() + 1, MakeZarrArray(dtype_, layout.shape(), layout.chunkshape())));
    }
    if (name == ".zattrs") {
      auto range = FindJsonMember(c.meta_json(), "vlmeta");
      if (!range) return NotFound(name);
      return std::shared_ptr<const Node>(
          std::make_shared<ZarrTextFile>(name, ordinal() + 2, range->first, range->second));
    }
    const auto chunk = ChunkFromKey(layout, name);
    if (!chunk) return NotFound(name);
    return std::shared_ptr<const Node>(std::make_shared<ZarrChunkFile>(
        ZarrChunkKey(layout.ChunkCoords(*chunk)), ordinal() + 3 + static_cast<uint64_t>(*chunk),
        layout.ChunkBox(*chunk), FullChunkBox(layout, *chunk)));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    // The listing keeps the layout it names, not the container.
    auto layout = std::make_shared<const geometry::ArrayLayout>(c.layout());
    const uint64_t base = ordinal();
    return MakeListing(static_cast<size_t>(2 + layout->NumChunks()), [layout, base](size_t i) {
      if (i == 0) return ListEntry{".zarray", false, base + 1};
      if (i == 1) return ListEntry{".zattrs", false, base + 2};
      const int64_t chunk = static_cast<int64_t>(i - 2);
      return ListEntry{ZarrChunkKey(layout->ChunkCoords(chunk)), false, base + 1 + i};
    });
  }

 private:
  ZarrDtype dtype_;
};

class ZarrEntry : public RootEntry {
 public:
  std::vector<ListEntry> Names(const store::Container& c, uint64_t base) const override {
    if (!ZarrApplies(c).ok()) return {};
    return {ListEntry{"zarr", true, base}};
  }
  uint64_t OrdinalCount(const store::Container& c) const override {
    return ZarrApplies(c).ok() ? 3 + static_cast<uint64_t>(c.layout().NumChunks()) : 0;
  }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name != "zarr") return std::shared_ptr<const Node>();
    Result<ZarrDtype> dtype = ZarrApplies(c);
    if (!dtype.ok()) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<ZarrDir>(base, std::move(dtype).value()));
  }
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    store::FileDescription d{"zarr", c.layout().chunkshape(), 0, {}};
    Result<ZarrDtype> dtype = ZarrApplies(c);
    if (dtype.ok()) {
      // The size of every chunk file: the full chunk, padding included.
      d.size = geometry::Box::FromShape(c.layout().chunkshape()).NumItems() * c.layout().itemsize();
    } else {
      d.absent = dtype.status().message();
    }
    out->push_back(std::move(d));
  }
};

}  // namespace

std::unique_ptr<RootEntry> MakeZarrEntry() { return std::make_unique<ZarrEntry>(); }

}  // namespace b2ndfs::views
