// chunks/I.J.K: one file per chunk, its region of the array trimmed at the
// edges. Names join grid coordinates with '.', as Zarr v2 does.
#include "kinds.h"
#include "zarr_meta.h"

namespace b2ndfs::views {
namespace {

// The same names as Zarr v2's chunk keys (zarr/ lists them too).
std::string ChunkName(const geometry::ArrayLayout& layout, int64_t chunk) {
  return ZarrChunkKey(layout.ChunkCoords(chunk));
}

// Ordinals: the directory at base, chunk i at base + 1 + i.
class ChunksDir : public Node {
 public:
  explicit ChunksDir(uint64_t base) : Node("chunks", base) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    const auto& layout = c.layout();
    const auto chunk = ChunkFromKey(layout, name);
    if (!chunk) return NotFound(name);
    return std::shared_ptr<const Node>(std::make_shared<StreamFile>(
        ChunkName(layout, *chunk), ordinal() + 1 + static_cast<uint64_t>(*chunk),
        store::ArrayStream{std::string(), layout.ChunkBox(*chunk)}));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    // The listing keeps the layout it names, not the container.
    auto layout = std::make_shared<const geometry::ArrayLayout>(c.layout());
    const uint64_t first = ordinal() + 1;
    return MakeListing(static_cast<size_t>(layout->NumChunks()), [layout, first](size_t i) {
      return ListEntry{ChunkName(*layout, static_cast<int64_t>(i)), false, first + i};
    });
  }
};

class ChunksEntry : public RootEntry {
 public:
  static bool Applies(const store::Container& c) { return c.ok() && c.layout().ndim() > 0; }
  std::vector<ListEntry> Names(const store::Container& c, uint64_t base) const override {
    if (!Applies(c)) return {};
    return {ListEntry{"chunks", true, base}};
  }
  uint64_t OrdinalCount(const store::Container& c) const override {
    return Applies(c) ? 1 + static_cast<uint64_t>(c.layout().NumChunks()) : 0;
  }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name != "chunks" || !Applies(c)) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<ChunksDir>(base));
  }
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!Applies(c) || c.layout().NumChunks() == 0) return;
    const auto& layout = c.layout();
    out->push_back(
        {"chunks", layout.chunkshape(), layout.ChunkBox(0).NumItems() * layout.itemsize()});
  }
};

}  // namespace

std::unique_ptr<RootEntry> MakeChunksEntry() { return std::make_unique<ChunksEntry>(); }

}  // namespace b2ndfs::views
