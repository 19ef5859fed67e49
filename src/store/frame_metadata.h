// store/frame_metadata (private to store): what a frame says besides its
// chunks, as its Container keeps it, and its variable-length metalayers.
//
// The frame's metalayers and vlmetalayers (compressed, each a Blosc2 chunk)
// are kept until meta.json has shown them; the decoded shape metalayer and a
// proxy cache's chunks present (proxy_mask.h) for as long as the container
// lives. The vlmetalayers are decompressed where they are needed: the few
// the imaging headers read (voxel geometry) at open, a carrier's recipe and
// a proxy's bitmaps at open, and all of them, within a budget, for meta.json.
// Lifetime: owned by its Container. Thread-safety: none of its own (the
// Container renders meta.json under its lock); const methods from any
// thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/ndmeta.h"
#include "b2ndfs/format/voxel_geometry.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::store {

struct FrameMetadata {
  format::FrameInfo frame_info;
  std::optional<format::NdMeta> ndmeta;
  // Every vlmetalayer decompressed (DecodeVlmeta), while meta.json renders.
  std::vector<format::NamedBytes> vlmeta;
  // A proxy cache's chunks that hold data (meta.json lists them).
  std::optional<std::vector<int64_t>> chunks_present;

  // Bytes the metalayers and the (compressed) vlmetalayers hold.
  int64_t MetalayerBytes() const;
  int64_t VlmetaBytes() const;
  // Fills `vlmeta`: each vlmetalayer decompressed, or its raw bytes when it
  // is not a Blosc2 chunk. A budget bounds what is decompressed and shown (a
  // tiny frame can declare thousands of 16 MiB runs of zeros); what passes
  // it is replaced by a note.
  void DecodeVlmeta(codec::DecompressorPool& pool);
  // Forgets the vlmetalayers once meta.json has shown them.
  void DropVlmeta();
  // A vlmeta entry's decompressed bytes (at most 64 MiB), or nullopt.
  Result<std::optional<std::vector<uint8_t>>> DecompressedVlmeta(
      const std::string& name, codec::DecompressorPool& pool) const;
  // Voxel size, origin, units and axis names, from the vlmetalayers that
  // say them (each at most 64 KiB).
  format::VoxelGeometry DecodeVoxelGeometry(codec::DecompressorPool& pool, size_t ndim) const;
};

}  // namespace b2ndfs::store
