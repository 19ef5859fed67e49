// store/pyramid: a multiscale pyramid of a container's array, computed on
// read (README.md, "OME-Zarr pyramids").
//
// Level 0 is the array. Level k halves level k-1 along the downsampled
// (spatial) axes, ceil(n / 2) items, and keeps the other axes. Every level
// has the array's block shape; a block of level k >= 1 is computed from the
// level-(k-1) items under it (at most 2^d blocks of level k-1, d the
// downsampled axes): kMean averages the 2 x ... x 2 box of items present
// (fewer at an odd edge); integers are rounded to nearest, ties to even (as
// TensorStore's downsample "mean"); floats are summed as double; kStride
// keeps the box's first item (label images: no value that is not in the
// data). Level k is made from level k-1, never from level 0 directly, so
// that a block costs its footprint one level down (cached), and the coarsest
// level one pass over the array, done once.
//
// Memory and sharing: computed blocks are kept in the block cache
// (Container::Computed: single flight, charged to cache_size), whole (the
// block shape, zero past the level's edges), and counted in
// ReadStats::blocks_computed when made. Across mounts: when the container
// offers a derived store (Container::derived_store(): a remote object with
// disk_cache=, source/derived_store.h), a block the cache lacks is looked
// up there first (ReadStats::blocks_computed_from_disk), under a key naming
// the block format's version, the method, dtype, shapes, axes, level and
// block; one computed is put there (single flight: the cache's).
// Ownership: a PyramidPlan is a plain value made from a container's layout;
// it refers to nothing. Thread-safety: pure functions and const methods; any
// thread. Errors: PlanPyramid says why there is no pyramid (EINVAL,
// ENOTSUP); reads return the container's read errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/geometry/geometry.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::store {

class Container;

enum class Downsampling { kMean, kStride };

// The items a pyramid can downsample: little-endian (or single-byte)
// integers of 1, 2, 4, 8 bytes and floats of 4 or 8 bytes.
struct PyramidItem {
  char kind = 0;  // 'i', 'u', 'f'
  int size = 0;
};
// From a NumPy descr ("'<f4'", "'|u1'"); ENOTSUP saying why otherwise.
Result<PyramidItem> PyramidItemOf(const std::string& npy_descr);

// At most this many levels (level 0 included).
constexpr int kMaxPyramidLevels = 10;

// The shapes of levels 0..L: level k + 1 exists while level k does not fit
// one chunk on every downsampled axis (and some such axis is longer than 1),
// up to kMaxPyramidLevels levels.
std::vector<std::vector<int64_t>> PyramidShapes(const std::vector<int64_t>& shape,
                                                const std::vector<int64_t>& chunkshape,
                                                const std::vector<bool>& downsampled);

// Downsamples `src`, C-order items of shape `src_shape`, by 2 along the axes
// where `downsampled` is true into `dst`, of shape ceil(src_shape / 2) there
// (src_shape elsewhere). Item (j) of dst comes from items [2j, min(2j + 2, n))
// of src on downsampled axes, [j] on the others.
void Downsample(const PyramidItem& item, Downsampling method, const uint8_t* src,
                const std::vector<int64_t>& src_shape, const std::vector<bool>& downsampled,
                uint8_t* dst);

struct PyramidPlan {
  PyramidItem item;
  Downsampling method = Downsampling::kMean;
  std::vector<bool> downsampled;             // per axis
  std::vector<std::vector<int64_t>> shapes;  // per level
  std::vector<int64_t> blockshape;
  int64_t itemsize = 0;
  int levels() const { return static_cast<int>(shapes.size()); }
  // Level `level`'s grid of blocks: ceil(shape / blockshape).
  std::vector<int64_t> BlockGrid(int level) const;
  int64_t BlockBytes() const;
};

// The pyramid of an opened container (ok(), regular layout, a PyramidItem
// dtype); EINVAL or ENOTSUP saying why not.
Result<PyramidPlan> PlanPyramid(const Container& c, std::vector<bool> downsampled,
                                Downsampling method);

// Block `coords` (in BlockGrid(level)) of level >= 1: BlockBytes() bytes, the
// block's items C-order in the whole block shape, zero past the level's
// edges. Computed (from level - 1, through the cache) only when not cached.
Result<cache::Value> PyramidBlock(const Container& c, const PyramidPlan& plan, int level,
                                  const std::vector<int64_t>& coords);

// Reads `box` (inside shapes[level]) of any level as C-order bytes into `out`
// (box.NumItems() * itemsize bytes).
Status ReadPyramidBox(const Container& c, const PyramidPlan& plan, int level,
                      const geometry::Box& box, uint8_t* out);

// Starts decompressing, on the container's background workers, the level-0
// blocks under block `coords` of level >= 1 that the cache lacks (best
// effort, as Container::Prefetch), so that computing it waits for them in
// parallel rather than one by one; nothing when it is cached. Returns the
// bytes of the level-0 box asked for (0 when nothing was).
int64_t PrefetchPyramidBlock(const Container& c, const PyramidPlan& plan, int level,
                             const std::vector<int64_t>& coords);

// Whether block `coords` of level >= 1 is in the cache.
bool PyramidBlockCached(const Container& c, const PyramidPlan& plan, int level,
                        const std::vector<int64_t>& coords);

}  // namespace b2ndfs::store
