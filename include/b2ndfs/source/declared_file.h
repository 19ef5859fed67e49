// source/declared_file: a file a tree shows but does not read itself; the
// mount (vfs) computes its bytes from containers of the same tree, opened
// as the mount opens any container (its generations). One kind: a CTable's
// valid/NAME.npy (README.md, "python-blosc2 stores"): a .npy header, then
// the rows of a column container at the rows that a _valid_rows container
// (one bool per physical row) marks live, in row order.
// Tree::OpenFile() returns it; read by itself (without a mount that decodes
// containers) it answers EIO. Who may read it is the tree's Stat() answer
// (whoever may read both containers).
// Thread-safety: immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/source/tree.h"

namespace b2ndfs::source {

// Live rows are counted per segment of this many physical rows, so that a
// read finds where its rows lie by looking at one segment of _valid_rows.
constexpr int64_t kSegmentRows = int64_t{1} << 16;

// What a valid/NAME.npy's size and reads need.
struct RowSelection {
  std::string column;      // the column's leaf, below its store ("t/_cols/x")
  std::string valid_rows;  // the table's _valid_rows leaf ("t/_valid_rows")
  std::string header;      // the .npy header: shape (live rows, column's other axes)
  int64_t rows = 0;        // physical rows (of _valid_rows and of the column)
  int64_t live = 0;        // live rows
  int64_t row_bytes = 0;   // bytes of one row of the column
  // live_before[s]: live rows before physical row s * kSegmentRows (one more
  // entry than segments; the last is `live`).
  std::shared_ptr<const std::vector<int64_t>> live_before;
  int64_t size() const { return static_cast<int64_t>(header.size()) + live * row_bytes; }
};

class DeclaredFile final : public PlainFile {
 public:
  // `column` and `valid_rows` are container paths as the tree names them;
  // `version` is the declaring index's.
  DeclaredFile(std::string column, std::string valid_rows,
               std::shared_ptr<const RowSelection> selection, Signature version)
      : column_(std::move(column)),
        valid_rows_(std::move(valid_rows)),
        selection_(std::move(selection)),
        version_(std::move(version)) {}
  const std::string& column() const { return column_; }
  const std::string& valid_rows() const { return valid_rows_; }
  const std::shared_ptr<const RowSelection>& selection() const { return selection_; }
  const Signature& version() const override { return version_; }
  // EIO: the bytes are the mount's to compute (declared_file.cc).
  Result<size_t> ReadUpTo(int64_t offset, uint8_t* out, size_t length) const override;

 private:
  const std::string column_;
  const std::string valid_rows_;
  const std::shared_ptr<const RowSelection> selection_;
  const Signature version_;
};

}  // namespace b2ndfs::source
