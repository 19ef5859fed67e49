// Private to stores: python-blosc2's CTable inside a store (ctable_storage.py:
// a table root holds "_meta", an SChunk whose vlmeta say kind "ctable",
// version and schema (a JSON text); "_valid_rows", a 1-D bool NDArray of
// the physical rows, True where a row is live; "_cols/NAME", one array per
// column, NAME's dots as path separators and its literal ".", "/", "\" and
// "%" percent-encoded; companions "NAME.utf8" (a UTF-8 column's bytes) and
// "NAME.notnull" (a nullable column's validity)). The table's directory gets
// a columns.json: its columns (name, path, dtype, shape), the rows, the live
// rows, and the schema as written.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "b2ndfs/stores/embed_frame.h"
#include "store_index.h"

namespace b2ndfs::stores::internal {

// Live rows are counted up to this many physical rows (more: "valid_rows"
// is null and says why).
constexpr int64_t kMaxCountedRows = int64_t{1} << 28;

struct FrameRef {
  FrameReadAt read;
  int64_t size = 0;
};
// The frame of the leaf at `path` (below the store); nullopt: no such leaf.
using LeafFrames = std::function<std::optional<FrameRef>(const std::string& path)>;

// columns.json of directory `dir` of the index, or nullopt when `dir` is not
// a CTable's root (no "_meta" leaf whose kind is "ctable"). What is wrong
// inside a table is said in the document, never an error.
std::optional<std::string> CTableColumnsJson(const StoreIndex& index, const std::string& dir,
                                             const LeafFrames& frames);

}  // namespace b2ndfs::stores::internal
