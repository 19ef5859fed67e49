#include "b2ndfs/format/vlen.h"

#include <cstring>
#include <string_view>

#include "json_text.h"
#include "msgpack_util.h"

namespace b2ndfs::format {
namespace {

using internal::AsInt64;
using internal::kMaxMsgpackDepth;
using internal::UnpackBounded;
using internal::Unpacked;

const NamedBytes* Find(const std::vector<NamedBytes>& layers, std::string_view name) {
  for (const NamedBytes& m : layers) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// The string value of `key` in a msgpack map, nullopt when absent or not a
// string, or a nil value ("" then).
std::optional<std::string> MapString(const msgpack::object& map, std::string_view key) {
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object& k = map.via.map.ptr[i].key;
    const msgpack::object& v = map.via.map.ptr[i].val;
    if (k.type != msgpack::type::STR || std::string_view(k.via.str.ptr, k.via.str.size) != key) {
      continue;
    }
    if (v.type == msgpack::type::STR) return std::string(v.via.str.ptr, v.via.str.size);
    return std::nullopt;
  }
  return std::nullopt;
}

// A tag metalayer's content: one msgpack map.
Result<Unpacked> TagMap(const NamedBytes& layer) {
  const std::string what = "metalayer '" + layer.name + "'";
  B2NDFS_ASSIGN_OR_RETURN(Unpacked u, UnpackBounded(layer.content, 0, kMaxMsgpackDepth, what));
  if (u.get().type != msgpack::type::MAP) {
    return InvalidData(what + " is " + internal::TypeName(u.get()) + ", not a map");
  }
  return u;
}

uint32_t LoadLe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // the formats here are little endian, as is every host we build for
}

// The msgpack array header for `count` items (the smallest form, as msgpack
// writers use).
void AppendArrayHeader(uint64_t count, std::string* out) {
  if (count < 16) {
    out->push_back(static_cast<char>(0x90 | count));
  } else if (count <= 0xffff) {
    out->push_back(static_cast<char>(0xdc));
    out->push_back(static_cast<char>(count >> 8));
    out->push_back(static_cast<char>(count));
  } else {
    out->push_back(static_cast<char>(0xdd));
    for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(count >> shift));
  }
}

// One Arrow IPC message: where it starts, its metadata, and where it ends.
struct ArrowMessage {
  size_t begin = 0;
  size_t metadata = 0;  // offset of the flatbuffer
  size_t metadata_size = 0;
  size_t end = 0;
  int header_type = 0;  // 0 for the end-of-stream marker
};

// Reads a flatbuffer Message table (Arrow format/Message.fbs): field 1
// header_type (ubyte), field 3 bodyLength (long).
Result<std::pair<int, int64_t>> MessageFields(std::span<const uint8_t> fb) {
  const auto bad = [] { return InvalidData("Arrow message metadata is not a flatbuffer Message"); };
  if (fb.size() < 8) return bad();
  const uint32_t root = LoadLe32(fb.data());
  if (root > fb.size() - 4) return bad();
  int32_t soffset;
  std::memcpy(&soffset, fb.data() + root, 4);
  const int64_t vtable = static_cast<int64_t>(root) - soffset;
  if (vtable < 0 || vtable + 4 > static_cast<int64_t>(fb.size())) return bad();
  uint16_t vsize, tsize;
  std::memcpy(&vsize, fb.data() + vtable, 2);
  std::memcpy(&tsize, fb.data() + vtable + 2, 2);
  if (vsize < 4 || vtable + vsize > static_cast<int64_t>(fb.size()) ||
      root + static_cast<size_t>(tsize) > fb.size()) {
    return bad();
  }
  const auto field = [&](int index) -> uint16_t {
    const int at = 4 + 2 * index;
    if (at + 2 > vsize) return 0;
    uint16_t off;
    std::memcpy(&off, fb.data() + vtable + at, 2);
    return off < tsize ? off : 0;
  };
  int header_type = 0;
  if (uint16_t off = field(1); off != 0) header_type = fb[root + off];
  int64_t body = 0;
  if (uint16_t off = field(3); off != 0) {
    if (off + 8u > tsize) return bad();
    std::memcpy(&body, fb.data() + root + off, 8);
  }
  if (body < 0) return bad();
  return std::make_pair(header_type, body);
}

Result<ArrowMessage> NextArrowMessage(std::span<const uint8_t> bytes, size_t pos) {
  const auto truncated = [] { return InvalidData("Arrow IPC stream is truncated"); };
  ArrowMessage m;
  m.begin = pos;
  if (bytes.size() - pos < 4) return truncated();
  uint32_t length = LoadLe32(bytes.data() + pos);
  pos += 4;
  if (length == 0xffffffffu) {  // continuation marker (Arrow >= 0.15)
    if (bytes.size() - pos < 4) return truncated();
    length = LoadLe32(bytes.data() + pos);
    pos += 4;
  }
  if (length == 0) {
    m.end = pos;
    return m;  // end of stream
  }
  if (length > bytes.size() - pos) return truncated();
  m.metadata = pos;
  m.metadata_size = length;
  B2NDFS_ASSIGN_OR_RETURN(auto fields, MessageFields(bytes.subspan(pos, length)));
  m.header_type = fields.first;
  if (m.header_type < 1 || m.header_type > 5) {
    return InvalidData("Arrow message of unknown type " + std::to_string(m.header_type));
  }
  pos += length;
  if (static_cast<uint64_t>(fields.second) > bytes.size() - pos) return truncated();
  m.end = pos + static_cast<size_t>(fields.second);
  return m;
}

}  // namespace

const char* ContentName(ContentKind kind) {
  switch (kind) {
    case ContentKind::kArray:
      return "array";
    case ContentKind::kObjects:
      return "objects";
    case ContentKind::kBatches:
      return "batches";
    case ContentKind::kCarrier:
      return "carrier";
  }
  return "array";
}

Result<ContentTag> DecodeContentTag(const std::vector<NamedBytes>& metalayers) {
  ContentTag tag;
  try {
    if (const NamedBytes* b2o = Find(metalayers, "b2o")) {
      B2NDFS_ASSIGN_OR_RETURN(Unpacked u, TagMap(*b2o));
      std::optional<std::string> kind = MapString(u.get(), "kind");
      if (!kind || kind->empty()) return InvalidData("metalayer 'b2o' has no \"kind\" string");
      if (*kind == "remote_proxy") {
        tag.proxy = true;
      } else {
        tag.kind = ContentKind::kCarrier;
        tag.carrier_kind = *kind;
        tag.recipe_vlmeta = "b2o";
      }
    } else if (Find(metalayers, "LazyArray") != nullptr) {
      tag.kind = ContentKind::kCarrier;
      tag.carrier_kind = "LazyArray";
      tag.recipe_vlmeta = "_LazyArray";
    }
    if (Find(metalayers, "proxy-source") != nullptr) {
      B2NDFS_RETURN_IF_ERROR(TagMap(*Find(metalayers, "proxy-source")).status());
      tag.proxy = true;
    }
    if (tag.kind == ContentKind::kCarrier) return tag;
    if (const NamedBytes* batches = Find(metalayers, "batcharray")) {
      B2NDFS_ASSIGN_OR_RETURN(Unpacked u, TagMap(*batches));
      // _BATCHARRAY_META's default serializer is msgpack (batch_array.py).
      tag.serializer = MapString(u.get(), "serializer").value_or("msgpack");
      if (tag.serializer != "msgpack" && tag.serializer != "arrow") {
        return InvalidData("metalayer 'batcharray' names serializer '" + tag.serializer +
                           "'; python-blosc2 writes msgpack or arrow");
      }
      tag.kind = ContentKind::kBatches;
    } else if (const NamedBytes* objects = Find(metalayers, "vlarray")) {
      B2NDFS_RETURN_IF_ERROR(TagMap(*objects).status());
      tag.kind = ContentKind::kObjects;
    } else if (const NamedBytes* list = Find(metalayers, "listarray")) {
      B2NDFS_RETURN_IF_ERROR(TagMap(*list).status());
      tag.kind = ContentKind::kObjects;
    }
    if (tag.proxy && tag.kind != ContentKind::kArray) {
      return InvalidData("a proxy cache tagged as a variable-length container");
    }
  } catch (const std::bad_alloc&) {
    return Status(ENOMEM, "out of memory decoding the container's tags");
  }
  return tag;
}

Result<std::optional<RecipeExpression>> RecipeExpressionOf(std::span<const uint8_t> recipe) {
  B2NDFS_ASSIGN_OR_RETURN(Unpacked u, UnpackBounded(recipe, 0, kMaxMsgpackDepth, "the recipe"));
  const msgpack::object& map = u.get();
  if (map.type != msgpack::type::MAP) return InvalidData("the recipe is not a map");
  std::optional<std::string> expression = MapString(map, "expression");
  if (!expression) return std::optional<RecipeExpression>();
  RecipeExpression out{std::move(*expression), {}};
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object& k = map.via.map.ptr[i].key;
    const msgpack::object& v = map.via.map.ptr[i].val;
    if (k.type != msgpack::type::STR ||
        std::string_view(k.via.str.ptr, k.via.str.size) != "operands") {
      continue;
    }
    if (v.type != msgpack::type::MAP) return InvalidData("the recipe's operands are not a map");
    for (uint32_t j = 0; j < v.via.map.size; ++j) {
      const msgpack::object& name = v.via.map.ptr[j].key;
      if (name.type != msgpack::type::STR) return InvalidData("an operand name is not a string");
      out.operands.emplace_back(name.via.str.ptr, name.via.str.size);
      // A local operand: _LazyArray's urlpath string, or b2o's Ref of kind
      // "urlpath" (ref.py, Ref.to_dict); anything else (c2array, a
      // dictstore key) is not a container of the mount.
      const msgpack::object& ref = v.via.map.ptr[j].val;
      std::string path;
      if (ref.type == msgpack::type::STR) {
        path.assign(ref.via.str.ptr, ref.via.str.size);
      } else if (ref.type == msgpack::type::MAP && MapString(ref, "kind") == "urlpath") {
        path = MapString(ref, "urlpath").value_or("");
      }
      out.paths.push_back(std::move(path));
    }
  }
  return std::optional<RecipeExpression>(std::move(out));
}

Result<std::string> MergeMsgpackBlocks(std::span<const uint8_t> blocks) {
  std::string items;
  uint64_t count = 0;
  size_t pos = 0;
  int64_t block = 0;
  try {
    while (pos < blocks.size()) {
      const std::string what = "block " + std::to_string(block);
      B2NDFS_ASSIGN_OR_RETURN(Unpacked u, UnpackBounded(blocks, pos, kMaxMsgpackDepth, what));
      if (u.get().type != msgpack::type::ARRAY) {
        return InvalidData(what + " is " + internal::TypeName(u.get()) + ", not an array of items");
      }
      const uint8_t marker = blocks[pos];
      const size_t header = marker == 0xdc ? 3 : marker == 0xdd ? 5 : 1;
      count += u.get().via.array.size;
      if (count > static_cast<uint64_t>(kMaxBatchItems)) {
        return InvalidData("the batch holds more than " + std::to_string(kMaxBatchItems) +
                           " items");
      }
      items.append(reinterpret_cast<const char*>(blocks.data()) + pos + header,
                   u.end - pos - header);
      pos = u.end;
      ++block;
    }
  } catch (const std::bad_alloc&) {
    return Status(ENOMEM, "out of memory merging a batch's blocks");
  }
  if (block == 0) return InvalidData("the batch has no blocks");
  if (block == 1) return std::string(reinterpret_cast<const char*>(blocks.data()), blocks.size());
  std::string out;
  AppendArrayHeader(count, &out);
  out += items;
  return out;
}

Result<std::string> MergeArrowStreams(std::span<const uint8_t> blocks) {
  std::string out;
  std::span<const uint8_t> schema;
  int64_t streams = 0;
  size_t pos = 0;
  while (pos < blocks.size()) {
    // One stream: a schema message, then messages up to end-of-stream.
    B2NDFS_ASSIGN_OR_RETURN(ArrowMessage first, NextArrowMessage(blocks, pos));
    if (first.header_type != 1) {
      return InvalidData("block " + std::to_string(streams) +
                         " is not an Arrow IPC stream (no schema first)");
    }
    const auto this_schema = blocks.subspan(first.metadata, first.metadata_size);
    if (streams == 0) {
      schema = this_schema;
      out.append(reinterpret_cast<const char*>(blocks.data()) + first.begin,
                 first.end - first.begin);
    } else if (this_schema.size() != schema.size() ||
               std::memcmp(this_schema.data(), schema.data(), schema.size()) != 0) {
      return InvalidData("block " + std::to_string(streams) +
                         "'s Arrow schema differs from block 0's");
    }
    pos = first.end;
    while (true) {
      if (pos >= blocks.size()) {
        return InvalidData("block " + std::to_string(streams) + "'s Arrow stream has no end");
      }
      B2NDFS_ASSIGN_OR_RETURN(ArrowMessage m, NextArrowMessage(blocks, pos));
      pos = m.end;
      if (m.header_type == 0) break;
      if (m.header_type == 1) return InvalidData("Arrow stream with two schemas");
      out.append(reinterpret_cast<const char*>(blocks.data()) + m.begin, m.end - m.begin);
    }
    if (++streams > kMaxBatchItems) return InvalidData("too many Arrow streams in one batch");
  }
  if (streams == 0) return InvalidData("the batch has no blocks");
  if (streams == 1) return std::string(reinterpret_cast<const char*>(blocks.data()), blocks.size());
  out.append("\xff\xff\xff\xff\0\0\0\0", 8);
  return out;
}

std::optional<std::vector<uint8_t>> MsgpackBinary(std::span<const uint8_t> bytes) {
  auto u = UnpackBounded(bytes, 0, 1, "value");
  if (!u.ok() || u->end != bytes.size()) return std::nullopt;
  const msgpack::object& o = u->get();
  if (o.type == msgpack::type::BIN) {
    const auto* p = reinterpret_cast<const uint8_t*>(o.via.bin.ptr);
    return std::vector<uint8_t>(p, p + o.via.bin.size);
  }
  if (o.type == msgpack::type::STR) {
    const auto* p = reinterpret_cast<const uint8_t*>(o.via.str.ptr);
    return std::vector<uint8_t>(p, p + o.via.str.size);
  }
  return std::nullopt;
}

std::optional<int64_t> MsgpackInteger(std::span<const uint8_t> bytes) {
  auto u = UnpackBounded(bytes, 0, 1, "value");
  if (!u.ok() || u->end != bytes.size()) return std::nullopt;
  return AsInt64(u->get());
}

Result<std::vector<bool>> FetchedChunks(std::span<const uint8_t> bitmap, int64_t nchunks,
                                        int64_t bits_per_chunk) {
  if (bits_per_chunk <= 0 || bits_per_chunk > (int64_t{1} << 20) || nchunks < 0 ||
      nchunks > (int64_t{1} << 40) / bits_per_chunk) {
    return InvalidData("proxy-fetched-bpc " + std::to_string(bits_per_chunk) + " is out of range");
  }
  const int64_t bits = nchunks * bits_per_chunk;
  if (static_cast<int64_t>(bitmap.size()) != (bits + 7) / 8) {
    return InvalidData("the proxy-fetched bitmap is " + std::to_string(bitmap.size()) + " bytes; " +
                       std::to_string(nchunks) + " chunks need " + std::to_string((bits + 7) / 8));
  }
  std::vector<bool> present(static_cast<size_t>(nchunks));
  for (int64_t c = 0; c < nchunks; ++c) {
    bool all = true;
    for (int64_t n = c * bits_per_chunk; n < (c + 1) * bits_per_chunk && all; ++n) {
      all = (bitmap[n / 8] >> (n % 8) & 1) != 0;
    }
    present[c] = all;
  }
  return present;
}

}  // namespace b2ndfs::format
