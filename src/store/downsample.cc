// The pure parts of store/pyramid.h: item types, level shapes and the
// downsampling kernels.
#include <cstring>
#include <type_traits>

#include "b2ndfs/store/pyramid.h"

namespace b2ndfs::store {

namespace {

// Sums of up to 2^5 64-bit integers need 69 bits.
__extension__ using Int128 = __int128;

// sum / n rounded to nearest, ties to even (n > 0).
template <typename Acc>
Acc RoundedQuotient(Acc sum, Acc n) {
  Acc q = sum / n;
  Acc r = sum % n;
  if (r < 0) {  // floor division
    q -= 1;
    r += n;
  }
  if (2 * r > n || (2 * r == n && (q & 1) != 0)) q += 1;
  return q;
}

// What a mean sums in: doubles for floats; integers exactly (int64 holds 32
// items of up to 32 bits, 64-bit items need 128 bits).
template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double,
                                       std::conditional_t<sizeof(T) == 8, Int128, int64_t>>;

// Row by row: the source rows under a destination row are found once (the
// downsampled axes but the last, at most 2^4 rows present), then the last
// axis is one loop over them.
template <typename T>
void DownsampleAs(Downsampling method, const uint8_t* src, const std::vector<int64_t>& src_shape,
                  const std::vector<bool>& downsampled, uint8_t* dst) {
  using Acc = Accumulator<T>;
  const int n = static_cast<int>(src_shape.size());
  std::vector<int64_t> dst_shape(n), src_stride(n, 1);
  int64_t total = 1;
  for (int i = n - 1; i >= 0; --i) {
    if (i + 1 < n) src_stride[i] = src_stride[i + 1] * src_shape[i + 1];
    dst_shape[i] = downsampled[i] ? (src_shape[i] + 1) / 2 : src_shape[i];
    total *= dst_shape[i];
  }
  if (total == 0 || n == 0) return;
  const int last = n - 1;
  const int64_t width = dst_shape[last], src_width = src_shape[last];
  const bool down_last = downsampled[last];
  std::vector<int> axes;  // the downsampled ones but the last
  for (int i = 0; i < last; ++i) {
    if (downsampled[i]) axes.push_back(i);
  }
  const int corners = 1 << axes.size();
  std::vector<int64_t> index(static_cast<size_t>(last), 0);
  std::vector<const T*> rows;
  rows.reserve(static_cast<size_t>(corners));
  T* out = reinterpret_cast<T*>(dst);
  const T* in = reinterpret_cast<const T*>(src);
  for (int64_t row = 0; row < total / width; ++row) {
    int64_t base = 0;
    for (int i = 0; i < last; ++i)
      base += (downsampled[i] ? 2 * index[i] : index[i]) * src_stride[i];
    rows.clear();
    for (int m = 0; m < corners; ++m) {
      int64_t offset = base;
      bool present = true;
      for (size_t b = 0; b < axes.size() && present; ++b) {
        if (((m >> b) & 1) == 0) continue;
        const int a = axes[b];
        present = 2 * index[a] + 1 < src_shape[a];
        offset += src_stride[a];
      }
      if (present) rows.push_back(in + offset);
    }
    const Acc count = static_cast<Acc>(rows.size());
    for (int64_t j = 0; j < width; ++j) {
      const int64_t x = down_last ? 2 * j : j;
      if (method == Downsampling::kStride) {
        out[j] = rows[0][x];
        continue;
      }
      Acc sum = 0;
      Acc items = count;
      if (down_last && x + 1 < src_width) {
        for (const T* r : rows) sum += static_cast<Acc>(r[x]) + static_cast<Acc>(r[x + 1]);
        items = 2 * count;
      } else {
        for (const T* r : rows) sum += static_cast<Acc>(r[x]);
      }
      if constexpr (std::is_floating_point_v<T>) {
        out[j] = static_cast<T>(sum / static_cast<double>(items));
      } else {
        out[j] = static_cast<T>(RoundedQuotient<Acc>(sum, items));
      }
    }
    out += width;
    for (int i = last - 1; i >= 0; --i) {
      if (++index[i] < dst_shape[i]) break;
      index[i] = 0;
    }
  }
}

}  // namespace

Result<PyramidItem> PyramidItemOf(const std::string& npy_descr) {
  std::string d = npy_descr;
  if (d.size() >= 2 && d.front() == '\'' && d.back() == '\'') d = d.substr(1, d.size() - 2);
  if (d.size() < 3 || (d[0] != '<' && d[0] != '|' && d[0] != '=' && d[0] != '>')) {
    return Status(ENOTSUP, "items of dtype " + npy_descr + " are not numbers");
  }
  PyramidItem item{d[1], 0};
  const std::string digits = d.substr(2);
  if (digits.size() != 1 || digits[0] < '1' || digits[0] > '8') {
    return Status(ENOTSUP, "items of dtype " + d + " are not numbers");
  }
  item.size = digits[0] - '0';
  if (item.kind == 'b') return Status(ENOTSUP, "bool items have no mean");
  if (item.kind == 'c') return Status(ENOTSUP, "complex items have no single gray level");
  const bool integer = (item.kind == 'i' || item.kind == 'u') &&
                       (item.size == 1 || item.size == 2 || item.size == 4 || item.size == 8);
  const bool floating = item.kind == 'f' && (item.size == 4 || item.size == 8);
  if (item.kind == 'f' && item.size == 2) {
    return Status(ENOTSUP, "float16 items are not downsampled (no reader-side type in C++)");
  }
  if (!integer && !floating) return Status(ENOTSUP, "items of dtype " + d + " are not numbers");
  if (d[0] == '>' && item.size > 1) {
    return Status(ENOTSUP, "big-endian items are not downsampled");
  }
  return item;
}

std::vector<std::vector<int64_t>> PyramidShapes(const std::vector<int64_t>& shape,
                                                const std::vector<int64_t>& chunkshape,
                                                const std::vector<bool>& downsampled) {
  std::vector<std::vector<int64_t>> shapes{shape};
  while (static_cast<int>(shapes.size()) < kMaxPyramidLevels) {
    const std::vector<int64_t>& last = shapes.back();
    bool fits = true, shrinks = false;
    for (size_t i = 0; i < last.size(); ++i) {
      if (!downsampled[i]) continue;
      fits = fits && last[i] <= chunkshape[i];
      shrinks = shrinks || last[i] > 1;
    }
    if (fits || !shrinks) break;
    std::vector<int64_t> next = last;
    for (size_t i = 0; i < next.size(); ++i) {
      if (downsampled[i]) next[i] = (next[i] + 1) / 2;
    }
    shapes.push_back(std::move(next));
  }
  return shapes;
}

void Downsample(const PyramidItem& item, Downsampling method, const uint8_t* src,
                const std::vector<int64_t>& src_shape, const std::vector<bool>& downsampled,
                uint8_t* dst) {
  using Kernel = void (*)(Downsampling, const uint8_t*, const std::vector<int64_t>&,
                          const std::vector<bool>&, uint8_t*);
  struct Typed {
    char kind;
    int size;
    Kernel kernel;
  };
  // PyramidItemOf admits no other item.
  static constexpr Typed kKernels[] = {
      {'i', 1, DownsampleAs<int8_t>},   {'i', 2, DownsampleAs<int16_t>},
      {'i', 4, DownsampleAs<int32_t>},  {'i', 8, DownsampleAs<int64_t>},
      {'u', 1, DownsampleAs<uint8_t>},  {'u', 2, DownsampleAs<uint16_t>},
      {'u', 4, DownsampleAs<uint32_t>}, {'u', 8, DownsampleAs<uint64_t>},
      {'f', 4, DownsampleAs<float>},    {'f', 8, DownsampleAs<double>}};
  for (const Typed& typed : kKernels) {
    if (typed.kind == item.kind && typed.size == item.size) {
      return typed.kernel(method, src, src_shape, downsampled, dst);
    }
  }
}

std::vector<int64_t> PyramidPlan::BlockGrid(int level) const {
  std::vector<int64_t> grid = shapes[static_cast<size_t>(level)];
  for (size_t i = 0; i < grid.size(); ++i) grid[i] = (grid[i] + blockshape[i] - 1) / blockshape[i];
  return grid;
}

int64_t PyramidPlan::BlockBytes() const {
  return geometry::Box::FromShape(blockshape).NumItems() * itemsize;
}

}  // namespace b2ndfs::store
