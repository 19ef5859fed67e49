// geometry: copying a box's items between C-order buffers (see geometry.h),
// the gather that assembles every read from cached blocks.

#include <algorithm>
#include <array>
#include <cstring>

#include "b2ndfs/geometry/geometry.h"
#include "b2ndfs/util/sanitizers.h"

namespace b2ndfs::geometry {
namespace {

// Upper bound on axes seen by the fixed-size scratch arrays below; a Box may
// in principle have more axes than a layout allows, so CopyRegion checks.
constexpr int kMaxScratchAxes = 128;

// One run of kRun bytes, a size known at compile time: a few inlined loads
// and stores, not a memcpy call. Runs of whole 32-byte vectors are copied as
// such, so that CopyRuns' AVX2 build moves 32 bytes per instruction (GCC
// expands a plain memcpy with 16-byte moves even there).
using Vector32 = uint8_t __attribute__((vector_size(32)));
template <size_t kRun>
inline void CopyRun(uint8_t* d, const uint8_t* s) {
  if constexpr (kRun % 32 == 0) {
#pragma GCC unroll 8
    for (size_t i = 0; i < kRun; i += 32) {
      Vector32 v;
      std::memcpy(&v, s + i, sizeof v);
      std::memcpy(d + i, &v, sizeof v);
    }
  } else {
    std::memcpy(d, s, kRun);
  }
}

// Copies n runs of kRun bytes, s_stride and d_stride apart (~20 instructions
// for a 128-byte block row, where a memcpy call cost ~40). Runs of one small
// item (slices across the last axis: an item from every row of a block) go
// four per iteration, or the loop's own bookkeeping would cost more than the
// copy.
template <size_t kRun>
inline void StridedCopy(const uint8_t* s, uint8_t* d, int64_t n, int64_t s_stride,
                        int64_t d_stride) {
  int64_t k = 0;
  if constexpr (kRun <= 16) {
    for (; k + 4 <= n; k += 4) {
      std::memcpy(d, s, kRun);
      std::memcpy(d + d_stride, s + s_stride, kRun);
      std::memcpy(d + 2 * d_stride, s + 2 * s_stride, kRun);
      std::memcpy(d + 3 * d_stride, s + 3 * s_stride, kRun);
      s += 4 * s_stride;
      d += 4 * d_stride;
    }
  }
  for (; k < n; ++k) {
    CopyRun<kRun>(d, s);
    s += s_stride;
    d += d_stride;
  }
}

// The two innermost axes of a copy: `rows` rows of `n` runs; runs are
// s_step / d_step apart, rows s_row / d_row.
struct Walk {
  int64_t rows = 1;
  int64_t s_row = 0, d_row = 0;
  int64_t n = 1;
  int64_t s_step = 0, d_step = 0;
};

template <size_t kRun>
inline void StridedCopy2D(const uint8_t* s, uint8_t* d, const Walk& w) {
  for (int64_t r = 0; r < w.rows; ++r) {
    StridedCopy<kRun>(s, d, w.n, w.s_step, w.d_step);
    s += w.s_row;
    d += w.d_row;
  }
}

// StridedCopy2D for a run length known only at run time (the two inner
// axes in one call: a slice across the last axis makes a call per block,
// not per block row). Built twice: the AVX2 build (chosen at load time on
// CPUs that have it) copies block rows of 32 bytes and more with half the
// instructions, most of a warm `data` read's.
// Not under ThreadSanitizer: the clone is picked by an ifunc resolver that
// runs while the program is relocated, before TSan's runtime is set up, and
// crashes there (every binary that links geometry died at start).
#ifdef B2NDFS_THREAD_SANITIZER
#define B2NDFS_COPY_CLONES
#else
#define B2NDFS_COPY_CLONES __attribute__((target_clones("avx2", "default")))
#endif
B2NDFS_COPY_CLONES void CopyRuns(size_t run, const uint8_t* s, uint8_t* d, const Walk& w) {
  switch (run) {
    case 1:
      return StridedCopy2D<1>(s, d, w);
    case 2:
      return StridedCopy2D<2>(s, d, w);
    case 4:
      return StridedCopy2D<4>(s, d, w);
    case 8:
      return StridedCopy2D<8>(s, d, w);
    case 16:
      return StridedCopy2D<16>(s, d, w);
    // Block rows of 8 to 64 items of 4 or 8 bytes (blocks' last axes).
    case 32:
      return StridedCopy2D<32>(s, d, w);
    case 64:
      return StridedCopy2D<64>(s, d, w);
    case 128:
      return StridedCopy2D<128>(s, d, w);
    case 256:
      return StridedCopy2D<256>(s, d, w);
    default:
      for (int64_t r = 0; r < w.rows; ++r) {
        const uint8_t* row_s = s + r * w.s_row;
        uint8_t* row_d = d + r * w.d_row;
        for (int64_t k = 0; k < w.n; ++k) {
          std::memcpy(row_d + k * w.d_step, row_s + k * w.s_step, run);
        }
      }
  }
}

}  // namespace

void CopyRegion(const uint8_t* src, BoxRef src_box, uint8_t* dst, BoxRef dst_box, BoxRef region,
                int64_t itemsize) {
  const int n = region.ndim;
  if (n > kMaxScratchAxes) return;  // no layout has that many axes

  // Per axis: extent of the region and byte strides in both buffers, after
  // dropping length-1 axes and merging axes that are contiguous in both
  // buffers. What remains is a run (the last axis, always item-contiguous)
  // and an odometer over the outer axes. The merged axes fill the arrays
  // from the back, innermost last: [first, kMaxScratchAxes). Not
  // zero-filled (7 KiB per call, more than a small piece's copy).
  std::array<int64_t, kMaxScratchAxes> ext, sstride, dstride;
  int first = kMaxScratchAxes;
  int64_t ss = itemsize, ds = itemsize;
  for (int i = n - 1; i >= 0; --i) {
    const int64_t e = region.stop[i] - region.start[i];
    if (e <= 0) return;  // empty
    src += (region.start[i] - src_box.start[i]) * ss;
    dst += (region.start[i] - dst_box.start[i]) * ds;
    if (e != 1) {
      if (first < kMaxScratchAxes && sstride[first] * ext[first] == ss &&
          dstride[first] * ext[first] == ds) {
        ext[first] *= e;
      } else {
        --first;
        ext[first] = e;
        sstride[first] = ss;
        dstride[first] = ds;
      }
    }
    ss *= src_box.stop[i] - src_box.start[i];
    ds *= dst_box.stop[i] - dst_box.start[i];
  }
  const int64_t* const e = ext.data() + first;
  const int64_t* const s_stride = sstride.data() + first;
  const int64_t* const d_stride = dstride.data() + first;
  int m = kMaxScratchAxes - first;

  // The innermost merged axis is item-contiguous in both buffers only if it
  // has stride itemsize; otherwise (e.g. all axes of length 1) copy one item.
  size_t run = static_cast<size_t>(itemsize);
  if (m > 0 && s_stride[m - 1] == itemsize && d_stride[m - 1] == itemsize) {
    run = static_cast<size_t>(e[m - 1] * itemsize);
    --m;
  }
  if (m == 0) {
    std::memcpy(dst, src, run);
    return;
  }

  // Axes m - 2 and m - 1 are walked by CopyRuns; an odometer over the others.
  Walk w;
  w.n = e[m - 1];
  w.s_step = s_stride[m - 1];
  w.d_step = d_stride[m - 1];
  if (m >= 2) {
    w.rows = e[m - 2];
    w.s_row = s_stride[m - 2];
    w.d_row = d_stride[m - 2];
  }
  if (m <= 2) {
    CopyRuns(run, src, dst, w);
    return;
  }
  std::array<int64_t, kMaxScratchAxes> idx;
  std::fill_n(idx.begin(), m, 0);
  while (true) {
    CopyRuns(run, src, dst, w);
    int a = m - 3;
    for (; a >= 0; --a) {
      src += s_stride[a];
      dst += d_stride[a];
      if (++idx[a] < e[a]) break;
      src -= s_stride[a] * e[a];
      dst -= d_stride[a] * e[a];
      idx[a] = 0;
    }
    if (a < 0) break;
  }
}

}  // namespace b2ndfs::geometry
