// Container's meta.json: what the store knows of the container (frame,
// metalayers, vlmeta, content tags, a carrier's evaluation, a proxy's
// chunks) as a format::MetaJsonInput, rendered above the store by the
// catalog given at open (file_catalog.h), kept once rendered.
#include <mutex>
#include <utility>

#include "b2ndfs/codec/builtin.h"
#include "b2ndfs/format/meta_json.h"
#include "b2ndfs/store/container.h"
#include "carrier.h"
#include "frame_metadata.h"

namespace b2ndfs::store {

const std::string& Container::meta_json() const {
  if (meta_json_ready_.load(std::memory_order_acquire)) return meta_json_;
  std::lock_guard<std::mutex> lock(meta_json_mutex_);
  if (meta_json_ready_.load(std::memory_order_relaxed)) return meta_json_;
  FrameMetadata& src = *meta_;
  const int64_t held = src.VlmetaBytes();
  try {
    src.DecodeVlmeta(*context_->decompressors);
    format::MetaJsonInput input = MetaInput();
    meta_json_ = catalog_ != nullptr ? catalog_->RenderMetaJson(*this, std::move(input))
                                     : format::RenderMetaJson(input);
  } catch (...) {
    src.vlmeta = {};  // decoded again next time
    throw;
  }
  // Rendered: the vlmetalayers need not be kept.
  src.DropVlmeta();
  AddCharge(static_cast<int64_t>(meta_json_.capacity()) - held);
  meta_json_ready_.store(true, std::memory_order_release);
  return meta_json_;
}

std::string Container::CodecName() const {
  return b2ndfs::CodecName(meta_->frame_info.codec, meta_->frame_info.udcodec);
}

format::MetaJsonInput Container::MetaInput() const {
  const FrameMetadata& src = *meta_;
  const geometry::ArrayLayout& layout = *layout_;
  format::MetaJsonInput in;
  in.format = format_name_;
  in.shape = layout.shape();
  in.chunkshape = layout.chunkshape();
  in.blockshape = layout.blockshape();
  if (src.ndmeta) {
    in.version = src.ndmeta->version;
    in.dtype = src.ndmeta->dtype;
    in.dtype_format = src.ndmeta->dtype_format;
    in.ndmeta = &*src.ndmeta;
  } else {
    in.version = src.frame_info.format_version;
  }
  in.itemsize = layout.itemsize();
  in.nbytes = layout.NumItems() * layout.itemsize();
  in.cbytes = src.frame_info.cbytes;
  in.nchunks = layout.NumChunks();
  in.frame = &src.frame_info;
  in.vlmeta = src.vlmeta;
  in.notes = voxel_geometry_.notes;
  if (tag_.kind != ContentKind::kArray) in.content = format::ContentName(tag_.kind);
  in.serializer = tag_.serializer;
  if (tag_.kind == ContentKind::kCarrier) {
    in.evaluation_error = evaluation_error_;
    if (evaluation_) in.evaluated_operands = evaluation_->resolved();
    in.recipe = format::NamedBytes{tag_.recipe_vlmeta, {}};
    for (const auto& vl : src.vlmeta) {
      if (vl.name == tag_.recipe_vlmeta) in.recipe->content = vl.content;
    }
  }
  in.chunks_present = src.chunks_present;
  for (const auto& m : src.frame_info.metalayers) {
    static const char* const kTags[] = {"batcharray", "vlarray",   "listarray",
                                        "b2o",        "LazyArray", "proxy-source"};
    for (const char* t : kTags) {
      if (m.name == t) in.tags.push_back(m);
    }
  }
  // Chunks naming a plugin read as EIO (codec refuses them); say why here.
  in.unsupported = codec::UnsupportedPipeline(src.frame_info.codec, src.frame_info.udcodec,
                                              src.frame_info.filters);
  return in;
}

}  // namespace b2ndfs::store
