#include "ctable.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/meta_json.h"
#include "b2ndfs/format/ndmeta.h"

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
  std::string error;  // why valid is unknown
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
  if (out.rows == 0) {
    out.valid = 0;
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
    valid += std::count_if(items.begin(), items.begin() + n, [](uint8_t b) { return b != 0; });
  }
  out.valid = valid;
  return out;
}

// A column's logical name from its path below _cols (ctable_storage.py,
// _column_name_to_relpath and join_field_path): segments percent-decoded,
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

}  // namespace

std::optional<std::string> CTableColumnsJson(const StoreIndex& index, const std::string& dir,
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

  std::string doc =
      "{\n  \"table\": " + format::JsonQuote("/" + dir) + ",\n  \"version\": " + version;
  auto valid_node = index.nodes.find(prefix + "_valid_rows");
  Rows rows{-1, -1, "no _valid_rows"};
  if (valid_node != index.nodes.end() && valid_node->second.leaf) {
    if (auto vr = frames(prefix + "_valid_rows")) rows = CountRows(*vr);
  }
  doc += ",\n  \"rows\": " + (rows.rows >= 0 ? std::to_string(rows.rows) : std::string("null"));
  doc += ",\n  \"valid_rows\": " +
         (rows.valid >= 0 ? std::to_string(rows.valid) : std::string("null"));
  if (!rows.error.empty()) doc += ",\n  \"valid_rows_error\": " + format::JsonQuote(rows.error);

  // Columns: the leaves below _cols, companions attached to their column.
  struct Column {
    std::string path;
    std::string dtype = "null";
    std::string shape = "null";
    std::map<std::string, std::string> companions;
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
    if (auto f = frames(path)) {
      auto info = format::ParseFrame(f->read, f->size);
      if (info.ok()) {
        if (auto nd = ArrayMeta(*info)) {
          c.dtype = nd->dtype ? format::JsonQuote(*nd->dtype) : "null";
          c.shape = ShapeJson(nd->shape);
        }
      }
    }
  }
  doc += ",\n  \"columns\": [";
  bool first = true;
  for (const auto& [rel, c] : columns) {
    if (c.path.empty()) continue;  // a companion without its column
    doc += first ? "\n    " : ",\n    ";
    first = false;
    doc += "{\"name\": " + format::JsonQuote(ColumnName(rel)) +
           ", \"path\": " + format::JsonQuote(c.path) + ", \"dtype\": " + c.dtype +
           ", \"shape\": " + c.shape;
    for (const auto& [what, path] : c.companions) {
      doc += ", " + format::JsonQuote(what) + ": " + format::JsonQuote(path);
    }
    doc += "}";
  }
  doc += first ? "]" : "\n  ]";
  doc += ",\n  \"schema\": " + schema + "\n}\n";
  return doc;
}

}  // namespace b2ndfs::stores::internal
