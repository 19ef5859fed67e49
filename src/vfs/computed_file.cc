#include "computed_file.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "b2ndfs/store/container.h"

namespace b2ndfs::vfs {
namespace {

using source::kSegmentRows;
using source::RowSelection;

// A leaf opened for the file: its generation (which keeps its cached
// blocks), its container, and the hold an open file of it keeps
// (Generation::Hold: the source keeps the version read).
struct Leaf {
  std::shared_ptr<Generation> generation;
  std::shared_ptr<const store::Container> container;
  std::shared_ptr<const void> hold;
};

class SelectedRowsFile final : public source::PlainFile {
 public:
  SelectedRowsFile(std::shared_ptr<const RowSelection> spec, Leaf column, Leaf valid_rows,
                   source::Signature version)
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
    return Status(EIO, column_.container->name() +
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
          valid_rows_.container->ReadArrayBox(geometry::Box{{r0}, {r1}}, flags.data()));
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
    const geometry::Shape& shape = column_.container->layout().shape();
    std::vector<uint8_t> buffer;
    for (size_t i = 0; i < rows.size();) {
      size_t j = i;
      while (j + 1 < rows.size() && rows[j + 1] < rows[i] + window) ++j;
      geometry::Box box = geometry::Box::FromShape(shape);
      box.start[0] = rows[i];
      box.stop[0] = rows[j] + 1;
      buffer.resize(static_cast<size_t>((box.stop[0] - box.start[0]) * rb));
      B2NDFS_RETURN_IF_ERROR(column_.container->ReadArrayBox(box, buffer.data()));
      for (size_t t = i; t <= j; ++t) {
        std::memcpy(dst + static_cast<int64_t>(t) * rb, buffer.data() + (rows[t] - rows[i]) * rb,
                    static_cast<size_t>(rb));
      }
      i = j + 1;
    }
    return Status::Ok();
  }

  const std::shared_ptr<const RowSelection> spec_;
  const Leaf column_;
  const Leaf valid_rows_;
  const source::Signature version_;
};

// The leaf at `path` as the mount opens it (its current generation), and
// whether it agrees with the declaration (EIO, unwrapped, when not).
Result<Leaf> OpenLeaf(const EntryFinder& entries, const std::string& path, int64_t rows,
                      int64_t row_bytes, Status* disagrees) {
  Leaf leaf;
  B2NDFS_ASSIGN_OR_RETURN(leaf.generation, entries(path)->Current());
  B2NDFS_ASSIGN_OR_RETURN(leaf.container, leaf.generation->Container());
  leaf.hold = leaf.generation->Hold();
  const store::Container& c = *leaf.container;
  if (!c.ok()) {
    *disagrees = Status(EIO, c.name() + ": " + c.error());
    return leaf;
  }
  const geometry::Shape& shape = c.layout().shape();
  int64_t bytes = c.layout().itemsize();
  for (size_t a = 1; a < shape.size(); ++a) bytes *= shape[a];
  if (shape.empty() || shape[0] != rows || bytes != row_bytes) {
    *disagrees = Status(EIO, c.name() + ": changed since its table was listed");
  }
  return leaf;
}

// What the file's version adds of a leaf's (its generation's signature).
void AddVersion(const source::Signature& s, source::Signature* version) {
  version->tag += "|" + std::to_string(s.inode) + ":" + std::to_string(s.size) + ":" +
                  std::to_string(s.mtime_ns) + ":" + std::to_string(s.ctime_ns) + ":" + s.tag;
}

}  // namespace

Result<std::shared_ptr<const source::PlainFile>> OpenComputedFile(
    const source::DeclaredFile& declared, const std::string& path, store::StoreContext* context,
    const EntryFinder& entries) {
  if (context == nullptr || context->cache == nullptr) {
    return Status(EIO, "valid rows files need the mount's decoders").WithContext(path);
  }
  const std::shared_ptr<const RowSelection>& spec = declared.selection();
  Status column_disagrees, valid_rows_disagrees;
  B2NDFS_ASSIGN_OR_RETURN(Leaf column, OpenLeaf(entries, declared.column(), spec->rows,
                                                spec->row_bytes, &column_disagrees));
  B2NDFS_ASSIGN_OR_RETURN(Leaf valid_rows, OpenLeaf(entries, declared.valid_rows(), spec->rows, 1,
                                                    &valid_rows_disagrees));
  if (!column_disagrees.ok()) return column_disagrees.WithContext(path);
  if (!valid_rows_disagrees.ok()) return valid_rows_disagrees.WithContext(path);
  source::Signature version = declared.version();
  AddVersion(column.generation->signature(), &version);
  AddVersion(valid_rows.generation->signature(), &version);
  return std::shared_ptr<const source::PlainFile>(std::make_shared<SelectedRowsFile>(
      spec, std::move(column), std::move(valid_rows), std::move(version)));
}

}  // namespace b2ndfs::vfs
