// zarr/: the array as an uncompressed Zarr v2 store. .zarray describes it,
// .zattrs holds the vlmetalayers (the "vlmeta" object of meta.json), and one
// file per chunk holds the FULL chunk shape in C order: Zarr v2 requires every
// chunk to be whole, so edge chunks are padded with zero bytes (which no
// reader returns; fill_value is null), unlike chunks/ which trims them. Offered only for regular
// layouts whose dtype Zarr v2 can describe; meta.json says why otherwise. .zmetadata consolidates
// .zarray and .zattrs (zarr.open_consolidated), and .zattrs carries xarray's "_ARRAY_DIMENSIONS".
// The container's group also holds the coordinate variables of its voxel
// geometry, and a directory's group shares a table's row dimension among
// its members (zarr_table.h; README.md, "Tables and coordinates in xarray").
#include "b2ndfs/views/zarr.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "b2ndfs/util/json.h"
#include "kinds.h"
#include "zarr_files.h"
#include "zarr_meta.h"
#include "zarr_table.h"

namespace b2ndfs::views {
namespace {

// Why the store is absent, or its dtype.
Result<ZarrDtype> ZarrApplies(const store::Container& c) {
  if (!c.ok()) return Status(ENOENT, "the container cannot be decoded");
  if (!c.layout().regular()) return InvalidArgument("Zarr v2 needs chunks of equal shape");
  return ZarrDtypeOf(c.npy_descr());
}

// meta.json's "vlmeta" object's text ("" when absent).
std::string VlmetaText(const store::Container& c) {
  auto vlmeta = VlmetaPiece(c);
  if (!vlmeta) return "";
  return c.meta_json().substr(vlmeta->begin, vlmeta->end - vlmeta->begin);
}

// The container's vlmeta names its axes for xarray ("_ARRAY_DIMENSIONS").
bool NamesAxes(const store::Container& c) {
  return FindJsonMember(VlmetaText(c), "_ARRAY_DIMENSIONS").has_value();
}

// The vlmetalayer axis_names (or "_ARRAY_DIMENSIONS", which voxel geometry
// reads when it is absent), where xarray can take them as dimension names:
// each non-empty and none twice (else empty).
std::vector<std::string> AxisNames(const store::Container& c) {
  std::vector<std::string> names = c.voxel_geometry().axis_names;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty() || std::count(names.begin(), names.begin() + i, names[i])) return {};
  }
  return names;
}

// .zattrs: meta.json's "vlmeta" with xarray's dimension names: `dims` where
// given (a table's members), else in a directory's group `dim_prefix` +
// dim_0, ..., else (zarr/ and the container's group) the vlmetalayer
// axis_names, else dim_0, ... (none added where the vlmeta has
// "_ARRAY_DIMENSIONS").
std::optional<TextPieces> ZattrsPieces(const store::Container& c, const std::string& dim_prefix,
                                       const std::vector<std::string>& dims = {}) {
  auto vlmeta = VlmetaPiece(c);
  if (!vlmeta) return std::nullopt;
  const std::string text = c.meta_json().substr(vlmeta->begin, vlmeta->end - vlmeta->begin);
  const std::vector<std::string> axis_names =
      dim_prefix.empty() ? AxisNames(c) : std::vector<std::string>();
  ZattrsPlan plan;
  if (!dims.empty()) {
    plan = PlanZattrsDims(text, dims);
  } else if (dim_prefix.empty() && !axis_names.empty()) {
    plan = PlanZattrsDims(text, axis_names);
  } else {
    plan = PlanZattrs(text, c.layout().ndim(), dim_prefix);
  }
  vlmeta->begin += plan.skip;
  return TextPieces{Literal(plan.prefix), std::move(vlmeta).value()};
}

// Names the container directory has (or may have) for itself: a variable
// must not hide one.
bool IsOwnName(const std::string& name) {
  static const char* const kOwn[] = {"meta.json", "data",   "chunks",  "slices",      "view",
                                     "zarr",      "images", "preview", "preview.png", "ome.zarr"};
  for (const char* own : kOwn) {
    if (name == own) return true;
  }
  return name.empty() || name[0] == '.' || name.starts_with("data.");
}

// The container's variable: its file name without extension, or "zarr"
// where that is one of the directory's own names (data.b2nd).
std::string ContainerVariable(const store::Container& c) {
  std::string name = c.name();
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  const size_t slash = name.rfind('/');
  if (slash != std::string::npos) name = name.substr(slash + 1);
  name = ZarrVariableName(name);
  return IsOwnName(name) ? "zarr" : name;
}

// The names xarray gives the container's axes in its own group:
// "_ARRAY_DIMENSIONS" (a vlmetalayer; unknown here when axis_names is
// there too, as voxel geometry then reads those), else axis_names, else
// dim_0, ...; empty where unknown.
std::vector<std::string> GroupDims(const store::Container& c) {
  const std::string text = VlmetaText(c);
  const std::vector<std::string> names = AxisNames(c);
  if (FindJsonMember(text, "_ARRAY_DIMENSIONS")) {
    if (FindJsonMember(text, "axis_names")) return {};
    return names;
  }
  if (!names.empty()) return names;
  std::vector<std::string> dims;
  for (int i = 0; i < c.layout().ndim(); ++i) dims.push_back("dim_" + std::to_string(i));
  return dims;
}

// The coordinate variables of the container's own group (README.md,
// "Tables and coordinates in xarray"): its voxel geometry's axes.
std::vector<Coordinate> ContainerCoordinates(const store::Container& c) {
  if (!c.ok()) return {};
  const format::VoxelGeometry& g = c.voxel_geometry();
  if ((g.spacing.empty() && g.origin.empty()) || !ZarrApplies(c).ok()) return {};
  std::vector<Coordinate> coords = PlanCoordinates(c.layout().shape(), GroupDims(c), g.spacing,
                                                   g.origin, g.units, {ContainerVariable(c)});
  std::erase_if(coords, [](const Coordinate& k) { return IsOwnName(k.name); });
  return coords;
}

// A coordinate's only chunk: its values, computed.
class CoordinateChunk : public Node {
 public:
  explicit CoordinateChunk(Coordinate coordinate)
      : Node("0", kNoOrdinal), coordinate_(std::move(coordinate)) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container&) const override { return coordinate_.n * 8; }
  Result<size_t> Read(const store::Container&, int64_t offset, size_t length,
                      uint8_t* out) const override {
    if (offset < 0) return InvalidArgument("negative offset");
    return CoordinateBytes(coordinate_, offset, length, out);
  }

 private:
  Coordinate coordinate_;
};

// The unlisted directory of a coordinate variable: .zarray, .zattrs, 0.
class CoordinateDir : public Node {
 public:
  explicit CoordinateDir(Coordinate coordinate)
      : Node(coordinate.name, kNoOrdinal), coordinate_(std::move(coordinate)) {}
  bool IsDirectory() const override { return true; }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container&,
                                             const std::string& name) const override {
    if (name == ".zarray" || name == ".zattrs") {
      const std::string text =
          name == ".zarray" ? CoordinateZarray(coordinate_) : CoordinateZattrs(coordinate_);
      return std::shared_ptr<const Node>(
          std::make_shared<ZarrTextFile>(name, kNoOrdinal, TextPieces{Literal(text)}));
    }
    if (name == "0")
      return std::shared_ptr<const Node>(std::make_shared<CoordinateChunk>(coordinate_));
    return NotFound(name);
  }
  Result<std::shared_ptr<const Listing>> List(const store::Container&) const override {
    return MakeListing(3, [](size_t i) {
      static const char* const kNames[] = {".zarray", ".zattrs", "0"};
      return ListEntry{kNames[i], false, kNoOrdinal};
    });
  }

 private:
  Coordinate coordinate_;
};

constexpr const char* kZgroup = "{\n  \"zarr_format\": 2\n}\n";

// Consolidated metadata (zarr.open_consolidated): the array's .zarray and
// .zattrs under `member` ("" in zarr/; in the container directory, which is
// then also a group, the variable's name).
std::optional<TextPieces> ZmetadataPieces(const store::Container& c, const ZarrDtype& dtype,
                                          const std::string& member,
                                          const std::string& dim_prefix) {
  auto zattrs = ZattrsPieces(c, dim_prefix);
  if (!zattrs) return std::nullopt;
  const bool group = !member.empty();
  const std::string prefix = group ? member + "/" : "";
  std::string head = "{\n\"metadata\": {\n";
  if (group) head += "\".zgroup\": " + std::string(kZgroup) + ",\n";
  head += json::Quote(prefix + ".zarray") + ": " +
          MakeZarrArray(dtype, c.layout().shape(), c.layout().chunkshape()) + ",\n" +
          json::Quote(prefix + ".zattrs") + ": ";
  TextPieces pieces{Literal(std::move(head))};
  for (TextPiece& piece : *zattrs) pieces.push_back(std::move(piece));
  std::string tail;
  // The group's coordinate variables: the voxel geometry's axes.
  for (const Coordinate& k : group ? ContainerCoordinates(c) : std::vector<Coordinate>()) {
    tail += ",\n" + json::Quote(k.name + "/.zarray") + ": " + CoordinateZarray(k) + ",\n" +
            json::Quote(k.name + "/.zattrs") + ": " + CoordinateZattrs(k);
  }
  pieces.push_back(Literal(tail + "\n},\n\"zarr_consolidated_format\": 1\n}\n"));
  return pieces;
}

// Ordinals: the directory at base, .zarray base + 1, .zattrs base + 2,
// .zmetadata base + 3, chunk i at base + 4 + i. A variable (the container's
// own, or a directory group's) is the same directory by another name: its
// files are those of zarr/ (the same ordinals: hard links), it has no
// ordinal of its own (it is not listed), and a directory group's variable
// names unnamed axes after itself.
class ZarrDir : public Node {
 public:
  ZarrDir(uint64_t base, ZarrDtype dtype) : ZarrDir("zarr", base, base, std::move(dtype), "") {}
  ZarrDir(std::string name, uint64_t own_ordinal, uint64_t base, ZarrDtype dtype,
          std::string dim_prefix)
      : Node(std::move(name), own_ordinal),
        base_(base),
        dtype_(std::move(dtype)),
        dim_prefix_(std::move(dim_prefix)) {}
  bool IsDirectory() const override { return true; }
  uint64_t base() const { return base_; }
  const ZarrDtype& dtype() const { return dtype_; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    const auto& layout = c.layout();
    if (name == ".zarray") {
      return std::shared_ptr<const Node>(std::make_shared<ZarrTextFile>(
          name, base_ + 1,
          TextPieces{Literal(MakeZarrArray(dtype_, layout.shape(), layout.chunkshape()))}));
    }
    if (name == ".zattrs" || name == ".zmetadata") {
      const bool zattrs = name == ".zattrs";
      auto pieces =
          zattrs ? ZattrsPieces(c, dim_prefix_) : ZmetadataPieces(c, dtype_, "", dim_prefix_);
      if (!pieces) return NotFound(name);
      // Other axis names, other bytes: not zarr/'s inode.
      const uint64_t ordinal = !dim_prefix_.empty() ? kNoOrdinal : base_ + (zattrs ? 2 : 3);
      return std::shared_ptr<const Node>(
          std::make_shared<ZarrTextFile>(name, ordinal, std::move(pieces).value()));
    }
    const auto chunk = ChunkFromKey(layout, name);
    if (!chunk) return NotFound(name);
    return std::shared_ptr<const Node>(std::make_shared<ZarrChunkFile>(
        ZarrChunkKey(layout.ChunkCoords(*chunk)), base_ + 4 + static_cast<uint64_t>(*chunk),
        layout.ChunkBox(*chunk), FullChunkBox(layout, *chunk)));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    // The listing keeps the layout it names, not the container.
    auto layout = std::make_shared<const geometry::ArrayLayout>(c.layout());
    const uint64_t base = base_;
    const bool own = !dim_prefix_.empty();
    return MakeListing(static_cast<size_t>(3 + layout->NumChunks()), [layout, base, own](size_t i) {
      if (i == 0) return ListEntry{".zarray", false, base + 1};
      if (i == 1) return ListEntry{".zattrs", false, own ? kNoOrdinal : base + 2};
      if (i == 2) return ListEntry{".zmetadata", false, own ? kNoOrdinal : base + 3};
      const int64_t chunk = static_cast<int64_t>(i - 3);
      return ListEntry{ZarrChunkKey(layout->ChunkCoords(chunk)), false, base + 1 + i};
    });
  }

 private:
  uint64_t base_;
  ZarrDtype dtype_;
  std::string dim_prefix_;
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
    const bool variable = name != "zarr" && name == ContainerVariable(c);
    if (name != "zarr" && !variable) {
      // A chunk key begins with a digit, a coordinate's name never does.
      if (!name.empty() && name[0] >= '0' && name[0] <= '9') return ChunkAlias(c, name, base);
      for (Coordinate& k : ContainerCoordinates(c)) {
        if (k.name == name) return std::shared_ptr<const Node>(std::make_shared<CoordinateDir>(k));
      }
      return ChunkAlias(c, name, base);
    }
    Result<ZarrDtype> dtype = ZarrApplies(c);
    if (!dtype.ok()) return std::shared_ptr<const Node>();
    if (variable) {
      return std::shared_ptr<const Node>(
          std::make_shared<ZarrDir>(name, kNoOrdinal, base, std::move(dtype).value(), ""));
    }
    return std::shared_ptr<const Node>(std::make_shared<ZarrDir>(base, std::move(dtype).value()));
  }
  // zarr/'s chunk file KEY, looked up (not listed) as the container
  // directory's own KEY: in a python-blosc2 store a leaf has no extension to
  // drop, so in its directory's Zarr group (vfs/zarr_group_lookup.cc) the leaf's
  // directory is its variable, and a reader of the group asks it for
  // "LEAF/KEY" (the metadata comes from the group's .zmetadata).
  static Result<std::shared_ptr<const Node>> ChunkAlias(const store::Container& c,
                                                        const std::string& name, uint64_t base) {
    if (name.empty() || name[0] < '0' || name[0] > '9' || !ZarrApplies(c).ok()) {
      return std::shared_ptr<const Node>();
    }
    const auto& layout = c.layout();
    const auto chunk = ChunkFromKey(layout, name);
    if (!chunk) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<ZarrChunkFile>(
        ZarrChunkKey(layout.ChunkCoords(*chunk)), base + 4 + static_cast<uint64_t>(*chunk),
        layout.ChunkBox(*chunk), FullChunkBox(layout, *chunk)));
  }
  std::vector<std::string> UnlistedNamesOf(const store::Container& c) const override {
    std::vector<std::string> names;
    const std::string variable = ContainerVariable(c);
    if (variable != "zarr") names.push_back(variable);
    for (const Coordinate& k : ContainerCoordinates(c)) names.push_back(k.name);
    return names;
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
// member is the array, named after the container (ContainerVariable: its
// unlisted directory holds zarr/'s files), which is what xarray.open_zarr
// needs (it opens groups, never a bare array; zarr/ itself must stay an
// array store).
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
    std::optional<TextPieces> pieces = name == ".zgroup"
                                           ? TextPieces{Literal(kZgroup)}
                                           : ZmetadataPieces(c, *dtype, ContainerVariable(c), "");
    if (!pieces) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<ZarrTextFile>(
        name, base + (name == ".zgroup" ? 0 : 1), std::move(pieces).value()));
  }
  void Describe(const store::Container&, std::vector<store::FileDescription>*) const override {}
};

}  // namespace

std::unique_ptr<RootEntry> MakeZarrEntry() { return std::make_unique<ZarrEntry>(); }
std::unique_ptr<RootEntry> MakeZarrGroupEntry() { return std::make_unique<ZarrGroupEntry>(); }

std::string ZarrVariableName(const std::string& file_name) {
  // The extensions vfs shows as containers (vfs HasContainerExtension).
  static const char* const kExtensions[] = {".b2nd", ".b2frame", ".b2f", ".b2", ".caterva", ".cat"};
  for (const char* ext : kExtensions) {
    const std::string e = ext;
    if (file_name.size() > e.size() && file_name.ends_with(e)) {
      return file_name.substr(0, file_name.size() - e.size());
    }
  }
  return file_name;
}

bool IsZarrVariable(const store::Container& container) { return ZarrApplies(container).ok(); }

Result<std::shared_ptr<const Node>> DirVariable(const Registry& registry,
                                                const store::Container& container,
                                                const std::string& name) {
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const Node> zarr,
                          registry.Root()->Lookup(container, "zarr"));
  const auto* dir = dynamic_cast<const ZarrDir*>(zarr.get());
  if (dir == nullptr) return NotFound(name);
  return std::shared_ptr<const Node>(
      std::make_shared<ZarrDir>(name, kNoOrdinal, dir->base(), dir->dtype(), name + "_"));
}

Result<std::string> DirZmetadata(const std::vector<DirMember>& members, const DirTable& table) {
  std::vector<const DirMember*> variables;
  std::vector<ZarrDtype> dtypes;
  std::vector<TableMember> shapes;
  for (const DirMember& m : members) {
    Result<ZarrDtype> dtype = ZarrApplies(*m.container);
    if (!dtype.ok()) continue;
    variables.push_back(&m);
    dtypes.push_back(std::move(dtype).value());
    shapes.push_back(TableMember{m.name, m.container->layout().shape(), NamesAxes(*m.container)});
  }
  const TableKind kind = table.kind == DirTable::Kind::kCTable       ? TableKind::kCTable
                         : table.kind == DirTable::Kind::kStoreGroup ? TableKind::kStoreGroup
                                                                     : TableKind::kNone;
  const TablePlan plan = PlanTable(shapes, kind, table.rows);
  std::string out = "{\n\"metadata\": {\n\".zgroup\": " + std::string(kZgroup);
  for (size_t i = 0; i < variables.size(); ++i) {
    const DirMember& m = *variables[i];
    const ZarrDtype* dtype = &dtypes[i];
    if (table.rows_only && !plan.row_dim.empty() &&
        (shapes[i].shape.empty() || shapes[i].shape[0] != plan.rows)) {
      continue;
    }
    const auto& layout = m.container->layout();
    std::optional<TextPieces> zattrs = ZattrsPieces(*m.container, m.name + "_", plan.dims[i]);
    if (!zattrs) continue;
    out += ",\n" + json::Quote(m.name + "/.zarray") + ": " +
           MakeZarrArray(*dtype, layout.shape(), layout.chunkshape()) + ",\n" +
           json::Quote(m.name + "/.zattrs") + ": ";
    for (const TextPiece& piece : *zattrs) {
      if (piece.from_meta) {
        out.append(m.container->meta_json(), piece.begin, piece.end - piece.begin);
      } else {
        out += piece.text;
      }
    }
  }
  return out + "\n},\n\"zarr_consolidated_format\": 1\n}\n";
}

std::shared_ptr<const Node> MakeTextFile(std::string name, std::string text) {
  return std::make_shared<ZarrTextFile>(std::move(name), kNoOrdinal,
                                        TextPieces{Literal(std::move(text))});
}

}  // namespace b2ndfs::views
