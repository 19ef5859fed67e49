// The computed levels of store/pyramid.h: blocks made from the level below
// through the block cache, and Container::Computed, the cache entry they are
// kept in.
#include "b2ndfs/store/pyramid.h"

#include <cstring>

#include "b2ndfs/store/container.h"
#include "cache_keys.h"

namespace b2ndfs::store {

using geometry::Box;

namespace {

cache::Key ComputedKey(uint64_t cache_id, int space, int64_t index) {
  return cache::Key{cache_id, index, kComputedBlock - space, cache::EntryKind::kOther};
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
                    [&]() { return MakeBlock(c, plan, level, coords); });
}

int64_t PrefetchPyramidBlock(const Container& c, const PyramidPlan& plan, int level,
                             const std::vector<int64_t>& coords) {
  if (level < 1 || level >= plan.levels() || !InGrid(coords, plan.BlockGrid(level))) return 0;
  if (PyramidBlockCached(c, plan, level, coords)) return 0;
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
