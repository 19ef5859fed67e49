// store/proxy_mask (private to store): which chunks of a python-blosc2
// proxy cache hold data.
//
// A proxy cache holds the chunks its "proxy-fetched" vlmeta bitmap marks
// (python-blosc2 proxy.py; per block with "proxy-fetched-bpc" > 1, under
// "proxy-fetched-blocks"), and of those only the ones stored; without a
// bitmap (older proxy.py: unfetched chunks are uninitialised), the stored
// ones. The rest read as EIO, never as the zeros c-blosc2 would make.
// Errors: InvalidData for a malformed bitmap or count; a vlmetalayer's
// decompression errors.
#pragma once

#include <cstdint>

#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::store {

class ChunkDirectory;
struct FrameMetadata;

// Sets meta.chunks_present and the directory's present chunks (of nchunks).
Status LoadProxyMask(FrameMetadata& meta, ChunkDirectory& directory, int64_t nchunks,
                     codec::DecompressorPool& pool);

}  // namespace b2ndfs::store
