// The computed levels of store/pyramid.h: blocks made from the level below
// through the block cache (or found where an earlier mount kept them), and
// Container::Computed, the cache entry they are kept in.
#include "b2ndfs/store/pyramid.h"

#include <cstring>
#include <span>
#include <string>

#include "b2ndfs/source/derived_store.h"
#include "b2ndfs/store/container.h"
#include "cache_keys.h"

namespace b2ndfs::store {

using geometry::Box;

namespace {

cache::Key ComputedKey(uint64_t cache_id, int space, int64_t index) {
  return cache::Key{cache_id, index, kComputedBlock - space, cache::EntryKind::kOther};
}

// The version of what Downsample and MakeBlock compute, in the keys of
// blocks kept across mounts: bump it when a block's bytes would change, so
// that blocks kept by an older b2ndfs are never served.
constexpr int kBlockFormat = 1;

std::string Joined(const std::vector<int64_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

// A stable description of block `coords` of `level`: everything its bytes
// depend on besides the source's version (the store's scope).
std::string PersistentKey(const PyramidPlan& plan, int level, const std::vector<int64_t>& coords) {
  std::string axes;
  for (bool d : plan.downsampled) axes += d ? '1' : '0';
  return "pyramid-block/" + std::to_string(kBlockFormat) +
         (plan.method == Downsampling::kMean ? " mean " : " stride ") + plan.item.kind +
         std::to_string(plan.item.size) + " shape=" + Joined(plan.shapes[0]) +
         " block=" + Joined(plan.blockshape) + " axes=" + axes + " level=" + std::to_string(level) +
         " at=" + Joined(coords);
}

int64_t LinearIndex(const std::vector<int64_t>& coords, const std::vector<int64_t>& grid) {
  int64_t index = 0;
  for (size_t i = 0; i < grid.size(); ++i) index = index * grid[i] + coords[i];
  return index;
}

// The block's box at `level`, trimmed to the level's shape.
Box BlockBox(const PyramidPlan& plan, int level, const std::vector<int64_t>& coords, bool trim) {
  const std::vector<int64_t>& shape = plan.shapes[static_cast<size_t>(level)];
  Box box;
  for (size_t i = 0; i < coords.size(); ++i) {
    box.start.push_back(coords[i] * plan.blockshape[i]);
    const int64_t stop = box.start.back() + plan.blockshape[i];
    box.stop.push_back(trim ? std::min(stop, shape[i]) : stop);
  }
  return box;
}

bool InGrid(const std::vector<int64_t>& coords, const std::vector<int64_t>& grid) {
  for (size_t i = 0; i < grid.size(); ++i) {
    if (coords[i] < 0 || coords[i] >= grid[i]) return false;
  }
  return true;
}

Result<cache::Value> MakeBlock(const Container& c, const PyramidPlan& plan, int level,
                               const std::vector<int64_t>& coords) {
  const Box box = BlockBox(plan, level, coords, true);
  const std::vector<int64_t>& below = plan.shapes[static_cast<size_t>(level - 1)];
  Box src;
  for (size_t i = 0; i < coords.size(); ++i) {
    if (plan.downsampled[i]) {
      src.start.push_back(2 * box.start[i]);
      src.stop.push_back(std::min(2 * box.stop[i], below[i]));
    } else {
      src.start.push_back(box.start[i]);
      src.stop.push_back(box.stop[i]);
    }
  }
  std::vector<uint8_t> src_bytes(static_cast<size_t>(src.NumItems() * plan.itemsize));
  B2NDFS_RETURN_IF_ERROR(ReadPyramidBox(c, plan, level - 1, src, src_bytes.data()));
  std::vector<uint8_t> dst(static_cast<size_t>(box.NumItems() * plan.itemsize));
  Downsample(plan.item, plan.method, src_bytes.data(), src.shape(), plan.downsampled, dst.data());
  auto value = std::make_shared<cache::Bytes>(static_cast<size_t>(plan.BlockBytes()));
  const Box full = BlockBox(plan, level, coords, false);
  if (!(box == full)) std::memset(value->data(), 0, value->size());
  geometry::CopyRegion(dst.data(), box, value->data(), full, box, plan.itemsize);
  GlobalReadStats().blocks_computed++;
  return cache::Value(std::move(value));
}

// The block from where an earlier mount kept it, or made and kept there
// (a block that does not verify is made again; one that cannot be kept
// only counted by the store).
Result<cache::Value> LoadBlock(const Container& c, const PyramidPlan& plan, int level,
                               const std::vector<int64_t>& coords) {
  const source::DerivedStore* kept = c.derived_store();
  if (kept == nullptr) return MakeBlock(c, plan, level, coords);
  const std::string key = PersistentKey(plan, level, coords);
  auto value = std::make_shared<cache::Bytes>(static_cast<size_t>(plan.BlockBytes()));
  if (kept->Get(key, std::span<uint8_t>(value->data(), value->size()))) {
    GlobalReadStats().blocks_computed_from_disk++;
    return cache::Value(std::move(value));
  }
  B2NDFS_ASSIGN_OR_RETURN(cache::Value made, MakeBlock(c, plan, level, coords));
  kept->Put(key, std::span<const uint8_t>(made->data(), made->size()));
  return made;
}

}  // namespace

Result<cache::Value> Container::Computed(int space, int64_t index,
                                         const std::function<Result<cache::Value>()>& make) const {
  if (!ok()) return InvalidData(error_);
  if (space < 0 || space > 63) return InvalidArgument("no computed space " + std::to_string(space));
  return context_->cache->GetOrLoad(ComputedKey(cache_id_, space, index), make);
}

bool Container::ComputedCached(int space, int64_t index) const {
  return ok() && context_->cache->Contains(ComputedKey(cache_id_, space, index));
}

const source::DerivedStore* Container::derived_store() const {
  return evaluation_ == nullptr ? source_->derived_store() : nullptr;
}

Result<PyramidPlan> PlanPyramid(const Container& c, std::vector<bool> downsampled,
                                Downsampling method) {
  if (!c.ok()) return InvalidArgument("the container cannot be decoded");
  const geometry::ArrayLayout& layout = c.layout();
  if (!layout.regular()) return InvalidArgument("the array's chunks are not of equal shape");
  if (downsampled.size() != static_cast<size_t>(layout.ndim())) {
    return InvalidArgument("one downsampling flag per axis is needed");
  }
  B2NDFS_ASSIGN_OR_RETURN(PyramidItem item, PyramidItemOf(c.npy_descr()));
  if (item.size != layout.itemsize()) return Status(ENOTSUP, "the dtype is not the item size");
  PyramidPlan plan;
  plan.item = item;
  plan.method = method;
  plan.shapes = PyramidShapes(layout.shape(), layout.chunkshape(), downsampled);
  plan.downsampled = std::move(downsampled);
  plan.blockshape = layout.blockshape();
  plan.itemsize = layout.itemsize();
  for (int64_t b : plan.blockshape) {
    if (b < 1) return InvalidArgument("a block of zero items");
  }
  return plan;
}

Result<cache::Value> PyramidBlock(const Container& c, const PyramidPlan& plan, int level,
                                  const std::vector<int64_t>& coords) {
  if (level < 1 || level >= plan.levels()) return InvalidArgument("no pyramid level here");
  const std::vector<int64_t> grid = plan.BlockGrid(level);
  if (coords.size() != grid.size() || !InGrid(coords, grid)) {
    return InvalidArgument("no such block of pyramid level " + std::to_string(level));
  }
  return c.Computed(level, LinearIndex(coords, grid),
                    [&]() { return LoadBlock(c, plan, level, coords); });
}

int64_t PrefetchPyramidBlock(const Container& c, const PyramidPlan& plan, int level,
                             const std::vector<int64_t>& coords) {
  if (level < 1 || level >= plan.levels() || !InGrid(coords, plan.BlockGrid(level))) return 0;
  if (PyramidBlockCached(c, plan, level, coords)) return 0;
  // Kept by an earlier mount: read, not computed (a block that then fails
  // to verify is computed without this head start).
  const source::DerivedStore* kept = c.derived_store();
  if (kept != nullptr && kept->Contains(PersistentKey(plan, level, coords))) return 0;
  Box box = BlockBox(plan, level, coords, true);
  const std::vector<int64_t>& shape = plan.shapes[0];
  for (size_t i = 0; i < coords.size(); ++i) {
    if (!plan.downsampled[i]) continue;
    box.start[i] = std::min(box.start[i] << level, shape[i]);
    box.stop[i] = std::min(box.stop[i] << level, shape[i]);
  }
  const int64_t bytes = box.NumItems() * plan.itemsize;
  if (bytes > 0) c.Prefetch(ArrayStream{std::string(), box}, 0, bytes);
  return bytes;
}

bool PyramidBlockCached(const Container& c, const PyramidPlan& plan, int level,
                        const std::vector<int64_t>& coords) {
  const std::vector<int64_t> grid = plan.BlockGrid(level);
  return InGrid(coords, grid) && c.ComputedCached(level, LinearIndex(coords, grid));
}

Status ReadPyramidBox(const Container& c, const PyramidPlan& plan, int level, const Box& box,
                      uint8_t* out) {
  if (level == 0) return c.ReadArrayBox(box, out);
  if (box.empty()) return Status::Ok();
  const int n = box.ndim();
  std::vector<int64_t> first(n), last(n);  // the blocks under the box
  for (int i = 0; i < n; ++i) {
    first[i] = box.start[i] / plan.blockshape[i];
    last[i] = (box.stop[i] - 1) / plan.blockshape[i];
  }
  std::vector<int64_t> coords = first;
  while (true) {
    B2NDFS_ASSIGN_OR_RETURN(cache::Value block, PyramidBlock(c, plan, level, coords));
    const Box full = BlockBox(plan, level, coords, false);
    geometry::CopyRegion(block->data(), full, out, box, geometry::Intersect(full, box),
                         plan.itemsize);
    int i = n - 1;
    for (; i >= 0; --i) {
      if (++coords[i] <= last[i]) break;
      coords[i] = first[i];
    }
    if (i < 0) break;
  }
  return Status::Ok();
}

}  // namespace b2ndfs::store
