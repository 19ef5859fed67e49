#include "zarr_v3_meta.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>

#include "b2ndfs/util/checked_math.h"
#include "zarr_meta.h"

namespace b2ndfs::views {
namespace {

// The typestr's kind and size ("<f4" -> 'f', 4), byte order in `order`;
// kind 0 when it is not a plain number typestr.
char NumberKind(const std::string& descr, char* order, int64_t* size) {
  std::string t = descr;
  if (t.size() >= 2 && t.front() == '\'' && t.back() == '\'') t = t.substr(1, t.size() - 2);
  if (t.size() < 3 || t.size() > 5 || (t[0] != '<' && t[0] != '>' && t[0] != '|')) return 0;
  int64_t n = 0;
  for (size_t i = 2; i < t.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return 0;
    n = n * 10 + (t[i] - '0');
  }
  *order = t[0];
  *size = n;
  return t[1];
}

std::string NumberName(char kind, int64_t size) {
  const bool pow2 = size == 1 || size == 2 || size == 4 || size == 8;
  switch (kind) {
    case 'b':
      return size == 1 ? "bool" : "";
    case 'i':
      return pow2 ? "int" + std::to_string(8 * size) : "";
    case 'u':
      return pow2 ? "uint" + std::to_string(8 * size) : "";
    case 'f':
      return size >= 2 && pow2 ? "float" + std::to_string(8 * size) : "";
    case 'c':
      return size == 8 || size == 16 ? "complex" + std::to_string(8 * size) : "";
    default:
      return "";
  }
}

// NumPy's fixed-length strings: "'<U32'" -> 'U' and 32 (characters),
// "'|S8'" -> 'S' and 8 (bytes); 0 for anything else.
char StringKind(const std::string& descr, char* order, int64_t* length) {
  std::string t = descr;
  if (t.size() >= 2 && t.front() == '\'' && t.back() == '\'') t = t.substr(1, t.size() - 2);
  if (t.size() < 3 || t.size() > 12 || (t[0] != '<' && t[0] != '>' && t[0] != '|') ||
      (t[1] != 'U' && t[1] != 'S')) {
    return 0;
  }
  int64_t n = 0;
  for (size_t i = 2; i < t.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return 0;
    n = n * 10 + (t[i] - '0');
  }
  *order = t[0];
  *length = n;
  return t[1];
}

void AppendCodec(std::string* out, const std::string& endian) {
  *out += "{\"name\": \"bytes\"";
  if (!endian.empty()) *out += ", \"configuration\": {\"endian\": \"" + endian + "\"}";
  *out += "}";
}

void SkipSpace(const std::string& s, size_t* pos) {
  while (*pos < s.size() && std::isspace(static_cast<unsigned char>(s[*pos]))) ++*pos;
}

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}

}  // namespace

ZarrV3Dtype ZarrV3DtypeOf(const std::string& npy_descr, int64_t itemsize) {
  char order = 0;
  int64_t size = 0;
  const char kind = NumberKind(npy_descr, &order, &size);
  const std::string name = kind ? NumberName(kind, size) : "";
  if (!name.empty() && size == itemsize) {
    ZarrV3Dtype d;
    d.data_type = name;
    d.fill_value = "0";
    if (size > 1 && order != '|') d.endian = order == '<' ? "little" : "big";
    if (kind == 'b') d.fill_value = "false";
    if (kind == 'f') d.fill_value = "0.0";
    if (kind == 'c') d.fill_value = "[0.0, 0.0]";
    return d;
  }
  int64_t length = 0;
  const char text = StringKind(npy_descr, &order, &length);
  if (text != 0 && length > 0 && length * (text == 'U' ? 4 : 1) == itemsize) {
    ZarrV3Dtype d;
    d.data_type = text == 'U' ? "fixed_length_utf32" : "null_terminated_bytes";
    d.length_bytes = itemsize;
    if (text == 'U') d.endian = order == '>' ? "big" : "little";
    d.fill_value = "\"\"";
    d.readers = "data_type " + d.data_type + " as zarr-python 3.1 writes it for NumPy's " +
                npy_descr + "; readers without it (zarrita 0.7) read the strings from zarr/";
    return d;
  }
  ZarrV3Dtype d;
  d.data_type = "r" + std::to_string(8 * itemsize);
  d.fill_value = "[";
  for (int64_t i = 0; i < itemsize; ++i) d.fill_value += i ? ", 0" : "0";
  d.fill_value += "]";
  d.raw_reason = "Zarr v3 has no data type for " + npy_descr + ": items are raw bytes (" +
                 d.data_type + "), as data holds them";
  return d;
}

std::string ZarrJsonHead(const ZarrV3Dtype& dtype, const std::vector<int64_t>& shape,
                         const std::vector<int64_t>& chunks, const std::vector<int64_t>& inner,
                         const std::string& dimension_names) {
  std::string out = "{\n";
  out += "  \"zarr_format\": 3,\n";
  out += "  \"node_type\": \"array\",\n";
  out += "  \"shape\": " + JsonInts(shape) + ",\n";
  if (dtype.length_bytes > 0) {
    out += "  \"data_type\": {\"name\": \"" + dtype.data_type +
           "\", \"configuration\": {\"length_bytes\": " + std::to_string(dtype.length_bytes) +
           "}},\n";
  } else {
    out += "  \"data_type\": \"" + dtype.data_type + "\",\n";
  }
  out += "  \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": " +
         JsonInts(chunks) + "}},\n";
  out +=
      "  \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": "
      "\"/\"}},\n";
  out += "  \"fill_value\": " + dtype.fill_value + ",\n";
  out += "  \"codecs\": [";
  if (inner.empty()) {
    AppendCodec(&out, dtype.endian);
  } else {
    out +=
        "{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": " + JsonInts(inner) +
        ", \"codecs\": [";
    AppendCodec(&out, dtype.endian);
    out += "], \"index_codecs\": [";
    AppendCodec(&out, "little");
    out += ", {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}";
  }
  out += "],\n";
  if (!dimension_names.empty()) out += "  \"dimension_names\": " + dimension_names + ",\n";
  out += "  \"attributes\": ";
  return out;
}

std::string DimensionNamesOf(const std::string& value, int ndim) {
  size_t pos = 0;
  SkipSpace(value, &pos);
  if (pos >= value.size() || value[pos] != '[') return "";
  ++pos;
  int count = 0;
  while (true) {
    SkipSpace(value, &pos);
    if (pos < value.size() && value[pos] == ']' && count == 0) break;
    if (value.compare(pos, 4, "null") == 0) {
      pos += 4;
    } else if (pos < value.size() && value[pos] == '"') {
      for (++pos; pos < value.size() && value[pos] != '"'; ++pos) {
        if (value[pos] == '\\') ++pos;
      }
      if (pos >= value.size()) return "";
      ++pos;
    } else {
      return "";
    }
    ++count;
    SkipSpace(value, &pos);
    if (pos < value.size() && value[pos] == ',') {
      ++pos;
      continue;
    }
    if (pos < value.size() && value[pos] == ']') break;
    return "";
  }
  ++pos;
  SkipSpace(value, &pos);
  if (pos != value.size() || count != ndim) return "";
  size_t begin = 0;
  SkipSpace(value, &begin);
  return value.substr(begin, value.find_last_of(']') + 1 - begin);
}

uint32_t Crc32c(std::span<const uint8_t> bytes, uint32_t crc) {
  static const std::array<uint32_t, 256> table = MakeCrcTable();
  crc = ~crc;
  for (uint8_t b : bytes) crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::optional<ShardIndex> MakeShardIndex(int64_t count, int64_t inner_bytes) {
  if (count < 1 || inner_bytes < 1) return std::nullopt;
  auto data = CheckedMul(count, inner_bytes);
  auto index = CheckedMul(count, 16);
  if (!data || !index || !CheckedAdd(*data, *index + 4)) return std::nullopt;
  return ShardIndex(count, inner_bytes);
}

void ShardIndex::Entries(int64_t offset, std::span<uint8_t> out) const {
  size_t done = 0;
  while (done < out.size()) {
    const int64_t at = offset + static_cast<int64_t>(done);
    const int64_t entry = at / 16;
    uint8_t bytes[16];
    const uint64_t values[2] = {static_cast<uint64_t>(entry * inner_bytes_),
                                static_cast<uint64_t>(inner_bytes_)};
    for (int k = 0; k < 16; ++k) bytes[k] = static_cast<uint8_t>(values[k / 8] >> (8 * (k % 8)));
    const size_t from = static_cast<size_t>(at % 16);
    const size_t n = std::min(out.size() - done, 16 - from);
    std::memcpy(out.data() + done, bytes + from, n);
    done += n;
  }
}

uint32_t ShardIndex::Crc() const {
  uint8_t buffer[4096];
  uint32_t crc = 0;
  for (int64_t at = 0; at < 16 * count_; at += sizeof buffer) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(sizeof buffer, 16 * count_ - at));
    Entries(at, std::span<uint8_t>(buffer, n));
    crc = Crc32c(std::span<const uint8_t>(buffer, n), crc);
  }
  return crc;
}

void ShardIndex::Read(int64_t offset, std::span<uint8_t> out) const {
  const int64_t entries_end = 16 * count_;
  const int64_t end = offset + static_cast<int64_t>(out.size());
  if (offset < entries_end) {
    Entries(offset, out.first(static_cast<size_t>(std::min(end, entries_end) - offset)));
  }
  if (end > entries_end) {
    const uint32_t crc = Crc();
    for (int64_t at = std::max(offset, entries_end); at < end; ++at) {
      out[static_cast<size_t>(at - offset)] = static_cast<uint8_t>(crc >> (8 * (at - entries_end)));
    }
  }
}

std::optional<KeyTree> MakeKeyTree(const std::vector<int64_t>& grid) {
  if (grid.empty()) return std::nullopt;
  KeyTree tree;
  tree.grid_ = grid;
  tree.subtree_.assign(grid.size() + 1, 1);
  for (size_t d = grid.size(); d-- > 0;) {
    if (grid[d] < 1) return std::nullopt;
    uint64_t below = 0;
    // Bounded well below 2^63, so that base + ordinal never wraps either.
    if (__builtin_mul_overflow(static_cast<uint64_t>(grid[d]), tree.subtree_[d + 1], &below) ||
        below >= (uint64_t{1} << 62)) {
      return std::nullopt;
    }
    tree.subtree_[d] = 1 + below;
  }
  return tree;
}

uint64_t KeyTree::Ordinal(std::span<const int64_t> coords) const {
  uint64_t ordinal = 0;
  for (size_t j = 0; j < coords.size(); ++j) {
    ordinal += 1 + static_cast<uint64_t>(coords[j]) * subtree_[j + 1];
  }
  return ordinal;
}

}  // namespace b2ndfs::views
