// Private to stores: the ByteSources of a store's leaves. A leaf is a byte
// range of another source: of the .b2z file (a stored zip member, read in
// place), or of an embed frame's decompressed stream. Each keeps the source
// it reads (so the version it was opened at) alive, and answers with the
// signature the tree derived for the leaf from its store's.
#pragma once

#include <memory>
#include <string>

#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/stores/embed_frame.h"

namespace b2ndfs::stores::internal {

// Bytes [offset, offset + length) of `base`'s frame part.
std::shared_ptr<const source::ByteSource> MakeSliceSource(
    std::shared_ptr<const source::ByteSource> base, int64_t offset, int64_t length,
    source::Signature signature, std::string name);

// Bytes [offset, offset + length) of the decompressed stream of the embed
// frame that lies at bytes [frame_offset, frame_offset + frame_size) of
// `base`.
std::shared_ptr<const source::ByteSource> MakeEmbedLeafSource(
    std::shared_ptr<const source::ByteSource> base, int64_t frame_offset, int64_t frame_size,
    std::shared_ptr<const EmbedFrame> frame, int64_t offset, int64_t length,
    source::Signature signature, std::string name);

// A FrameReadAt over bytes [frame_offset, frame_offset + frame_size) of `base`.
FrameReadAt ReaderOf(const source::ByteSource* base, int64_t frame_offset, int64_t frame_size);

}  // namespace b2ndfs::stores::internal
