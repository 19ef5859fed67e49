// Container: opening a generation (the frame's metadata, chunk index and
// layout, then the parts that read) and what it holds, charged to the
// cache. Its other pieces: container_meta.cc, container_carrier.cc,
// container_read.cc and the private headers container.h lists.
#include "b2ndfs/store/container.h"

#include <algorithm>
#include <span>
#include <utility>

#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/meta_json.h"
#include "b2ndfs/store/worker_pool.h"
#include "b2ndfs/util/log.h"
#include "block_loader.h"
#include "box_reader.h"
#include "carrier.h"
#include "chunk_directory.h"
#include "counted_source.h"
#include "frame_layout.h"
#include "frame_metadata.h"
#include "proxy_mask.h"
#include "read_policy.h"

namespace b2ndfs::store {

namespace {

// What a container costs besides the buffers counted one by one: the
// objects, the frame description and the small vectors of its layout.
constexpr int64_t kContainerOverheadBytes = 4096;

// The frame's first and last bytes, when the policy says so (a network
// source): its header, its trailer and (but for arrays of tens of thousands
// of chunks) its chunk index lie in them, which parsing would otherwise ask
// for one after the other (six dependent reads: six round trips). Other
// bytes are read from the source.
class FrameWindows {
 public:
  FrameWindows(const CountedSource& reads, int64_t file_size)
      : reads_(reads), file_size_(file_size) {}

  // A window that could not be read fails the open with the source's
  // error: the reads it would have served, one by one, would each wait for
  // the same failing server again (and its retries) before saying so.
  Status Load(int64_t head_window, int64_t tail_window) {
    if (head_window <= 0) return Status::Ok();
    ends_[0].bytes.resize(static_cast<size_t>(std::min(head_window, file_size_)));
    ends_[1].begin =
        std::max(static_cast<int64_t>(ends_[0].bytes.size()), file_size_ - tail_window);
    ends_[1].bytes.resize(static_cast<size_t>(file_size_ - ends_[1].begin));
    const source::PartRead window_reads[2] = {
        {source::kFramePart, ends_[0].begin, ends_[0].bytes.size(), ends_[0].bytes.data()},
        {source::kFramePart, ends_[1].begin, ends_[1].bytes.size(), ends_[1].bytes.data()}};
    const size_t windows = ends_[0].bytes.empty() ? 0 : ends_[1].bytes.empty() ? 1 : 2;
    if (windows == 0) return Status::Ok();
    Status failed;
    reads_.ReadMany(std::span(window_reads, windows), [&](size_t i, const Status& status) {
      ends_[i].ok = status.ok();
      if (!status.ok() && failed.ok()) failed = status;
    });
    return failed.WithContext("frame header and trailer");
  }

  Result<std::vector<uint8_t>> ReadAt(int64_t offset, int64_t length) const {
    if (offset < 0 || length < 0 || offset > file_size_ || length > file_size_ - offset) {
      return InvalidData("read of " + std::to_string(length) + " bytes at " +
                         std::to_string(offset) + " passes the end of the " +
                         std::to_string(file_size_) + "-byte frame file");
    }
    for (const Window& end : ends_) {
      if (!end.Holds(offset, length)) continue;
      const auto first = end.bytes.begin() + (offset - end.begin);
      return std::vector<uint8_t>(first, first + length);
    }
    std::vector<uint8_t> bytes(static_cast<size_t>(length));
    B2NDFS_RETURN_IF_ERROR(reads_.Read(source::kFramePart, offset, length, bytes.data()));
    return bytes;
  }

 private:
  struct Window {
    int64_t begin = 0;
    std::vector<uint8_t> bytes;
    bool ok = false;

    bool Holds(int64_t offset, int64_t length) const {
      return ok && offset >= begin &&
             length <= static_cast<int64_t>(bytes.size()) - (offset - begin);
    }
  };

  const CountedSource& reads_;
  const int64_t file_size_;
  Window ends_[2];
};

}  // namespace

Container::Container(std::shared_ptr<const source::ByteSource> source, StoreContext* context,
                     uint64_t cache_id)
    : source_(std::move(source)),
      context_(context),
      cache_id_(cache_id),
      reads_(std::make_unique<CountedSource>(source_)),
      policy_(std::make_unique<ReadPolicy>(MakeReadPolicy(source_->cost(), *context_))) {}

Container::~Container() {
  AddCharge(-memory_bytes_.load(std::memory_order_relaxed));
  GlobalReadStats().containers_open--;
}

// Bytes this container holds, as memory_bytes(), the stats and the cache's
// budget count them.
void Container::AddCharge(int64_t delta) const {
  if (delta == 0) return;
  memory_bytes_ += delta;
  GlobalReadStats().metadata_bytes += delta;
  if (context_ != nullptr && context_->cache != nullptr) context_->cache->Charge(delta);
}

std::shared_ptr<const Container> Container::Open(std::shared_ptr<const source::ByteSource> source,
                                                 StoreContext* context, uint64_t cache_id,
                                                 const FileCatalog* catalog,
                                                 const OperandScope* scope) {
  std::shared_ptr<Container> container(new Container(std::move(source), context, cache_id));
  GlobalReadStats().containers_open++;
  GlobalReadStats().containers_opened++;
  Status status;
  try {
    status = container->Load(catalog);
    if (status.ok() && scope != nullptr && scope->opener != nullptr &&
        container->tag_.kind == ContentKind::kCarrier) {
      container->LoadEvaluation(*scope);
    }
  } catch (const std::bad_alloc&) {
    status = Status(ENOMEM, "out of memory while decoding the container");
  } catch (const std::exception& e) {
    status = InvalidData(std::string("unexpected error while decoding: ") + e.what());
  }
  if (!status.ok()) container->Fail(status);
  container->Charge();
  return container;
}

// A container that failed to open keeps its error (and meta.json saying it)
// and nothing of what reads.
void Container::Fail(const Status& status) {
  error_ = status.message().empty() ? "cannot decode container" : status.message();
  transient_ = reads_->failed() || status.error_number() == ENOMEM;
  reader_.reset();
  loader_.reset();
  evaluation_.reset();
  directory_.reset();
  layout_.reset();
  meta_.reset();
  meta_json_ = format::RenderErrorJson(error_);
  meta_json_ready_.store(true, std::memory_order_release);
  if (!transient_) {
    LogOnce("open:" + name(), LogLevel::kWarning, name() + ": cannot decode container: " + error_);
  }
}

void Container::Charge() {
  int64_t bytes = kContainerOverheadBytes + static_cast<int64_t>(meta_json_.capacity());
  if (meta_) {
    bytes += meta_->MetalayerBytes();
    if (directory_) bytes += directory_->index_bytes();
  }
  // Irregular layouts keep two int64 per chunk.
  if (layout_ && !layout_->regular()) bytes += 16 * layout_->NumChunks();
  const format::VoxelGeometry& g = voxel_geometry_;
  bytes += static_cast<int64_t>(8 * (g.spacing.capacity() + g.origin.capacity()));
  for (const auto* words : {&g.units, &g.axis_names, &g.notes}) {
    for (const std::string& w : *words) bytes += static_cast<int64_t>(sizeof w + w.capacity());
  }
  AddCharge(bytes);
}

Status Container::Load(const FileCatalog* catalog) {
  meta_ = std::make_unique<FrameMetadata>();
  B2NDFS_RETURN_IF_ERROR(LoadFrame());
  B2NDFS_ASSIGN_OR_RETURN(FrameLayout frame, LayoutOfFrame(meta_->frame_info, *directory_));
  format_name_ = std::move(frame.format_name);
  meta_->ndmeta = std::move(frame.ndmeta);
  layout_ = std::move(frame.layout);
  if (tag_.proxy) {
    B2NDFS_RETURN_IF_ERROR(
        LoadProxyMask(*meta_, *directory_, layout_->NumChunks(), *context_->decompressors));
  }
  const auto& nd = meta_->ndmeta;
  npy_descr_ = format::NpyDescr(nd ? nd->dtype : std::nullopt, layout_->itemsize());
  LoadReaders();
  // The few vlmetalayers that the imaging headers read (spacing, origin,
  // ...) are decompressed now; meta.json (and the vlmetalayers it shows)
  // waits for its first reader.
  voxel_geometry_ = meta_->DecodeVoxelGeometry(*context_->decompressors, layout_->shape().size());
  catalog_ = catalog;
  return Status::Ok();
}

// The frame's description, its content tags and its chunk index.
Status Container::LoadFrame() {
  auto frame_size = source_->PartSize(source::kFramePart);
  // The frame's size comes from the stat taken when the source was opened:
  // no I/O that could fail transiently, so a failure is about this version.
  if (!frame_size.ok()) return frame_size.status();
  const int64_t file_size = *frame_size;
  FrameWindows ends(*reads_, file_size);
  B2NDFS_RETURN_IF_ERROR(ends.Load(policy_->frame_head_window, policy_->frame_tail_window));
  format::ReadAt read_at = [&ends](int64_t offset, int64_t length) {
    return ends.ReadAt(offset, length);
  };
  B2NDFS_ASSIGN_OR_RETURN(meta_->frame_info, format::ParseFrame(read_at, file_size));
  const format::FrameInfo& info = meta_->frame_info;
  if (info.sparse != source_->sparse()) {
    return InvalidData(source_->sparse()
                           ? "chunks.b2frame is not a sparse-frame index"
                           : "the frame is a sparse-frame index without its directory");
  }
  // python-blosc2's tags say which views the frame has (format/vlen.h).
  B2NDFS_ASSIGN_OR_RETURN(tag_, format::DecodeContentTag(info.metalayers));
  std::vector<uint8_t> offsets_chunk;
  if (info.offsets_chunk_size > 0) {
    B2NDFS_ASSIGN_OR_RETURN(offsets_chunk,
                            ends.ReadAt(info.offsets_chunk_position, info.offsets_chunk_size));
  }
  auto directory = std::make_unique<ChunkDirectory>(*context_, cache_id_, *reads_, *policy_);
  // Contiguous frames: chunks lie between the header and the chunk index.
  B2NDFS_RETURN_IF_ERROR(directory
                             ->LoadIndex(std::move(offsets_chunk), info.nchunks, info.header_size,
                                         info.offsets_chunk_position)
                             .WithContext("chunk index"));
  directory_ = std::move(directory);
  return Status::Ok();
}

// The parts that read, now that the layout is known.
void Container::LoadReaders() {
  directory_->set_layout(&*layout_);
  const auto& nd = meta_->ndmeta;
  std::optional<codec::ArrayGeometry> geometry;
  if (nd) geometry = codec::ArrayGeometry{nd->shape, nd->chunkshape, nd->blockshape};
  // b2nd chunks hold the chunk shape padded to whole blocks; a plain
  // super-chunk's are unpadded, its last one possibly short.
  const bool padded = format_name_ != "schunk";
  loader_ = std::make_unique<BlockLoader>(*context_, cache_id_, *reads_, *policy_, *directory_,
                                          *layout_, padded, std::move(geometry));
  reader_ = std::make_unique<BoxReader>(*context_, cache_id_, *policy_, *layout_, *loader_);
}

}  // namespace b2ndfs::store
