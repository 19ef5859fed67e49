// Private to stores: python-blosc2's CTable inside a store (ctable_storage.py
// at 058e126, lines 399-501 for the keys and companions below:
// a table root holds "_meta", an SChunk whose vlmeta say kind "ctable",
// version and schema (a JSON text); "_valid_rows", a 1-D bool NDArray of
// the physical rows, True where a row is live; "_cols/NAME", one array per
// column, NAME's dots as path separators and its literal ".", "/", "\" and
// "%" percent-encoded; companions "NAME.utf8" (a UTF-8 column's bytes) and
// "NAME.notnull" (a nullable column's validity)). The table's directory gets
// a columns.json: its columns (name, path, dtype, shape), the rows, the live
// rows, and the schema as written; and a directory valid/ holding, for each
// column of fixed-width values (numeric, bool, fixed-width strings and
// bytes), valid/NAME.npy: the column's values at the live rows, in row
// order (README.md, "python-blosc2 stores"). Its size is known from the
// live rows counted here; its bytes are computed when the mount opens it
// (source/declared_file.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/stores/embed_frame.h"
#include "index_types.h"

namespace b2ndfs::stores::internal {

// Live rows are counted up to this many physical rows (more: "valid_rows"
// is null and says why).
constexpr int64_t kMaxCountedRows = int64_t{1} << 28;
// Live rows are counted per segment of source::kSegmentRows physical rows
// (source/declared_file.h), at most kMaxCountedRows / kSegmentRows + 1
// counts a table.
using source::kSegmentRows;
// A valid/NAME.npy row (an item, or a row of a column of more dimensions) is
// at most this long.
constexpr int64_t kMaxValidRowBytes = int64_t{1} << 20;

struct FrameRef {
  FrameReadAt read;
  int64_t size = 0;
};
// The frame of the leaf at `path` (below the store); nullopt: no such leaf.
using LeafFrames = std::function<std::optional<FrameRef>(const std::string& path)>;

struct CTableFiles {
  std::string columns_json;
  // By file name below valid/ ("x.npy"; a nested column "pos/z": "pos.z.npy").
  std::vector<std::pair<std::string, std::shared_ptr<const ValidFileSpec>>> valid_files;
};

// columns.json and valid/ of directory `dir` of the index, or nullopt when
// `dir` is not a CTable's root (no "_meta" leaf whose kind is "ctable").
// What is wrong inside a table is said in columns.json, never an error.
std::optional<CTableFiles> CTableColumns(const StoreIndex& index, const std::string& dir,
                                         const LeafFrames& frames);

// The file name below valid/ of the column at `rel` below _cols ("pos/z":
// "pos.z.npy").
std::string ValidFileName(const std::string& rel);

}  // namespace b2ndfs::stores::internal
