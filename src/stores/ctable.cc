#include "ctable.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/format/dtype.h"
#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/meta_json.h"
#include "b2ndfs/format/ndmeta.h"
#include "b2ndfs/format/npy_header.h"
#include "b2ndfs/format/vlen.h"
#include "b2ndfs/util/checked_math.h"
#include "b2ndfs/util/json.h"

namespace b2ndfs::stores::internal {
namespace {

constexpr int64_t kMaxChunkBytes = int64_t{64} << 20;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::optional<format::NdMeta> ArrayMeta(const format::FrameInfo& info) {
  for (const auto& m : info.metalayers) {
    if (m.name != "b2nd") continue;
    auto nd = format::DecodeB2ndMetalayer(m.content);
    if (nd.ok()) return std::move(nd).value();
  }
  return std::nullopt;
}

std::string ShapeJson(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The physical and live rows of a _valid_rows array (1-D, 1-byte items):
// its chunks decompressed one at a time, their True bytes counted.
struct Rows {
  int64_t rows = -1;
  int64_t valid = -1;
  std::string error;                                  // why valid is unknown
  std::shared_ptr<std::vector<int64_t>> live_before;  // ValidFileSpec's; set with valid
};

Rows CountRows(const FrameRef& frame) {
  Rows out;
  auto info = format::ParseFrame(frame.read, frame.size);
  if (!info.ok()) return Rows{-1, -1, info.status().message()};
  auto nd = ArrayMeta(*info);
  if (!nd || nd->ndim != 1) return Rows{-1, -1, "_valid_rows is not a 1-D NDArray"};
  out.rows = nd->shape[0];
  if (info->typesize != 1) {
    out.error = "_valid_rows has items of " + std::to_string(info->typesize) + " bytes, not bools";
    return out;
  }
  if (out.rows > kMaxCountedRows) {
    out.error = "more than " + std::to_string(kMaxCountedRows) + " rows are not counted";
    return out;
  }
  const int64_t chunk_items = nd->chunkshape[0];
  if (chunk_items <= 0 || chunk_items > kMaxChunkBytes) {
    out.error = "_valid_rows has chunks of " + std::to_string(chunk_items) + " items";
    return out;
  }
  const int64_t nchunks = (out.rows + chunk_items - 1) / chunk_items;
  const int64_t segments = (out.rows + kSegmentRows - 1) / kSegmentRows;
  // Live rows per segment first, summed into live_before at the end.
  auto live = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(segments) + 1, 0);
  if (out.rows == 0) {
    out.valid = 0;
    out.live_before = std::move(live);
    return out;
  }
  if (info->nchunks != nchunks) {
    out.error = "_valid_rows holds " + std::to_string(info->nchunks) + " chunks, not " +
                std::to_string(nchunks);
    return out;
  }
  auto index_chunk = frame.read(info->offsets_chunk_position, info->offsets_chunk_size);
  if (!index_chunk.ok()) return Rows{out.rows, -1, index_chunk.status().message()};
  codec::Decompressor d;
  std::vector<uint8_t> raw(static_cast<size_t>(nchunks * 8));
  auto ci = codec::InspectChunk(*index_chunk);
  if (!ci.ok() || ci->nbytes != nchunks * 8) return Rows{out.rows, -1, "bad chunk index"};
  if (Status s = d.DecompressAll(*index_chunk, raw); !s.ok())
    return Rows{out.rows, -1, s.message()};
  int64_t valid = 0;
  std::vector<uint8_t> items;
  for (int64_t i = 0; i < nchunks; ++i) {
    int64_t value;
    std::memcpy(&value, raw.data() + i * 8, 8);
    auto at = format::LocateChunk(*info, value);
    if (!at.ok()) return Rows{out.rows, -1, at.status().message()};
    if (at->kind != format::ChunkKind::kStored) continue;  // zeros: no live row
    auto header = frame.read(at->offset, codec::kChunkHeaderSize);
    if (!header.ok()) return Rows{out.rows, -1, header.status().message()};
    auto hi = codec::InspectChunkHeader(*header);
    if (!hi.ok()) return Rows{out.rows, -1, hi.status().message()};
    if (hi->nbytes != chunk_items || hi->cbytes > frame.size - at->offset) {
      return Rows{out.rows, -1, "_valid_rows chunk " + std::to_string(i) + " of the wrong size"};
    }
    auto chunk = frame.read(at->offset, hi->cbytes);
    if (!chunk.ok()) return Rows{out.rows, -1, chunk.status().message()};
    items.resize(static_cast<size_t>(chunk_items));
    if (Status s = d.DecompressAll(*chunk, items); !s.ok()) return Rows{out.rows, -1, s.message()};
    const int64_t n = std::min(chunk_items, out.rows - i * chunk_items);
    for (int64_t j = 0; j < n;) {
      const int64_t row = i * chunk_items + j;
      const int64_t seg_end = std::min(n, j + kSegmentRows - row % kSegmentRows);
      const int64_t c = std::count_if(items.begin() + j, items.begin() + seg_end,
                                      [](uint8_t b) { return b != 0; });
      (*live)[static_cast<size_t>(row / kSegmentRows) + 1] += c;
      valid += c;
      j = seg_end;
    }
  }
  for (size_t s = 1; s < live->size(); ++s) (*live)[s] += (*live)[s - 1];
  out.valid = valid;
  out.live_before = std::move(live);
  return out;
}

// A column's logical name from its path below _cols (ctable_storage.py at
// 058e126, _column_name_to_relpath, line 451, and join_field_path, 433): segments percent-decoded,
// then joined with "." after escaping "\", "." and "/" with a backslash.
std::string ColumnName(const std::string& rel) {
  std::string out;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    if (!out.empty() || start > 0) out += '.';
    for (size_t i = start; i < end; ++i) {
      char c = rel[i];
      if (c == '%' && i + 2 < end) {
        const std::string hex = rel.substr(i + 1, 2);
        char decoded = hex == "25"   ? '%'
                       : hex == "2F" ? '/'
                       : hex == "2E" ? '.'
                       : hex == "5C" ? '\\'
                                     : 0;
        if (decoded != 0) {
          c = decoded;
          i += 2;
        }
      }
      if (c == '\\' || c == '.' || c == '/') out += '\\';
      out += c;
    }
    start = end + 1;
  }
  return out;
}

// What valid/NAME.npy of a column would be, or why there is none.
struct ValidPlan {
  std::shared_ptr<ValidFileSpec> spec;
  std::string absent;
};

// Column kinds whose items are whole values of a fixed width (NumPy kinds).
bool FixedWidthKind(const std::string& descr) {
  // Simple descrs are quoted type strings: "'<f8'", "'|b1'", "'<U8'".
  if (descr.size() < 4 || descr[0] != '\'') return false;
  return std::string("biufcSUMm").find(descr[2]) != std::string::npos;
}

ValidPlan PlanValidFile(const format::FrameInfo& info, const format::NdMeta& nd, const Rows& rows) {
  ValidPlan out;
  auto tag = format::DecodeContentTag(info.metalayers);
  if (!tag.ok() || tag->kind != format::ContentKind::kArray || tag->proxy) {
    out.absent = tag.ok() ? std::string("its frame holds ") +
                                (tag->proxy ? "a proxy cache" : format::ContentName(tag->kind)) +
                                ", not an array of values"
                          : tag.status().message();
    return out;
  }
  if (rows.valid < 0) {
    out.absent = "the live rows are not known: " + rows.error;
    return out;
  }
  if (nd.ndim < 1 || nd.shape[0] != rows.rows) {
    out.absent = "its shape " + ShapeJson(nd.shape) + " does not have the table's " +
                 std::to_string(rows.rows) + " rows";
    return out;
  }
  const format::DtypeCheck dtype = format::CheckDtype(nd.dtype, info.typesize);
  if (dtype.note) {
    out.absent = *dtype.note;
    return out;
  }
  if (!FixedWidthKind(dtype.npy_descr)) {
    out.absent = "its dtype " + (nd.dtype ? *nd.dtype : std::string("(none)")) +
                 " is not numeric, bool or a fixed-width string";
    return out;
  }
  std::optional<int64_t> row_bytes = int64_t{info.typesize};
  for (int a = 1; a < nd.ndim && row_bytes; ++a) {
    row_bytes = CheckedMul(*row_bytes, nd.shape[static_cast<size_t>(a)]);
  }
  if (!row_bytes || *row_bytes <= 0 || *row_bytes > kMaxValidRowBytes) {
    out.absent =
        "its rows are empty or longer than " + std::to_string(kMaxValidRowBytes) + " bytes";
    return out;
  }
  auto spec = std::make_shared<ValidFileSpec>();
  std::vector<int64_t> shape = nd.shape;
  shape[0] = rows.valid;
  spec->header = format::NpyHeader(dtype.npy_descr, shape);
  spec->rows = rows.rows;
  spec->live = rows.valid;
  spec->row_bytes = *row_bytes;
  spec->live_before = rows.live_before;
  out.spec = std::move(spec);
  return out;
}

}  // namespace

std::string ValidFileName(const std::string& rel) {
  std::string name = rel;
  std::replace(name.begin(), name.end(), '/', '.');
  return name + ".npy";
}

std::optional<CTableFiles> CTableColumns(const StoreIndex& index, const std::string& dir,
                                         const LeafFrames& frames) {
  const std::string prefix = dir.empty() ? "" : dir + "/";
  auto meta_node = index.nodes.find(prefix + "_meta");
  if (meta_node == index.nodes.end() || !meta_node->second.leaf) return std::nullopt;
  auto meta = frames(prefix + "_meta");
  if (!meta) return std::nullopt;
  auto vlmeta = FrameVlmeta(meta->read, meta->size);
  if (!vlmeta.ok()) return std::nullopt;
  std::string kind;
  std::string schema = "null";
  std::string version = "null";
  for (const auto& [name, bytes] : *vlmeta) {
    auto json = format::MsgpackToJson(bytes);
    if (!json) continue;
    if (name == "kind") kind = *json;
    if (name == "schema") schema = *json;
    if (name == "version") version = *json;
  }
  if (kind != "\"ctable\"") return std::nullopt;

  CTableFiles files;
  std::string& doc = files.columns_json;
  doc = "{\n  \"table\": " + json::Quote("/" + dir) + ",\n  \"version\": " + version;
  auto valid_node = index.nodes.find(prefix + "_valid_rows");
  Rows rows{-1, -1, "no _valid_rows", nullptr};
  if (valid_node != index.nodes.end() && valid_node->second.leaf) {
    if (auto vr = frames(prefix + "_valid_rows")) rows = CountRows(*vr);
  }
  doc += ",\n  \"rows\": " + (rows.rows >= 0 ? std::to_string(rows.rows) : std::string("null"));
  doc += ",\n  \"valid_rows\": " +
         (rows.valid >= 0 ? std::to_string(rows.valid) : std::string("null"));
  if (!rows.error.empty()) doc += ",\n  \"valid_rows_error\": " + json::Quote(rows.error);
  // valid/ is made only where the table has no entry of that name.
  const bool valid_dir_free = index.nodes.count(prefix + "valid") == 0;

  // Columns: the leaves below _cols, companions attached to their column.
  struct Column {
    std::string path;
    std::string dtype = "null";
    std::string shape = "null";
    std::map<std::string, std::string> companions;
    ValidPlan valid;
  };
  std::map<std::string, Column> columns;  // by relative path below _cols
  const std::string cols = prefix + "_cols/";
  for (auto it = index.nodes.lower_bound(cols); it != index.nodes.end(); ++it) {
    const std::string& path = it->first;
    if (path.compare(0, cols.size(), cols) != 0) break;
    if (!it->second.leaf) continue;
    std::string rel = path.substr(cols.size());
    std::string companion;
    for (const char* suffix : {".utf8", ".notnull"}) {
      if (EndsWith(rel, suffix)) {
        companion = suffix + 1;
        rel.resize(rel.size() - std::strlen(suffix));
      }
    }
    Column& c = columns[rel];
    if (!companion.empty()) {
      c.companions[companion] = path.substr(prefix.size());
      continue;
    }
    c.path = path.substr(prefix.size());
    c.valid.absent = "not an NDArray";
    if (auto f = frames(path)) {
      auto info = format::ParseFrame(f->read, f->size);
      if (info.ok()) {
        if (auto nd = ArrayMeta(*info)) {
          c.dtype = nd->dtype ? json::Quote(*nd->dtype) : "null";
          c.shape = ShapeJson(nd->shape);
          c.valid = PlanValidFile(*info, *nd, rows);
        }
      } else {
        c.valid.absent = info.status().message();
      }
    }
  }
  doc += ",\n  \"columns\": [";
  bool first = true;
  std::map<std::string, bool> names;  // valid/ file names given
  for (auto& [rel, c] : columns) {
    if (c.path.empty()) continue;  // a companion without its column
    doc += first ? "\n    " : ",\n    ";
    first = false;
    doc += "{\"name\": " + json::Quote(ColumnName(rel)) + ", \"path\": " + json::Quote(c.path) +
           ", \"dtype\": " + c.dtype + ", \"shape\": " + c.shape;
    for (const auto& [what, path] : c.companions) {
      doc += ", " + json::Quote(what) + ": " + json::Quote(path);
    }
    // A UTF-8 column's leaf holds offsets into NAME.utf8; a dictionary
    // column's holds codes into NAME_dict (ctable_storage.py).
    if (c.companions.count("utf8") != 0) {
      c.valid = {nullptr, "a UTF-8 column: its values have variable lengths"};
    } else if (auto d = columns.find(rel + "_dict");
               d != columns.end() && d->second.dtype == "null") {
      c.valid = {nullptr, "a dictionary column: its leaf holds codes into " + rel + "_dict"};
    }
    const std::string file = ValidFileName(rel);
    if (c.valid.spec && !valid_dir_free) {
      c.valid = {nullptr, "the table has an entry named valid"};
    } else if (c.valid.spec && names.count(file) != 0) {
      c.valid = {nullptr, "another column has the file name valid/" + file};
    }
    if (c.valid.spec) {
      names[file] = true;
      c.valid.spec->column = prefix + c.path;
      c.valid.spec->valid_rows = prefix + "_valid_rows";
      doc += ", \"valid_file\": " + json::Quote("valid/" + file);
      files.valid_files.emplace_back(file, std::move(c.valid.spec));
    } else {
      doc += ", \"valid_file\": null, \"valid_file_absent\": " + json::Quote(c.valid.absent);
    }
    doc += "}";
  }
  doc += first ? "]" : "\n  ]";
  doc += ",\n  \"schema\": " + schema + "\n}\n";
  return files;
}

}  // namespace b2ndfs::stores::internal
