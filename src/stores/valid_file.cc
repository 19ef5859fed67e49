#include "valid_file.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "b2ndfs/cache/cache_id.h"
#include "b2ndfs/store/container.h"

namespace b2ndfs::stores::internal {
namespace {

// A container opened for a valid file; its cached blocks go with it.
struct Opened {
  std::shared_ptr<const store::Container> container;
  store::StoreContext* context = nullptr;
  ~Opened() {
    if (container) context->cache->EraseContainer(container->cache_id());
  }
};

class ValidFile final : public source::PlainFile {
 public:
  ValidFile(std::shared_ptr<const ValidFileSpec> spec, std::unique_ptr<Opened> column,
            std::unique_ptr<Opened> valid_rows, source::Signature version)
      : spec_(std::move(spec)),
        column_(std::move(column)),
        valid_rows_(std::move(valid_rows)),
        version_(std::move(version)) {}

  const source::Signature& version() const override { return version_; }

  Result<size_t> ReadUpTo(int64_t offset, uint8_t* out, size_t length) const override {
    if (offset < 0) return Status(EINVAL, "negative offset");
    const int64_t size = spec_->size();
    if (offset >= size) return size_t{0};
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(length), size - offset);
    const std::string& header = spec_->header;
    const int64_t hlen = static_cast<int64_t>(header.size());
    if (offset < hlen) {
      std::memcpy(out, header.data() + offset, static_cast<size_t>(std::min(n, hlen - offset)));
    }
    const int64_t data_begin = std::max(offset, hlen) - hlen;
    const int64_t data_end = offset + n - hlen;
    if (data_end > data_begin) {
      const int64_t rb = spec_->row_bytes;
      const int64_t k0 = data_begin / rb;
      const int64_t k1 = (data_end + rb - 1) / rb;
      std::vector<uint8_t> rows(static_cast<size_t>((k1 - k0) * rb));
      B2NDFS_RETURN_IF_ERROR(Gather(k0, k1, rows.data()));
      std::memcpy(out + (std::max(offset, hlen) - offset), rows.data() + (data_begin - k0 * rb),
                  static_cast<size_t>(data_end - data_begin));
    }
    return static_cast<size_t>(n);
  }

 private:
  Status Inconsistent() const {
    return Status(EIO, column_->container->name() +
                           ": its table changed since it was listed (live rows disagree)");
  }

  // Live rows [k0, k1) of the column into `dst`, in row order.
  Status Gather(int64_t k0, int64_t k1, uint8_t* dst) const {
    const std::vector<int64_t>& before = *spec_->live_before;
    const int64_t segments = static_cast<int64_t>(before.size()) - 1;
    // The last segment with fewer than k0 + 1 live rows before it.
    int64_t s = std::upper_bound(before.begin(), before.end(), k0) - before.begin() - 1;
    std::vector<uint8_t> flags;
    std::vector<int64_t> wanted;  // physical rows of live rows k .. in this segment
    for (int64_t k = before[static_cast<size_t>(s)]; k < k1; ++s) {
      if (s < 0 || s >= segments) return Inconsistent();
      const int64_t r0 = s * kSegmentRows;
      const int64_t r1 = std::min(spec_->rows, r0 + kSegmentRows);
      flags.resize(static_cast<size_t>(r1 - r0));
      B2NDFS_RETURN_IF_ERROR(
          valid_rows_->container->ReadArrayBox(geometry::Box{{r0}, {r1}}, flags.data()));
      wanted.clear();
      const int64_t first_k = std::max(k, k0);
      int64_t count = 0;
      for (int64_t r = r0; r < r1; ++r) {
        if (flags[static_cast<size_t>(r - r0)] == 0) continue;
        const int64_t at = k + count++;
        if (at >= first_k && at < k1) wanted.push_back(r);
      }
      if (count != before[static_cast<size_t>(s) + 1] - before[static_cast<size_t>(s)]) {
        return Inconsistent();
      }
      B2NDFS_RETURN_IF_ERROR(ReadRows(wanted, dst + (first_k - k0) * spec_->row_bytes));
      k += count;
    }
    return Status::Ok();
  }

  // The column's rows `rows` (ascending) one after another into `dst`, read
  // in windows of at most kColumnWindowBytes.
  Status ReadRows(const std::vector<int64_t>& rows, uint8_t* dst) const {
    const int64_t rb = spec_->row_bytes;
    const int64_t window = std::max<int64_t>(1, kColumnWindowBytes / rb);
    const geometry::Shape& shape = column_->container->layout().shape();
    std::vector<uint8_t> buffer;
    for (size_t i = 0; i < rows.size();) {
      size_t j = i;
      while (j + 1 < rows.size() && rows[j + 1] < rows[i] + window) ++j;
      geometry::Box box = geometry::Box::FromShape(shape);
      box.start[0] = rows[i];
      box.stop[0] = rows[j] + 1;
      buffer.resize(static_cast<size_t>((box.stop[0] - box.start[0]) * rb));
      B2NDFS_RETURN_IF_ERROR(column_->container->ReadArrayBox(box, buffer.data()));
      for (size_t t = i; t <= j; ++t) {
        std::memcpy(dst + static_cast<int64_t>(t) * rb, buffer.data() + (rows[t] - rows[i]) * rb,
                    static_cast<size_t>(rb));
      }
      i = j + 1;
    }
    return Status::Ok();
  }

  const std::shared_ptr<const ValidFileSpec> spec_;
  const std::unique_ptr<Opened> column_;
  const std::unique_ptr<Opened> valid_rows_;
  const source::Signature version_;
};

Result<std::unique_ptr<Opened>> OpenLeaf(std::shared_ptr<const source::ByteSource> source,
                                         store::StoreContext* context, int64_t rows,
                                         int64_t row_bytes) {
  auto opened = std::make_unique<Opened>();
  opened->context = context;
  opened->container =
      store::Container::Open(std::move(source), context, cache::NewCacheId(), nullptr);
  const store::Container& c = *opened->container;
  if (!c.ok()) return Status(EIO, c.name() + ": " + c.error());
  const geometry::Shape& shape = c.layout().shape();
  int64_t bytes = c.layout().itemsize();
  for (size_t a = 1; a < shape.size(); ++a) bytes *= shape[a];
  if (shape.empty() || shape[0] != rows || bytes != row_bytes) {
    return Status(EIO, c.name() + ": changed since its table was listed");
  }
  return opened;
}

}  // namespace

Result<std::shared_ptr<const source::PlainFile>> OpenValidFile(
    std::shared_ptr<const ValidFileSpec> spec, std::shared_ptr<const source::ByteSource> column,
    std::shared_ptr<const source::ByteSource> valid_rows, store::StoreContext* context,
    source::Signature version) {
  if (context == nullptr || context->cache == nullptr) {
    return Status(EIO, "valid rows files need the mount's decoders");
  }
  B2NDFS_ASSIGN_OR_RETURN(std::unique_ptr<Opened> c,
                          OpenLeaf(std::move(column), context, spec->rows, spec->row_bytes));
  B2NDFS_ASSIGN_OR_RETURN(std::unique_ptr<Opened> v,
                          OpenLeaf(std::move(valid_rows), context, spec->rows, 1));
  return std::shared_ptr<const source::PlainFile>(
      std::make_shared<ValidFile>(std::move(spec), std::move(c), std::move(v), std::move(version)));
}

}  // namespace b2ndfs::stores::internal
