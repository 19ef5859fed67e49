// data.zarr/: the array as a Zarr v3 store whose shard is the b2nd chunk and
// whose inner chunk is the b2nd block (python-blosc2's `b2nd-to-zarr
// --sharded` mapping), so that a reader asking for one inner chunk makes the
// daemon decompress one block. zarr.json describes it (attributes: the
// vlmetalayers; dimension_names: a "_ARRAY_DIMENSIONS" vlmetalayer); the
// chunk key of chunk (I, J, K) is c/I/J/K (default encoding, "/"; "c" for a
// 0-D array). Each shard file holds every inner chunk uncompressed and whole
// (blocks past the array's edges padded with the fill value 0, as Zarr
// requires), then the index of (offset, nbytes) pairs and its CRC-32C: its
// size is known without decoding, and a byte range maps to the blocks it
// touches. Where the chunk is not a whole number of blocks (or has too many),
// the store is unsharded (one padded chunk per file, codecs [bytes]), and
// meta.json's files says so. Dtypes Zarr v3 has no name for are raw r<bits>.
#include <algorithm>
#include <optional>
#include <span>
#include <vector>

#include "b2ndfs/util/checked_math.h"
#include "kinds.h"
#include "zarr_files.h"
#include "zarr_meta.h"
#include "zarr_v3_meta.h"

namespace b2ndfs::views {
namespace {

// Beyond this many blocks per chunk the store is unsharded: each shard's
// index (16 bytes per inner chunk) stays within 1 MiB, and its CRC cheap.
constexpr int64_t kMaxV3InnerChunks = int64_t{1} << 16;

// What data.zarr/ of a container is; PlanV3() says why it is absent.
struct V3Plan {
  ZarrV3Dtype dtype;
  std::vector<int64_t> inner;       // the inner chunk shape; empty: unsharded
  std::string unsharded;            // why unsharded, in words
  std::optional<ShardIndex> shard;  // when sharded
  std::optional<KeyTree> tree;      // ndim >= 1 and some chunk
  bool has_chunks = false;          // "c" exists (a file for a 0-D array)
  uint64_t OrdinalCount() const {
    if (!has_chunks) return 2;
    return 2 + (tree ? tree->size() : 1);
  }
};

Result<V3Plan> PlanV3(const store::Container& c) {
  if (!c.ok()) return Status(ENOENT, "the container cannot be decoded");
  const geometry::ArrayLayout& layout = c.layout();
  if (!layout.regular())
    return InvalidArgument("Zarr v3's regular grid needs chunks of equal shape");
  V3Plan plan;
  plan.dtype = ZarrV3DtypeOf(c.npy_descr(), layout.itemsize());
  const auto& chunks = layout.chunkshape();
  const auto& blocks = layout.blockshape();
  bool whole = true;
  int64_t count = 1;
  for (size_t i = 0; i < chunks.size(); ++i) {
    whole = whole && chunks[i] % blocks[i] == 0;
    if (whole) count = CheckedMul(count, chunks[i] / blocks[i]).value_or(kMaxV3InnerChunks + 1);
    count = std::min(count, kMaxV3InnerChunks + 1);
  }
  const int64_t block_bytes = geometry::Box::FromShape(blocks).NumItems() * layout.itemsize();
  if (layout.ndim() == 0) {
    plan.unsharded = "unsharded: a 0-D array is one item";
  } else if (!whole) {
    plan.unsharded = "unsharded: the chunk shape " + JsonInts(chunks) +
                     " is not a whole number of blocks " + JsonInts(blocks);
  } else if (count > kMaxV3InnerChunks) {
    plan.unsharded = "unsharded: a chunk holds more than " + std::to_string(kMaxV3InnerChunks) +
                     " blocks " + JsonInts(blocks);
  } else {
    plan.shard = MakeShardIndex(count, block_bytes);
    if (plan.shard) {
      plan.inner = blocks;
    } else {
      plan.unsharded = "unsharded: a shard of " + JsonInts(chunks) + " would be too large";
    }
  }
  plan.has_chunks = layout.NumChunks() > 0;
  if (plan.has_chunks && layout.ndim() > 0) {
    plan.tree = MakeKeyTree(layout.ChunkGridShape());
    if (!plan.tree) return InvalidArgument("too many chunks to name in a Zarr v3 store");
  }
  return plan;
}

// The inner chunk `k` of a shard of chunk `chunk`: the whole block's box and
// its part inside the array.
std::pair<geometry::Box, geometry::Box> InnerBoxes(const geometry::ArrayLayout& layout,
                                                   int64_t chunk, int64_t k) {
  geometry::Box full = layout.ChunkBox(chunk);
  const auto& chunks = layout.chunkshape();
  const auto& blocks = layout.blockshape();
  for (int i = layout.ndim() - 1; i >= 0; --i) {
    const int64_t per_axis = chunks[i] / blocks[i];
    full.start[i] += (k % per_axis) * blocks[i];
    full.stop[i] = full.start[i] + blocks[i];
    k /= per_axis;
  }
  geometry::Box inside = geometry::Intersect(full, geometry::Box::FromShape(layout.shape()));
  return {std::move(full), std::move(inside)};
}

// One shard: the chunk's blocks as inner chunks, then the index.
class ShardFile : public Node {
 public:
  ShardFile(std::string name, uint64_t ordinal, int64_t chunk, ShardIndex index)
      : Node(std::move(name), ordinal), chunk_(chunk), index_(index) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container&) const override { return index_.size(); }

  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override {
    if (offset < 0) return InvalidArgument("negative offset");
    const int64_t size = index_.size();
    if (offset >= size) return size_t{0};
    const int64_t end = offset + std::min<int64_t>(static_cast<int64_t>(length), size - offset);
    const int64_t inner = index_.inner_bytes();
    int64_t at = offset;
    while (at < std::min(end, index_.data_bytes())) {
      const int64_t k = at / inner;
      const int64_t n = std::min(end, (k + 1) * inner) - at;
      auto [full, inside] = InnerBoxes(c.layout(), chunk_, k);
      B2NDFS_ASSIGN_OR_RETURN(size_t got, ReadPadded(c, inside, full, at - k * inner,
                                                     static_cast<size_t>(n), out + (at - offset)));
      if (static_cast<int64_t>(got) != n) return Status(EIO, name() + ": short read of a block");
      at += n;
    }
    if (at < end) {
      index_.Read(at - index_.data_bytes(),
                  std::span<uint8_t>(out + (at - offset), static_cast<size_t>(end - at)));
    }
    return static_cast<size_t>(end - offset);
  }

  void ReadAhead(const store::Container& c, int64_t offset, int64_t length) const override {
    const int64_t inner = index_.inner_bytes();
    const int64_t end = std::min(index_.data_bytes(), offset + std::max<int64_t>(length, 0));
    for (int64_t at = std::max<int64_t>(offset, 0); at < end;) {
      const int64_t k = at / inner;
      const int64_t n = std::min(end, (k + 1) * inner) - at;
      auto [full, inside] = InnerBoxes(c.layout(), chunk_, k);
      PrefetchPadded(c, inside, full, at - k * inner, n);
      at += n;
    }
  }

  bool Cached(const store::Container& c) const override {
    return c.StreamCached(store::ArrayStream{std::string(), c.layout().ChunkBox(chunk_)});
  }

 private:
  int64_t chunk_;
  ShardIndex index_;
};

// The file of chunk `chunk` (a shard, or a padded chunk when unsharded).
std::shared_ptr<const Node> ChunkFile(const store::Container& c, const V3Plan& plan,
                                      std::string name, uint64_t ordinal, int64_t chunk) {
  if (plan.shard) return std::make_shared<ShardFile>(std::move(name), ordinal, chunk, *plan.shard);
  const auto& layout = c.layout();
  return std::make_shared<ZarrChunkFile>(std::move(name), ordinal, layout.ChunkBox(chunk),
                                         FullChunkBox(layout, chunk));
}

// c/ and its directories c/I/..., one level per axis but the last. `c_ordinal`
// is c's ordinal, `coords` this directory's path below c.
class KeyDir : public Node {
 public:
  KeyDir(std::string name, uint64_t c_ordinal, std::vector<int64_t> coords, const KeyTree& tree)
      : Node(std::move(name), c_ordinal + tree.Ordinal(coords)),
        c_ordinal_(c_ordinal),
        coords_(std::move(coords)) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    B2NDFS_ASSIGN_OR_RETURN(V3Plan plan, PlanV3(c));
    if (!plan.tree) return NotFound(name);
    const KeyTree& tree = *plan.tree;
    std::optional<std::vector<int64_t>> coords = KeyCoords(tree, coords_, name);
    if (!coords) return NotFound(name);
    if (static_cast<int>(coords->size()) < tree.ndim()) {
      return std::shared_ptr<const Node>(
          std::make_shared<KeyDir>(name, c_ordinal_, std::move(*coords), tree));
    }
    const uint64_t ordinal = c_ordinal_ + tree.Ordinal(*coords);
    return ChunkFile(c, plan, name, ordinal, c.layout().ChunkIndex(*coords));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    B2NDFS_ASSIGN_OR_RETURN(V3Plan plan, PlanV3(c));
    if (!plan.tree) return NotFound(name());
    return ListKeyDir(*plan.tree, coords_.size(), ordinal() + 1);
  }

 private:
  uint64_t c_ordinal_;
  std::vector<int64_t> coords_;
};

// zarr.json: the head, the vlmeta object (meta.json's text), the tail.
std::shared_ptr<const Node> ZarrJson(const store::Container& c, const V3Plan& plan,
                                     uint64_t ordinal) {
  const geometry::ArrayLayout& layout = c.layout();
  std::optional<TextPiece> vlmeta = VlmetaPiece(c);
  std::string dimension_names;
  if (vlmeta) {
    const std::string text = c.meta_json().substr(vlmeta->begin, vlmeta->end - vlmeta->begin);
    if (auto dims = FindJsonMember(text, "_ARRAY_DIMENSIONS")) {
      dimension_names =
          DimensionNamesOf(text.substr(dims->first, dims->second - dims->first), layout.ndim());
    }
  }
  TextPieces pieces{Literal(
      ZarrJsonHead(plan.dtype, layout.shape(), layout.chunkshape(), plan.inner, dimension_names))};
  pieces.push_back(vlmeta ? std::move(vlmeta).value() : Literal("{}"));
  pieces.push_back(Literal(ZarrJsonTail()));
  return std::make_shared<ZarrTextFile>("zarr.json", ordinal, std::move(pieces));
}

// Ordinals: data.zarr at base, zarr.json base + 1, c base + 2 and its tree
// in preorder after it (KeyTree).
class V3Dir : public Node {
 public:
  explicit V3Dir(uint64_t base) : Node("data.zarr", base) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    B2NDFS_ASSIGN_OR_RETURN(V3Plan plan, PlanV3(c));
    if (name == "zarr.json") return ZarrJson(c, plan, ordinal() + 1);
    if (name != "c" || !plan.has_chunks) return NotFound(name);
    if (!plan.tree) return ChunkFile(c, plan, name, ordinal() + 2, 0);  // 0-D
    return std::shared_ptr<const Node>(
        std::make_shared<KeyDir>(name, ordinal() + 2, std::vector<int64_t>(), *plan.tree));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    B2NDFS_ASSIGN_OR_RETURN(V3Plan plan, PlanV3(c));
    std::vector<ListEntry> names{{"zarr.json", false, ordinal() + 1}};
    if (plan.has_chunks) names.push_back({"c", plan.tree.has_value(), ordinal() + 2});
    const size_t count = names.size();
    return MakeListing(count, [names = std::move(names)](size_t i) { return names[i]; });
  }
};

class ZarrV3Entry : public PlannedDirEntry<&PlanV3, V3Dir> {
 public:
  ZarrV3Entry() : PlannedDirEntry("data.zarr") {}
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    store::FileDescription d{"data.zarr", c.layout().chunkshape(), 0, {}, {}};
    Result<V3Plan> plan = PlanV3(c);
    if (!plan.ok()) {
      d.absent = plan.status().message();
      out->push_back(std::move(d));
      return;
    }
    const auto& layout = c.layout();
    // The size of every chunk file: a whole shard, or a whole padded chunk.
    if (plan->shard) {
      d.size = plan->shard->size();
      d.note = "sharded: a shard per chunk " + JsonInts(layout.chunkshape()) +
               ", an uncompressed inner chunk per block " + JsonInts(layout.blockshape());
    } else {
      d.size = geometry::Box::FromShape(layout.chunkshape()).NumItems() * layout.itemsize();
      d.note = plan->unsharded;
    }
    if (!plan->dtype.raw_reason.empty()) d.note += "; " + plan->dtype.raw_reason;
    if (!plan->dtype.readers.empty()) d.note += "; " + plan->dtype.readers;
    out->push_back(std::move(d));
  }
};

}  // namespace

std::unique_ptr<RootEntry> MakeZarrV3Entry() { return std::make_unique<ZarrV3Entry>(); }

}  // namespace b2ndfs::views
