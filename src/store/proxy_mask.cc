// A proxy cache's chunks present (proxy_mask.h).
#include "proxy_mask.h"

#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/format/vlen.h"
#include "chunk_directory.h"
#include "frame_metadata.h"

namespace b2ndfs::store {

Status LoadProxyMask(FrameMetadata& meta, ChunkDirectory& directory, int64_t nchunks,
                     codec::DecompressorPool& pool) {
  auto vlmeta = [&](const std::string& name) { return meta.DecompressedVlmeta(name, pool); };
  int64_t bpc = 1;
  B2NDFS_ASSIGN_OR_RETURN(auto bpc_bytes, vlmeta("proxy-fetched-bpc"));
  if (bpc_bytes) {
    auto value = format::MsgpackInteger(*bpc_bytes);
    if (!value) return InvalidData("vlmeta proxy-fetched-bpc is not an integer");
    bpc = *value;
  }
  B2NDFS_ASSIGN_OR_RETURN(auto bitmap_bytes,
                          vlmeta(bpc > 1 ? "proxy-fetched-blocks" : "proxy-fetched"));
  std::vector<bool> marked;
  if (bitmap_bytes) {
    auto bitmap = format::MsgpackBinary(*bitmap_bytes);
    if (!bitmap) return InvalidData("the proxy-fetched bitmap is not msgpack bytes");
    B2NDFS_ASSIGN_OR_RETURN(marked, format::FetchedChunks(*bitmap, nchunks, bpc));
  }
  std::vector<bool> present(static_cast<size_t>(nchunks));
  std::vector<int64_t> listed;
  for (int64_t c = 0; c < nchunks; ++c) {
    B2NDFS_ASSIGN_OR_RETURN(const ChunkRef ref, directory.Locate(c));
    present[c] = ref.kind != format::ChunkKind::kUninitialized && (marked.empty() || marked[c]);
    if (present[c]) listed.push_back(c);
  }
  meta.chunks_present = std::move(listed);
  directory.set_present(std::move(present));
  return Status::Ok();
}

}  // namespace b2ndfs::store
