// view/EXPR and view/EXPR.npy: any NumPy basic-indexing hyperslab by name.
// view/ itself is listed (so that `ls` and tab completion find it), its
// contents never are (their names are unbounded), so its files take no
// ordinals. A hyperslab without steps is a box of the
// array and streams like any other file; one with steps or reversed axes is
// gathered: only the array rows it selects are read (skipped rows and planes
// never are), and along the last axis only the blocks holding selected items.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

#include "b2ndfs/format/npy_header.h"
#include "b2ndfs/util/log.h"
#include "index_expr.h"
#include "kinds.h"

namespace b2ndfs::views {
namespace {

constexpr std::string_view kNpySuffix = ".npy";
// Refused view/ names logged at info, at most, in a minute.
constexpr int kRefusedPerMinute = 10;
// Array bytes one gather reads at once: bounds the scratch buffer whatever
// the steps (a long step along the last axis makes covering boxes sparse).
constexpr int64_t kMaxScratchBytes = int64_t{1} << 20;

geometry::Box SelectionGrid(const Hyperslab& slab) {
  geometry::Shape counts;
  for (const AxisSelection& a : slab.axes) counts.push_back(a.count);
  return geometry::Box::FromShape(counts);
}

// A hyperslab with steps or reversed axes. Output coordinates are indices
// into the selection grid (every array axis, dropped ones with count 1),
// whose C order is the file's byte order.
class HyperslabFile : public Node {
 public:
  HyperslabFile(std::string name, std::string header, Hyperslab slab)
      : Node(std::move(name), kNoOrdinal),
        header_(std::move(header)),
        slab_(std::move(slab)),
        grid_(SelectionGrid(slab_)) {
    grid_strides_.assign(slab_.axes.size(), 1);
    for (size_t d = slab_.axes.size(); d-- > 1;) {
      grid_strides_[d - 1] = grid_strides_[d] * slab_.axes[d].count;
    }
  }
  bool IsDirectory() const override { return false; }

  int64_t Size(const store::Container& c) const override {
    return static_cast<int64_t>(header_.size()) + slab_.NumItems() * c.layout().itemsize();
  }

  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override {
    store::GlobalReadStats().reads++;
    if (offset < 0) return InvalidArgument("negative offset");
    const int64_t size = Size(c);
    if (offset >= size || length == 0) return size_t{0};
    const size_t n =
        static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(length), size - offset));
    const int64_t header = static_cast<int64_t>(header_.size());
    size_t done = 0;
    if (offset < header) {
      done = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(n), header - offset));
      std::memcpy(out, header_.data() + offset, done);
    }
    Status status;
    if (done < n) {
      try {
        status = ReadBody(c, offset + static_cast<int64_t>(done) - header, n - done, out + done);
      } catch (const std::bad_alloc&) {
        status = Status(ENOMEM, "out of memory");
      }
    }
    if (!status.ok()) {
      store::GlobalReadStats().read_errors++;
      LogOnce("read:" + c.name(), LogLevel::kError,
              c.name() + ": view/" + name() + ": " + status.message());
      return Status(status.error_number() == ENOMEM ? ENOMEM : EIO,
                    c.name() + ": " + status.message());
    }
    store::GlobalReadStats().bytes_served += n;
    return n;
  }

 private:
  // What one Read needs while it gathers.
  struct Gathering {
    const store::Container* container;
    int64_t itemsize;
    int64_t first_item;  // output item at dst
    uint8_t* dst;
    std::vector<uint8_t> scratch;
  };

  Status ReadBody(const store::Container& c, int64_t offset, size_t length, uint8_t* out) const {
    const int64_t itemsize = c.layout().itemsize();
    const int64_t len = static_cast<int64_t>(length);
    const int64_t first = offset / itemsize;
    const int64_t last = (offset + len + itemsize - 1) / itemsize;
    const bool aligned = offset % itemsize == 0 && len % itemsize == 0;
    std::vector<uint8_t> partial;  // whole items, when the range cuts one
    if (!aligned) partial.resize(static_cast<size_t>((last - first) * itemsize));
    Gathering g{&c, itemsize, first, aligned ? out : partial.data(), {}};
    for (const geometry::Box& part : geometry::LinearRangeToBoxes(grid_, first, last)) {
      B2NDFS_RETURN_IF_ERROR(Gather(part, g));
    }
    if (!aligned) std::memcpy(out, partial.data() + (offset - first * itemsize), length);
    return Status::Ok();
  }

  // The array box holding every item that output box `part` selects.
  geometry::Box Cover(const geometry::Box& part) const {
    geometry::Box cover = part;
    for (int d = 0; d < part.ndim(); ++d) {
      const AxisSelection& a = slab_.axes[d];
      const int64_t i0 = a.start + part.start[d] * a.step;
      const int64_t i1 = a.start + (part.stop[d] - 1) * a.step;
      cover.start[d] = std::min(i0, i1);
      cover.stop[d] = std::max(i0, i1) + 1;
    }
    return cover;
  }

  Status Gather(const geometry::Box& part, Gathering& g) const {
    if (part.empty()) return Status::Ok();
    const int last = part.ndim() - 1;
    // Stepped axes other than the last: one index at a time, so that the
    // rows and planes between selected ones are never decompressed.
    for (int d = 0; d < last; ++d) {
      if (part.stop[d] - part.start[d] > 1 && std::abs(slab_.axes[d].step) > 1) {
        geometry::Box one = part;
        for (int64_t j = part.start[d]; j < part.stop[d]; ++j) {
          one.start[d] = j;
          one.stop[d] = j + 1;
          B2NDFS_RETURN_IF_ERROR(Gather(one, g));
        }
        return Status::Ok();
      }
    }
    const AxisSelection& inner = slab_.axes[last];
    if (std::abs(inner.step) == 1 || part.stop[last] - part.start[last] < 2) {
      return GatherBox(part, g);
    }
    // A step along the last axis: one read per run of selected items that
    // fall in the same block, so that blocks the step jumps over stay
    // compressed. Block edges along the last axis are the same on every row.
    const geometry::Box cover = Cover(part);
    geometry::Box row = cover;
    for (int d = 0; d < last; ++d) row.stop[d] = row.start[d] + 1;
    std::vector<int64_t> ends;  // exclusive ends of the blocks along the row
    g.container->layout().ForEachBlockIn(
        row, [&](const geometry::BlockRef&, const geometry::Box& region) {
          ends.push_back(region.stop[last]);
        });
    std::sort(ends.begin(), ends.end());
    geometry::Box run = part;
    for (int64_t j = part.start[last]; j < part.stop[last];) {
      const int64_t i = inner.start + j * inner.step;
      const auto end = std::upper_bound(ends.begin(), ends.end(), i);
      if (end == ends.end()) return InvalidData("view/" + name() + ": item outside its blocks");
      const int64_t block_start = end == ends.begin() ? cover.start[last] : *(end - 1);
      const int64_t more =
          inner.step > 0 ? (*end - 1 - i) / inner.step : (i - block_start) / -inner.step;
      run.start[last] = j;
      run.stop[last] = std::min(part.stop[last], j + more + 1);
      B2NDFS_RETURN_IF_ERROR(GatherBox(run, g));
      j = run.stop[last];
    }
    return Status::Ok();
  }

  // Reads the box covering `part` (in pieces when large) and copies out.
  Status GatherBox(const geometry::Box& part, Gathering& g) const {
    const geometry::Box cover = Cover(part);
    if (cover.NumItems() * g.itemsize > kMaxScratchBytes) {
      for (int d = 0; d < part.ndim(); ++d) {
        const int64_t extent = part.stop[d] - part.start[d];
        if (extent < 2) continue;
        geometry::Box low = part, high = part;
        low.stop[d] = high.start[d] = part.start[d] + extent / 2;
        B2NDFS_RETURN_IF_ERROR(GatherBox(low, g));
        return GatherBox(high, g);
      }
      // A single item larger than the budget: read it anyway.
    }
    g.scratch.resize(static_cast<size_t>(cover.NumItems() * g.itemsize));
    B2NDFS_RETURN_IF_ERROR(g.container->ReadArrayBox(cover, g.scratch.data()));
    CopyOut(part, cover, g);
    return Status::Ok();
  }

  // Copies the selected items of `cover` (in g.scratch) to their places in
  // the output, row by row along the last axis.
  void CopyOut(const geometry::Box& part, const geometry::Box& cover, Gathering& g) const {
    const int ndim = part.ndim();
    const int last = ndim - 1;
    std::vector<int64_t> cover_strides(ndim, 1);
    for (int d = last; d > 0; --d) {
      cover_strides[d - 1] = cover_strides[d] * (cover.stop[d] - cover.start[d]);
    }
    const AxisSelection& inner = slab_.axes[last];
    const int64_t row = part.stop[last] - part.start[last];
    const size_t itemsize = static_cast<size_t>(g.itemsize);
    std::vector<int64_t> o = part.start;
    while (true) {
      int64_t src = 0, dst = -g.first_item;
      for (int d = 0; d < ndim; ++d) {
        const AxisSelection& a = slab_.axes[d];
        src += (a.start + o[d] * a.step - cover.start[d]) * cover_strides[d];
        dst += o[d] * grid_strides_[d];
      }
      const uint8_t* s = g.scratch.data() + src * g.itemsize;
      uint8_t* t = g.dst + dst * g.itemsize;
      if (inner.step == 1) {
        std::memcpy(t, s, static_cast<size_t>(row) * itemsize);
      } else {
        for (int64_t j = 0; j < row; ++j) {
          std::memcpy(t + j * g.itemsize, s + j * inner.step * g.itemsize, itemsize);
        }
      }
      int d = last - 1;
      for (; d >= 0; --d) {
        if (++o[d] < part.stop[d]) break;
        o[d] = part.start[d];
      }
      if (d < 0) return;
    }
  }

  const std::string header_;
  const Hyperslab slab_;
  const geometry::Box grid_;
  std::vector<int64_t> grid_strides_;  // items per step along each grid axis
};

class ViewDir : public Node {
 public:
  explicit ViewDir(uint64_t ordinal) : Node("view", ordinal) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    if (!c.ok()) return NotFound(name);
    std::string_view expr = name;
    const bool npy = expr.size() > kNpySuffix.size() && expr.ends_with(kNpySuffix);
    if (npy) expr.remove_suffix(kNpySuffix.size());
    auto slab = ParseIndexExpr(expr, c.layout().shape());
    if (!slab.ok()) {
      // A person who mistyped an expression learns why here; shells and file
      // managers that probe names must not flood the log (README.md,
      // "view/EXPR"), so at most kRefusedPerMinute a minute reach info.
      static LogRateLimit limit(kRefusedPerMinute, int64_t{60} * 1000000000);
      uint64_t suppressed = 0;
      if (limit.Allow(&suppressed)) {
        Log(LogLevel::kInfo, c.name() + ": " + slab.status().message() +
                                 (suppressed > 0 ? " (and " + std::to_string(suppressed) +
                                                       " more refused names not logged)"
                                                 : ""));
      } else if (GetLogLevel() == LogLevel::kDebug) {
        Log(LogLevel::kDebug, c.name() + ": " + slab.status().message());
      }
      return slab.status();
    }
    std::string header =
        npy ? format::NpyHeader(c.npy_descr(), slab->ResultShape()) : std::string();
    const bool is_box = std::all_of(slab->axes.begin(), slab->axes.end(),
                                    [](const AxisSelection& a) { return a.step == 1; });
    if (is_box) {
      geometry::Box box = geometry::Box::FromShape(c.layout().shape());
      for (size_t d = 0; d < slab->axes.size(); ++d) {
        box.start[d] = slab->axes[d].start;
        box.stop[d] = slab->axes[d].start + slab->axes[d].count;
      }
      return std::shared_ptr<const Node>(std::make_shared<StreamFile>(
          name, kNoOrdinal, store::ArrayStream{std::move(header), std::move(box)}));
    }
    return std::shared_ptr<const Node>(
        std::make_shared<HyperslabFile>(name, std::move(header), std::move(*slab)));
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container&) const override {
    return MakeListing(0, [](size_t) { return ListEntry{}; });
  }
};

class ViewEntry : public RootEntry {
 public:
  std::vector<ListEntry> Names(const store::Container& c, uint64_t base) const override {
    if (!c.ok()) return {};
    return {ListEntry{"view", true, base}};
  }
  // view/ itself; the names below it have none.
  uint64_t OrdinalCount(const store::Container& c) const override { return c.ok() ? 1 : 0; }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name != "view" || !c.ok()) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<ViewDir>(base));
  }
  // view/EXPR can be anything up to the whole array: described as view/...
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    const auto& layout = c.layout();
    out->push_back({"view", layout.shape(), layout.NumItems() * layout.itemsize()});
  }
};

}  // namespace

std::unique_ptr<RootEntry> MakeViewEntry() { return std::make_unique<ViewEntry>(); }

}  // namespace b2ndfs::views
