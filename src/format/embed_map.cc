#include "b2ndfs/format/embed_map.h"

#include "msgpack_util.h"

namespace b2ndfs::format {
namespace {

using internal::AsInt64;
using internal::TypeName;

Status BadEstore(const std::string& what) { return InvalidData("estore_metadata: " + what); }

// A str (or bin, which older msgpack writers use for text) as a string.
bool AsText(const msgpack::object& o, std::string* out) {
  if (o.type == msgpack::type::STR) {
    out->assign(o.via.str.ptr, o.via.str.size);
    return true;
  }
  if (o.type == msgpack::type::BIN) {
    out->assign(o.via.bin.ptr, o.via.bin.size);
    return true;
  }
  return false;
}

const msgpack::object* Field(const msgpack::object& map, const char* name) {
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    std::string key;
    if (AsText(map.via.map.ptr[i].key, &key) && key == name) return &map.via.map.ptr[i].val;
  }
  return nullptr;
}

void DecodeEntry(const msgpack::object& value, EmbedEntry* e) {
  if (value.type != msgpack::type::MAP) {
    e->problem = "its entry is " + TypeName(value) + ", not a map";
    return;
  }
  const msgpack::object* urlbase = Field(value, "urlbase");
  if (urlbase != nullptr && urlbase->type != msgpack::type::NIL) {
    const msgpack::object* path = Field(value, "path");
    e->reference = true;
    if (!AsText(*urlbase, &e->urlbase) || path == nullptr || !AsText(*path, &e->path)) {
      e->problem = "a remote reference without string urlbase and path";
    }
    return;
  }
  const msgpack::object* offset = Field(value, "offset");
  const msgpack::object* length = Field(value, "length");
  std::optional<int64_t> o;
  std::optional<int64_t> l;
  if (offset != nullptr) o = AsInt64(*offset);
  if (length != nullptr) l = AsInt64(*length);
  if (!o.has_value() || !l.has_value()) {
    e->problem = "no integer offset and length";
    return;
  }
  const int64_t ov = o.value_or(0);
  const int64_t lv = l.value_or(0);
  if (ov < 0 || lv < 0 || ov > INT64_MAX - lv) {
    e->problem = "offset " + std::to_string(ov) + " and length " + std::to_string(lv) +
                 " are not a byte range";
  } else {
    e->offset = ov;
    e->length = lv;
  }
}

}  // namespace

Result<EmbedMap> DecodeEmbedMap(std::span<const uint8_t> bytes) {
  auto unpacked = internal::UnpackBounded(bytes, 0, 8, "estore_metadata");
  if (!unpacked.ok()) return unpacked.status();
  if (unpacked->end != bytes.size()) return BadEstore("bytes after the msgpack map");
  const msgpack::object& root = unpacked->get();
  if (root.type != msgpack::type::MAP) return BadEstore("is " + TypeName(root) + ", not a map");
  EmbedMap out;
  out.current_offset = -1;
  if (const msgpack::object* current = Field(root, "current_offset")) {
    if (auto v = AsInt64(*current); v && *v >= 0) out.current_offset = *v;
  }
  const msgpack::object* map = Field(root, "embed_map");
  if (map == nullptr) return BadEstore("no embed_map");
  if (map->type != msgpack::type::MAP)
    return BadEstore("embed_map is " + TypeName(*map) + ", not a map");
  if (map->via.map.size > kMaxEmbedKeys) {
    return BadEstore(std::to_string(map->via.map.size) + " keys (at most " +
                     std::to_string(kMaxEmbedKeys) + " are read)");
  }
  out.entries.reserve(map->via.map.size);
  for (uint32_t i = 0; i < map->via.map.size; ++i) {
    EmbedEntry e;
    if (!AsText(map->via.map.ptr[i].key, &e.key) || e.key.size() > kMaxEmbedKeyLength) {
      return BadEstore("embed_map key " + std::to_string(i) + " is not a string (or too long)");
    }
    DecodeEntry(map->via.map.ptr[i].val, &e);
    out.entries.push_back(std::move(e));
  }
  return out;
}

}  // namespace b2ndfs::format
