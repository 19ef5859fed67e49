// zarr/: the array as an uncompressed Zarr v2 store. .zarray describes it,
// .zattrs holds the vlmetalayers (the "vlmeta" object of meta.json), and one
// file per chunk holds the FULL chunk shape in C order: Zarr v2 requires every
// chunk to be whole, so edge chunks are padded with zero bytes (which no
// reader returns; fill_value is null), unlike chunks/ which trims them. Offered only for regular
// layouts whose dtype Zarr v2 can describe; meta.json says why otherwise. .zmetadata consolidates
// .zarray and .zattrs (zarr.open_consolidated), and .zattrs carries xarray's "_ARRAY_DIMENSIONS".
#include <optional>
#include <vector>

#include "kinds.h"
#include "zarr_files.h"
#include "zarr_meta.h"

namespace b2ndfs::views {
namespace {

// Why the store is absent, or its dtype.
Result<ZarrDtype> ZarrApplies(const store::Container& c) {
  if (!c.ok()) return Status(ENOENT, "the container cannot be decoded");
  if (!c.layout().regular()) return InvalidArgument("Zarr v2 needs chunks of equal shape");
  return ZarrDtypeOf(c.npy_descr());
}

// .zattrs: meta.json's "vlmeta" with xarray's dimension names.
std::optional<TextPieces> ZattrsPieces(const store::Container& c) {
  auto vlmeta = VlmetaPiece(c);
  if (!vlmeta) return std::nullopt;
  const ZattrsPlan plan = PlanZattrs(
      c.meta_json().substr(vlmeta->begin, vlmeta->end - vlmeta->begin), c.layout().ndim());
  vlmeta->begin += plan.skip;
  return TextPieces{Literal(plan.prefix), std::move(vlmeta).value()};
}

constexpr const char* kZgroup = "{\n  \"zarr_format\": 2\n}\n";

// Consolidated metadata (zarr.open_consolidated): the array's .zarray and
// .zattrs under `prefix` ("" in zarr/, "zarr/" in the container directory,
// which is then also a group).
std::optional<TextPieces> ZmetadataPieces(const store::Container& c, const ZarrDtype& dtype,
                                          bool group) {
  auto zattrs = ZattrsPieces(c);
  if (!zattrs) return std::nullopt;
  const std::string prefix = group ? "zarr/" : "";
  std::string head = "{\n\"metadata\": {\n";
  if (group) head += "\".zgroup\": " + std::string(kZgroup) + ",\n";
  head += "\"" + prefix +
          ".zarray\": " + MakeZarrArray(dtype, c.layout().shape(), c.layout().chunkshape()) +
          ",\n\"" + prefix + ".zattrs\": ";
  TextPieces pieces{Literal(std::move(head))};
  for (TextPiece& piece : *zattrs) pieces.push_back(std::move(piece));
  pieces.push_back(Literal("\n},\n\"zarr_consolidated_format\": 1\n}\n"));
  return pieces;
}

// Ordinals: the directory at base, .zarray base + 1, .zattrs base + 2,
// .zmetadata base + 3, chunk i at base + 4 + i.
class ZarrDir : public Node {
 public:
  ZarrDir(uint64_t base, ZarrDtype dtype) : Node("zarr", base), dtype_(std::move(dtype)) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    const auto& layout = c.layout();
    if (name == ".zarray") {
      return std::shared_ptr<const Node>(std::make_shared<ZarrTextFile>(
          name, ordinal() + 1,
          TextPieces{Literal(MakeZarrArray(dtype_, layout.shape(), layout.chunkshape()))}));
    }
    if (name == ".zattrs" || name == ".zmetadata") {
      const bool zattrs = name == ".zattrs";
      auto pieces = zattrs ? ZattrsPieces(c) : ZmetadataPieces(c, dtype_, false);
      if (!pieces) return NotFound(name);
      return std::shared_ptr<const Node>(std::make_shared<ZarrTextFile>(
          name, ordinal() + (zattrs ? 2 : 3), std::move(pieces).value()));
    }
    const auto chunk = ChunkFromKey(layout, name);
    if (!chunk) return NotFound(name);
    return std::shared_ptr<const Node>(std::make_shared<ZarrChunkFile>(
        ZarrChunkKey(layout.ChunkCoords(*chunk)), ordinal() + 4 + static_cast<uint64_t>(*chunk),
        layout.ChunkBox(*chunk), FullChunkBox(layout, *chunk)));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    // The listing keeps the layout it names, not the container.
    auto layout = std::make_shared<const geometry::ArrayLayout>(c.layout());
    const uint64_t base = ordinal();
    return MakeListing(static_cast<size_t>(3 + layout->NumChunks()), [layout, base](size_t i) {
      if (i == 0) return ListEntry{".zarray", false, base + 1};
      if (i == 1) return ListEntry{".zattrs", false, base + 2};
      if (i == 2) return ListEntry{".zmetadata", false, base + 3};
      const int64_t chunk = static_cast<int64_t>(i - 3);
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
    return ZarrApplies(c).ok() ? 4 + static_cast<uint64_t>(c.layout().NumChunks()) : 0;
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

// .zgroup and .zmetadata in the container directory, looked up but not
// listed: they make the directory a consolidated Zarr v2 group whose one
// member is the array zarr/, which is what xarray.open_zarr needs (it opens
// groups, never a bare array; zarr/ itself must stay an array store).
class ZarrGroupEntry : public RootEntry {
 public:
  std::vector<ListEntry> Names(const store::Container&, uint64_t) const override { return {}; }
  uint64_t OrdinalCount(const store::Container& c) const override {
    return ZarrApplies(c).ok() ? 2 : 0;
  }
  std::vector<std::string> UnlistedNames() const override { return {".zgroup", ".zmetadata"}; }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name != ".zgroup" && name != ".zmetadata") return std::shared_ptr<const Node>();
    Result<ZarrDtype> dtype = ZarrApplies(c);
    if (!dtype.ok()) return std::shared_ptr<const Node>();
    std::optional<TextPieces> pieces =
        name == ".zgroup" ? TextPieces{Literal(kZgroup)} : ZmetadataPieces(c, *dtype, true);
    if (!pieces) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<ZarrTextFile>(
        name, base + (name == ".zgroup" ? 0 : 1), std::move(pieces).value()));
  }
  void Describe(const store::Container&, std::vector<store::FileDescription>*) const override {}
};

}  // namespace

std::unique_ptr<RootEntry> MakeZarrEntry() { return std::make_unique<ZarrEntry>(); }
std::unique_ptr<RootEntry> MakeZarrGroupEntry() { return std::make_unique<ZarrGroupEntry>(); }

}  // namespace b2ndfs::views
