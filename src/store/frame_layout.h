// store/frame_layout (private to store): the array a frame declares, from
// its shape metalayer ("b2nd" or "caterva") or, for a plain super-chunk, as
// a 1-D array of typesize items in the super-chunk's own chunks.
// Errors: InvalidData when the metalayers, the frame's sizes and its chunk
// index disagree; a super-chunk of chunks of varying size reads each chunk's
// header (at most 2^20 of them), whose errors are returned.
// Thread-safety: a pure function but for those header reads.
#pragma once

#include <optional>
#include <string>

#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/ndmeta.h"
#include "b2ndfs/geometry/geometry.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::store {

class ChunkDirectory;

struct FrameLayout {
  std::string format_name;  // "b2nd", "caterva" or "schunk"
  std::optional<format::NdMeta> ndmeta;
  geometry::ArrayLayout layout;
};

// `directory`: the frame's chunk index, loaded.
Result<FrameLayout> LayoutOfFrame(const format::FrameInfo& info, const ChunkDirectory& directory);

}  // namespace b2ndfs::store
