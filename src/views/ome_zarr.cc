// ome.zarr/: the array as an OME-Zarr 0.5 multiscale image (README.md,
// "OME-Zarr pyramids"). zarr.json is a Zarr v3 group whose attributes.ome
// (ome_meta.h) lists levels 0/, 1/ ...; each level is a Zarr v3 array in
// data.zarr/'s layout (shard = the container's chunk shape, inner chunk =
// its block shape, uncompressed, keys c/I/J/K). Level 0's inner chunks are
// the container's blocks; level k's are computed on read (store/pyramid.h),
// one block of level k from the level-(k-1) blocks under it. Inner chunks of
// a shard past a level's edge read as zeros (the fill value).
// Ordinals: ome.zarr at base, zarr.json base + 1, then each level in turn:
// its directory, its zarr.json, its c and c's key tree in preorder.
#include <algorithm>
#include <cstring>
#include <optional>

#include "b2ndfs/store/pyramid.h"
#include "b2ndfs/util/json.h"
#include "kinds.h"
#include "ome_meta.h"
#include "preview_scale.h"
#include "zarr_files.h"
#include "zarr_meta.h"
#include "zarr_v3_meta.h"

namespace b2ndfs::views {
namespace {

constexpr int64_t kMaxInnerChunks = int64_t{1} << 16;  // as data.zarr/
constexpr int64_t kMaxOmeroChannels = 64;
// Level-0 bytes one read of a computed level asks the workers to decode ahead.
constexpr int64_t kPrefetchBytes = int64_t{64} << 20;
constexpr int kDocumentSpace = 0;  // Container::Computed's space of the group's zarr.json

// A vlmetalayer of this name marks an integer array as a label image.
constexpr const char* kLabelKey = "image-label";

struct OmePlan {
  store::PyramidPlan pyramid;
  OmeImage image;
  ZarrV3Dtype dtype;
  std::vector<int64_t> chunkshape;
  ShardIndex shard;
  std::vector<KeyTree> trees;  // per level
  int64_t channels = 0;        // omero's
  int channel_axis = -1, time_axis = -1;
  uint64_t LevelBase(uint64_t base, int level) const {
    uint64_t at = base + 2;
    for (int k = 0; k < level; ++k) at += 2 + trees[static_cast<size_t>(k)].size();
    return at;
  }
  uint64_t OrdinalCount() const { return LevelBase(0, static_cast<int>(trees.size())); }
  std::string DimensionNames() const {
    std::string out = "[";
    for (size_t i = 0; i < image.axes.size(); ++i) {
      out += (i ? ", " : "") + json::Quote(image.axes[i].name);
    }
    return out + "]";
  }
};

// Reads meta.json: never from Plan(), which meta.json's rendering calls
// (Describe).
bool IsLabel(const store::Container& c, const store::PyramidItem& item) {
  if (item.kind == 'f') return false;
  std::optional<TextPiece> vlmeta = VlmetaPiece(c);
  if (!vlmeta) return false;
  const std::string text = c.meta_json().substr(vlmeta->begin, vlmeta->end - vlmeta->begin);
  return FindJsonMember(text, kLabelKey).has_value();
}

Result<OmePlan> Plan(const store::Container& c) {
  if (!c.ok()) return Status(ENOENT, "the container cannot be decoded");
  const geometry::ArrayLayout& layout = c.layout();
  const format::VoxelGeometry& g = c.voxel_geometry();
  B2NDFS_ASSIGN_OR_RETURN(std::vector<OmeAxis> axes,
                          OmeAxesOf(layout.ndim(), g.axis_names, g.units));
  std::vector<bool> space;
  for (const OmeAxis& a : axes) space.push_back(a.type == "space");
  B2NDFS_ASSIGN_OR_RETURN(store::PyramidPlan pyramid,
                          store::PlanPyramid(c, space, store::Downsampling::kMean));
  const auto& chunks = layout.chunkshape();
  const auto& blocks = layout.blockshape();
  int64_t count = 1;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i] % blocks[i] != 0) {
      return InvalidArgument("the chunk shape " + JsonInts(chunks) +
                             " is not a whole number of blocks " + JsonInts(blocks) +
                             " (levels are sharded as data.zarr/)");
    }
    count *= chunks[i] / blocks[i];
    if (count > kMaxInnerChunks) {
      return InvalidArgument("a chunk holds more than " + std::to_string(kMaxInnerChunks) +
                             " blocks");
    }
  }
  std::optional<ShardIndex> shard = MakeShardIndex(count, pyramid.BlockBytes());
  if (!shard) return InvalidArgument("a shard of " + JsonInts(chunks) + " would be too large");
  OmePlan plan{std::move(pyramid),
               {},
               ZarrV3DtypeOf(c.npy_descr(), layout.itemsize()),
               chunks,
               *shard,
               {},
               1};
  for (const auto& shape : plan.pyramid.shapes) {
    std::vector<int64_t> grid(shape.size());
    for (size_t i = 0; i < grid.size(); ++i) grid[i] = (shape[i] + chunks[i] - 1) / chunks[i];
    std::optional<KeyTree> tree = MakeKeyTree(grid);
    if (!tree) return InvalidArgument("an empty axis, or too many chunks to name");
    plan.trees.push_back(*tree);
  }
  const size_t n = axes.size();
  plan.image.name = c.name();
  plan.image.levels = plan.pyramid.levels();
  plan.image.spacing = g.spacing.size() == n ? g.spacing : std::vector<double>(n, 1.0);
  plan.image.origin = g.origin.size() == n ? g.origin : std::vector<double>(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    if (axes[i].type == "space" || axes[i].type == "time") continue;
    plan.channel_axis = static_cast<int>(i);
    plan.channels = layout.shape()[i];
  }
  for (size_t i = 0; i < n; ++i) {
    if (axes[i].type == "time") plan.time_axis = static_cast<int>(i);
  }
  if (plan.channels > kMaxOmeroChannels) plan.channels = 0;
  plan.image.axes = std::move(axes);
  return plan;
}

// Plan() and the downsampling: nearest for a label image.
Result<OmePlan> PlanWithMethod(const store::Container& c) {
  B2NDFS_ASSIGN_OR_RETURN(OmePlan plan, Plan(c));
  if (IsLabel(c, plan.pyramid.item)) {
    plan.pyramid.method = store::Downsampling::kStride;
    plan.image.stride = true;
  }
  return plan;
}

std::string GroupJson(const OmePlan& plan, const std::vector<OmeWindow>& windows) {
  return "{\n  \"zarr_format\": 3,\n  \"node_type\": \"group\",\n  \"attributes\": " +
         OmeAttributes(plan.image, plan.channels, windows) + "\n}\n";
}

// Each channel's window over the coarsest level (at the middle time point).
Result<cache::Value> MakeGroupJson(const store::Container& c, const OmePlan& plan) {
  std::vector<OmeWindow> windows;
  if (plan.channels > 0) {
    const int top = plan.pyramid.levels() - 1;
    geometry::Box box = geometry::Box::FromShape(plan.pyramid.shapes[static_cast<size_t>(top)]);
    if (plan.time_axis >= 0) {
      box.start[plan.time_axis] = box.stop[plan.time_axis] / 2;
      box.stop[plan.time_axis] = box.start[plan.time_axis] + 1;
    }
    std::vector<uint8_t> bytes(static_cast<size_t>(box.NumItems() * plan.pyramid.itemsize));
    B2NDFS_RETURN_IF_ERROR(store::ReadPyramidBox(c, plan.pyramid, top, box, bytes.data()));
    B2NDFS_ASSIGN_OR_RETURN(PreviewType type, PreviewTypeOf(c.npy_descr()));
    const auto shape = box.shape();
    int64_t inner = 1;  // items after the channel axis
    for (size_t i = static_cast<size_t>(plan.channel_axis + 1); i < shape.size(); ++i) {
      inner *= shape[i];
    }
    std::vector<std::vector<double>> values(static_cast<size_t>(plan.channels));
    const int64_t per_channel = plan.channel_axis >= 0 ? shape[plan.channel_axis] : 1;
    for (int64_t at = 0; at < box.NumItems(); ++at) {
      const int64_t ch = (at / inner) % per_channel;
      values[static_cast<size_t>(ch)].push_back(
          PreviewValue(type, bytes.data() + at * plan.pyramid.itemsize));
    }
    for (auto& v : values) windows.push_back(WindowOf(&v));
  }
  const std::string text = GroupJson(plan, windows);
  auto value = std::make_shared<cache::Bytes>(text.size());
  std::memcpy(value->data(), text.data(), text.size());
  return cache::Value(std::move(value));
}

// The group's zarr.json: its size from the padded template, its windows
// computed on the first read and kept in the block cache.
class GroupJsonFile : public Node {
 public:
  explicit GroupJsonFile(uint64_t ordinal) : Node("zarr.json", ordinal) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container& c) const override {
    Result<OmePlan> plan = PlanWithMethod(c);
    return plan.ok() ? static_cast<int64_t>(GroupJson(*plan, {}).size()) : 0;
  }
  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override {
    if (offset < 0) return InvalidArgument("negative offset");
    B2NDFS_ASSIGN_OR_RETURN(OmePlan plan, PlanWithMethod(c));
    B2NDFS_ASSIGN_OR_RETURN(cache::Value text,
                            c.Computed(kDocumentSpace, 0, [&] { return MakeGroupJson(c, plan); }));
    if (offset >= static_cast<int64_t>(text->size())) return size_t{0};
    const size_t n = std::min(length, text->size() - static_cast<size_t>(offset));
    std::memcpy(out, text->data() + offset, n);
    return n;
  }
};

// The inner chunk `k` of shard `chunk` of a level: its block's coordinates.
std::vector<int64_t> InnerBlock(const OmePlan& plan, const std::vector<int64_t>& chunk, int64_t k) {
  const auto& blocks = plan.pyramid.blockshape;
  std::vector<int64_t> coords(chunk.size());
  for (int i = static_cast<int>(chunk.size()) - 1; i >= 0; --i) {
    const int64_t per_axis = plan.chunkshape[i] / blocks[i];
    coords[i] = chunk[i] * per_axis + k % per_axis;
    k /= per_axis;
  }
  return coords;
}

geometry::Box FullBlockBox(const OmePlan& plan, const std::vector<int64_t>& coords) {
  geometry::Box box;
  for (size_t i = 0; i < coords.size(); ++i) {
    box.start.push_back(coords[i] * plan.pyramid.blockshape[i]);
    box.stop.push_back(box.start.back() + plan.pyramid.blockshape[i]);
  }
  return box;
}

// One shard of a level: its inner chunks (blocks), then the index.
class LevelShard : public Node {
 public:
  LevelShard(std::string name, uint64_t ordinal, int level, std::vector<int64_t> chunk)
      : Node(std::move(name), ordinal), level_(level), chunk_(std::move(chunk)) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container& c) const override {
    Result<OmePlan> plan = Plan(c);
    return plan.ok() ? plan->shard.size() : 0;
  }

  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override {
    if (offset < 0) return InvalidArgument("negative offset");
    B2NDFS_ASSIGN_OR_RETURN(OmePlan plan, level_ == 0 ? Plan(c) : PlanWithMethod(c));
    const ShardIndex& index = plan.shard;
    const int64_t size = index.size();
    if (offset >= size) return size_t{0};
    const int64_t end = offset + std::min<int64_t>(static_cast<int64_t>(length), size - offset);
    const int64_t inner = index.inner_bytes();
    const auto& shape = plan.pyramid.shapes[static_cast<size_t>(level_)];
    if (level_ > 0) {
      // The level-0 blocks under the inner chunks of the range, decoded by
      // the workers while this thread computes: at most kPrefetchBytes
      // ahead, so that they are still cached when their turn comes.
      int64_t asked = 0;
      for (int64_t k = offset / inner;
           k * inner < std::min(end, index.data_bytes()) && asked < kPrefetchBytes; ++k) {
        asked += store::PrefetchPyramidBlock(c, plan.pyramid, level_, InnerBlock(plan, chunk_, k));
      }
    }
    int64_t at = offset;
    while (at < std::min(end, index.data_bytes())) {
      const int64_t k = at / inner;
      const int64_t n = std::min(end, (k + 1) * inner) - at;
      uint8_t* dst = out + (at - offset);
      const std::vector<int64_t> coords = InnerBlock(plan, chunk_, k);
      const geometry::Box full = FullBlockBox(plan, coords);
      const geometry::Box inside = geometry::Intersect(full, geometry::Box::FromShape(shape));
      if (inside.empty()) {
        std::memset(dst, 0, static_cast<size_t>(n));
      } else if (level_ == 0) {
        B2NDFS_ASSIGN_OR_RETURN(
            size_t got, ReadPadded(c, inside, full, at - k * inner, static_cast<size_t>(n), dst));
        if (static_cast<int64_t>(got) != n) return Status(EIO, name() + ": short read of a block");
      } else {
        B2NDFS_ASSIGN_OR_RETURN(cache::Value block,
                                store::PyramidBlock(c, plan.pyramid, level_, coords));
        std::memcpy(dst, block->data() + (at - k * inner), static_cast<size_t>(n));
      }
      at += n;
    }
    if (at < end) {
      index.Read(at - index.data_bytes(),
                 std::span<uint8_t>(out + (at - offset), static_cast<size_t>(end - at)));
    }
    return static_cast<size_t>(end - offset);
  }

  void ReadAhead(const store::Container& c, int64_t offset, int64_t length) const override {
    Result<OmePlan> plan = Plan(c);
    if (!plan.ok()) return;
    const int64_t inner = plan->shard.inner_bytes();
    const int64_t end = std::min(plan->shard.data_bytes(), offset + std::max<int64_t>(length, 0));
    if (level_ > 0) {
      // A computed level: the level-0 blocks under the range are decoded
      // ahead (the means are computed when read).
      int64_t asked = 0;
      for (int64_t k = std::max<int64_t>(offset, 0) / inner;
           k * inner < end && asked < kPrefetchBytes; ++k) {
        asked +=
            store::PrefetchPyramidBlock(c, plan->pyramid, level_, InnerBlock(*plan, chunk_, k));
      }
      return;
    }
    const auto& shape = plan->pyramid.shapes[0];
    for (int64_t at = std::max<int64_t>(offset, 0); at < end;) {
      const int64_t k = at / inner;
      const int64_t n = std::min(end, (k + 1) * inner) - at;
      const geometry::Box full = FullBlockBox(*plan, InnerBlock(*plan, chunk_, k));
      const geometry::Box inside = geometry::Intersect(full, geometry::Box::FromShape(shape));
      if (!inside.empty()) PrefetchPadded(c, inside, full, at - k * inner, n);
      at += n;
    }
  }

 private:
  int level_;
  std::vector<int64_t> chunk_;
};

// A level's c/ and its directories c/I/..., as data.zarr/'s.
class LevelKeyDir : public Node {
 public:
  LevelKeyDir(std::string name, uint64_t c_ordinal, int level, std::vector<int64_t> coords,
              const KeyTree& tree)
      : Node(std::move(name), c_ordinal + tree.Ordinal(coords)),
        c_ordinal_(c_ordinal),
        level_(level),
        coords_(std::move(coords)) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    B2NDFS_ASSIGN_OR_RETURN(OmePlan plan, Plan(c));
    const KeyTree& tree = plan.trees[static_cast<size_t>(level_)];
    std::optional<std::vector<int64_t>> coords = KeyCoords(tree, coords_, name);
    if (!coords) return NotFound(name);
    if (static_cast<int>(coords->size()) < tree.ndim()) {
      return std::shared_ptr<const Node>(
          std::make_shared<LevelKeyDir>(name, c_ordinal_, level_, std::move(*coords), tree));
    }
    const uint64_t ordinal = c_ordinal_ + tree.Ordinal(*coords);
    return std::shared_ptr<const Node>(
        std::make_shared<LevelShard>(name, ordinal, level_, std::move(*coords)));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    B2NDFS_ASSIGN_OR_RETURN(OmePlan plan, Plan(c));
    return ListKeyDir(plan.trees[static_cast<size_t>(level_)], coords_.size(), ordinal() + 1);
  }

 private:
  uint64_t c_ordinal_;
  int level_;
  std::vector<int64_t> coords_;
};

// Level k's directory: zarr.json and c/.
class LevelDir : public Node {
 public:
  LevelDir(int level, uint64_t ordinal) : Node(std::to_string(level), ordinal), level_(level) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    B2NDFS_ASSIGN_OR_RETURN(OmePlan plan, Plan(c));
    if (name == "zarr.json") {
      const std::string head =
          ZarrJsonHead(plan.dtype, plan.pyramid.shapes[static_cast<size_t>(level_)],
                       plan.chunkshape, plan.pyramid.blockshape, plan.DimensionNames());
      return std::shared_ptr<const Node>(std::make_shared<ZarrTextFile>(
          "zarr.json", ordinal() + 1,
          TextPieces{Literal(head), Literal("{}"), Literal(ZarrJsonTail())}));
    }
    if (name != "c") return NotFound(name);
    return std::shared_ptr<const Node>(
        std::make_shared<LevelKeyDir>(name, ordinal() + 2, level_, std::vector<int64_t>(),
                                      plan.trees[static_cast<size_t>(level_)]));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container&) const override {
    std::vector<ListEntry> names{{"c", true, ordinal() + 2}, {"zarr.json", false, ordinal() + 1}};
    const size_t count = names.size();  // before the lambda takes `names`
    return MakeListing(count, [names = std::move(names)](size_t i) { return names[i]; });
  }

 private:
  int level_;
};

class OmeDir : public Node {
 public:
  explicit OmeDir(uint64_t base) : Node("ome.zarr", base) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    B2NDFS_ASSIGN_OR_RETURN(OmePlan plan, Plan(c));
    if (name == "zarr.json") {
      return std::shared_ptr<const Node>(std::make_shared<GroupJsonFile>(ordinal() + 1));
    }
    const auto level = ParseIndex(name);
    if (!level || *level >= plan.pyramid.levels() || std::to_string(*level) != name) {
      return NotFound(name);
    }
    const int k = static_cast<int>(*level);
    return std::shared_ptr<const Node>(std::make_shared<LevelDir>(k, plan.LevelBase(ordinal(), k)));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    B2NDFS_ASSIGN_OR_RETURN(OmePlan plan, Plan(c));
    std::vector<ListEntry> names;
    for (int k = 0; k < plan.pyramid.levels(); ++k) {
      names.push_back({std::to_string(k), true, plan.LevelBase(ordinal(), k)});
    }
    std::sort(names.begin(), names.end(),
              [](const ListEntry& a, const ListEntry& b) { return a.name < b.name; });
    names.push_back({"zarr.json", false, ordinal() + 1});
    const size_t count = names.size();  // before the lambda takes `names`
    return MakeListing(count, [names = std::move(names)](size_t i) { return names[i]; });
  }
};

class OmeZarrEntry : public PlannedDirEntry<&Plan, OmeDir> {
 public:
  OmeZarrEntry() : PlannedDirEntry("ome.zarr") {}
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    store::FileDescription d{"ome.zarr", c.layout().shape(), 0, {}, {}};
    Result<OmePlan> plan = Plan(c);
    if (!plan.ok()) {
      d.absent = plan.status().message();
      out->push_back(std::move(d));
      return;
    }
    d.size = plan->shard.size();
    // (Not whether it is a label image: that reads meta.json, being rendered.)
    d.note = std::to_string(plan->pyramid.levels()) + " levels, the coarsest " +
             JsonInts(plan->pyramid.shapes.back()) +
             ": means along the space axes (nearest for a label image, vlmeta '" +
             std::string(kLabelKey) + "'), computed on read";
    out->push_back(std::move(d));
  }
};

}  // namespace

std::unique_ptr<RootEntry> MakeOmeZarrEntry() { return std::make_unique<OmeZarrEntry>(); }

}  // namespace b2ndfs::views
