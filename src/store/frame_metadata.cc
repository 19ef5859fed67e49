// A frame's vlmetalayers, decompressed where they are needed.
#include "frame_metadata.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace b2ndfs::store {

namespace {

// A msgpack string saying that a variable-length metalayer is not shown.
std::vector<uint8_t> OmittedNote(int64_t size) {
  const std::string text = "(" + std::to_string(size) + " bytes, over b2ndfs's budget for vlmeta)";
  // str8; filled by memcpy, not insert (GCC 12 inlines that into a false
  // -Warray-bounds).
  std::vector<uint8_t> out(2 + text.size());
  out[0] = 0xd9;
  out[1] = static_cast<uint8_t>(text.size());
  std::memcpy(out.data() + 2, text.data(), text.size());
  return out;
}

}  // namespace

int64_t FrameMetadata::MetalayerBytes() const {
  int64_t bytes = VlmetaBytes();
  for (const auto& m : frame_info.metalayers) {
    bytes += static_cast<int64_t>(m.content.capacity() + m.name.capacity());
  }
  return bytes;
}

int64_t FrameMetadata::VlmetaBytes() const {
  int64_t bytes = 0;
  for (const auto& vl : frame_info.vlmetalayers) {
    bytes += static_cast<int64_t>(vl.content.capacity() + vl.name.capacity());
  }
  return bytes;
}

void FrameMetadata::DecodeVlmeta(codec::DecompressorPool& pool) {
  vlmeta.clear();
  constexpr int64_t kVlmetaBudget = 4 << 20;
  constexpr size_t kMaxVlmetaShown = 256;
  int64_t spent = 0;
  auto lease = pool.Acquire();
  for (const auto& vl : frame_info.vlmetalayers) {
    format::NamedBytes decoded{vl.name, vl.content};
    int64_t size = static_cast<int64_t>(vl.content.size());
    auto chunk_info = codec::InspectChunk(vl.content);
    if (chunk_info.ok()) size = chunk_info->nbytes;
    if (spent + size > kVlmetaBudget || vlmeta.size() >= kMaxVlmetaShown) {
      decoded.content = OmittedNote(size);
    } else if (chunk_info.ok()) {
      std::vector<uint8_t> out(static_cast<size_t>(chunk_info->nbytes));
      if (lease->DecompressAll(vl.content, out).ok()) decoded.content = std::move(out);
    }
    spent += std::min<int64_t>(size, kVlmetaBudget);
    vlmeta.push_back(std::move(decoded));
  }
}

void FrameMetadata::DropVlmeta() {
  vlmeta = {};
  frame_info.vlmetalayers = {};
}

Result<std::optional<std::vector<uint8_t>>> FrameMetadata::DecompressedVlmeta(
    const std::string& name, codec::DecompressorPool& pool) const {
  for (const auto& vl : frame_info.vlmetalayers) {
    if (vl.name != name) continue;
    B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, codec::InspectChunk(vl.content));
    if (ci.nbytes > (64 << 20)) return InvalidData("vlmeta '" + name + "' is too large");
    std::vector<uint8_t> out(static_cast<size_t>(ci.nbytes));
    auto lease = pool.Acquire();
    B2NDFS_RETURN_IF_ERROR(lease->DecompressAll(vl.content, out).WithContext("vlmeta " + name));
    return std::optional<std::vector<uint8_t>>(std::move(out));
  }
  return std::optional<std::vector<uint8_t>>();
}

// Decompressed at open: the headers are made at lookup, long after meta.json
// (which decodes the rest) dropped the vlmetalayers.
format::VoxelGeometry FrameMetadata::DecodeVoxelGeometry(codec::DecompressorPool& pool,
                                                         size_t ndim) const {
  constexpr int64_t kMaxGeometryBytes = 64 << 10;
  std::vector<format::NamedBytes> decoded;
  std::optional<codec::DecompressorPool::Lease> lease;
  for (const auto& vl : frame_info.vlmetalayers) {
    if (!format::IsVoxelGeometryKey(vl.name)) continue;
    auto chunk_info = codec::InspectChunk(vl.content);
    std::vector<uint8_t> out;
    if (chunk_info.ok() && chunk_info->nbytes <= kMaxGeometryBytes) {
      if (!lease) lease.emplace(pool.Acquire());
      out.resize(static_cast<size_t>(chunk_info->nbytes));
      if (!(*lease)->DecompressAll(vl.content, out).ok()) out.clear();
    }
    decoded.push_back({vl.name, std::move(out)});
  }
  return format::DecodeVoxelGeometry(decoded, ndim);
}

}  // namespace b2ndfs::store
