#include "b2ndfs/store/container.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "b2ndfs/codec/builtin.h"
#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/meta_json.h"
#include "b2ndfs/format/ndmeta.h"
#include "b2ndfs/store/worker_pool.h"
#include "b2ndfs/util/checked_math.h"
#include "b2ndfs/util/log.h"
#include "block_loader.h"
#include "box_reader.h"
#include "carrier.h"
#include "chunk_directory.h"
#include "counted_source.h"
#include "read_policy.h"

namespace b2ndfs::store {

using geometry::ArrayLayout;

size_t NextStatShard() noexcept {
  static std::atomic<size_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) % kStatShards;
}

ReadStats& GlobalReadStats() {
  static ReadStats stats;
  return stats;
}

namespace {

// A msgpack string saying that a variable-length metalayer is not shown.
std::vector<uint8_t> OmittedNote(int64_t size) {
  const std::string text = "(" + std::to_string(size) + " bytes, over b2ndfs's budget for vlmeta)";
  std::vector<uint8_t> out{0xd9, static_cast<uint8_t>(text.size())};  // str8
  out.insert(out.end(), text.begin(), text.end());
  return out;
}

// What a container costs besides the buffers counted one by one: the
// objects, the frame description and the small vectors of its layout.
constexpr int64_t kContainerOverheadBytes = 4096;

struct FrameWindow {
  int64_t begin = 0;
  std::vector<uint8_t> bytes;
  bool ok = false;

  bool Holds(int64_t offset, int64_t length) const {
    return ok && offset >= begin && length <= static_cast<int64_t>(bytes.size()) - (offset - begin);
  }
};

}  // namespace

struct Container::Metadata {
  format::FrameInfo frame_info;
  std::optional<format::NdMeta> ndmeta;
  std::vector<format::NamedBytes> vlmeta;  // decompressed contents, until rendered
  // A proxy cache's chunks that hold data (meta.json lists them).
  std::optional<std::vector<int64_t>> chunks_present;
};

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
  if (!status.ok()) {
    container->error_ = status.message().empty() ? "cannot decode container" : status.message();
    container->transient_ = container->reads_->failed() || status.error_number() == ENOMEM;
    container->reader_.reset();
    container->loader_.reset();
    container->evaluation_.reset();
    container->directory_.reset();
    container->layout_.reset();
    container->meta_.reset();
    container->meta_json_ = format::RenderErrorJson(container->error_);
    container->meta_json_ready_.store(true, std::memory_order_release);
    if (!container->transient_) {
      LogOnce("open:" + container->name(), LogLevel::kWarning,
              container->name() + ": cannot decode container: " + container->error_);
    }
  }
  container->Charge();
  return container;
}

void Container::Charge() {
  int64_t bytes = kContainerOverheadBytes + static_cast<int64_t>(meta_json_.capacity());
  if (meta_) {
    bytes += VlmetaBytes();
    if (directory_) bytes += directory_->index_bytes();
    for (const auto& m : meta_->frame_info.metalayers) {
      bytes += static_cast<int64_t>(m.content.capacity() + m.name.capacity());
    }
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
  meta_ = std::make_unique<Metadata>();
  Metadata& src = *meta_;
  auto frame_size = source_->PartSize(source::kFramePart);
  // The frame's size comes from the stat taken when the source was opened:
  // no I/O that could fail transiently, so a failure is about this version.
  if (!frame_size.ok()) return frame_size.status();
  const int64_t file_size = *frame_size;
  // The frame's first and last bytes, when the policy says so (a network
  // source): its header, its trailer and (but for arrays of tens of
  // thousands of chunks) its chunk index lie in them, which parsing would
  // otherwise ask for one after the other (six dependent reads: six round
  // trips).
  FrameWindow ends[2];
  if (policy_->frame_head_window > 0) {
    ends[0].bytes.resize(static_cast<size_t>(std::min(policy_->frame_head_window, file_size)));
    ends[1].begin = std::max(static_cast<int64_t>(ends[0].bytes.size()),
                             file_size - policy_->frame_tail_window);
    ends[1].bytes.resize(static_cast<size_t>(file_size - ends[1].begin));
  }
  const source::PartRead window_reads[2] = {
      {source::kFramePart, ends[0].begin, ends[0].bytes.size(), ends[0].bytes.data()},
      {source::kFramePart, ends[1].begin, ends[1].bytes.size(), ends[1].bytes.data()}};
  // A window that could not be read fails the open with the source's
  // error: the reads it would have served, one by one, would each wait for
  // the same failing server again (and its retries) before saying so.
  const size_t windows = ends[0].bytes.empty() ? 0 : ends[1].bytes.empty() ? 1 : 2;
  if (windows > 0) {
    Status failed;
    reads_->ReadMany(std::span(window_reads, windows), [&](size_t i, const Status& status) {
      ends[i].ok = status.ok();
      if (!status.ok() && failed.ok()) failed = status;
    });
    B2NDFS_RETURN_IF_ERROR(failed.WithContext("frame header and trailer"));
  }
  format::ReadAt read_at = [this, file_size, &ends](
                               int64_t offset, int64_t length) -> Result<std::vector<uint8_t>> {
    if (offset < 0 || length < 0 || offset > file_size || length > file_size - offset) {
      return InvalidData("read of " + std::to_string(length) + " bytes at " +
                         std::to_string(offset) + " passes the end of the " +
                         std::to_string(file_size) + "-byte frame file");
    }
    for (const FrameWindow& end : ends) {
      if (!end.Holds(offset, length)) continue;
      const auto first = end.bytes.begin() + (offset - end.begin);
      return std::vector<uint8_t>(first, first + length);
    }
    std::vector<uint8_t> bytes(static_cast<size_t>(length));
    B2NDFS_RETURN_IF_ERROR(reads_->Read(source::kFramePart, offset, length, bytes.data()));
    return bytes;
  };
  B2NDFS_ASSIGN_OR_RETURN(src.frame_info, format::ParseFrame(read_at, file_size));
  const format::FrameInfo& info = src.frame_info;
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
                            read_at(info.offsets_chunk_position, info.offsets_chunk_size));
  }
  auto directory = std::make_unique<ChunkDirectory>(*context_, cache_id_, *reads_, *policy_);
  // Contiguous frames: chunks lie between the header and the chunk index.
  B2NDFS_RETURN_IF_ERROR(directory
                             ->LoadIndex(std::move(offsets_chunk), info.nchunks, info.header_size,
                                         info.offsets_chunk_position)
                             .WithContext("chunk index"));
  directory_ = std::move(directory);
  B2NDFS_RETURN_IF_ERROR(LoadLayout());
  if (tag_.proxy) B2NDFS_RETURN_IF_ERROR(LoadProxyMask());
  const auto& nd = src.ndmeta;
  npy_descr_ = format::NpyDescr(nd ? nd->dtype : std::nullopt, layout_->itemsize());
  // The parts that read, now that the layout is known.
  directory_->set_layout(&*layout_);
  std::optional<codec::ArrayGeometry> geometry;
  if (nd) geometry = codec::ArrayGeometry{nd->shape, nd->chunkshape, nd->blockshape};
  // b2nd chunks hold the chunk shape padded to whole blocks; a plain
  // super-chunk's are unpadded, its last one possibly short.
  const bool padded = format_name_ != "schunk";
  loader_ = std::make_unique<BlockLoader>(*context_, cache_id_, *reads_, *policy_, *directory_,
                                          *layout_, padded, std::move(geometry));
  reader_ = std::make_unique<BoxReader>(*context_, cache_id_, *policy_, *layout_, *loader_);
  DecodeVoxelGeometry();
  // meta.json (and the vlmetalayers it shows) waits for its first reader.
  catalog_ = catalog;
  return Status::Ok();
}

// The few vlmetalayers that the imaging headers read (spacing, origin, ...)
// are decompressed at open, each at most 64 KiB: the headers are made at
// lookup, long after meta.json (which decodes the rest) dropped them.
void Container::DecodeVoxelGeometry() {
  constexpr int64_t kMaxGeometryBytes = 64 << 10;
  std::vector<format::NamedBytes> decoded;
  std::optional<codec::DecompressorPool::Lease> lease;
  for (const auto& vl : meta_->frame_info.vlmetalayers) {
    if (!format::IsVoxelGeometryKey(vl.name)) continue;
    auto chunk_info = codec::InspectChunk(vl.content);
    std::vector<uint8_t> out;
    if (chunk_info.ok() && chunk_info->nbytes <= kMaxGeometryBytes) {
      if (!lease) lease.emplace(context_->decompressors->Acquire());
      out.resize(static_cast<size_t>(chunk_info->nbytes));
      if (!(*lease)->DecompressAll(vl.content, out).ok()) out.clear();
    }
    decoded.push_back({vl.name, std::move(out)});
  }
  voxel_geometry_ = format::DecodeVoxelGeometry(decoded, layout_->shape().size());
}

const std::string& Container::meta_json() const {
  if (meta_json_ready_.load(std::memory_order_acquire)) return meta_json_;
  std::lock_guard<std::mutex> lock(meta_json_mutex_);
  if (meta_json_ready_.load(std::memory_order_relaxed)) return meta_json_;
  Metadata& src = *meta_;
  const int64_t held = VlmetaBytes();
  try {
    DecodeVlmeta();
    meta_json_ = RenderMeta(catalog_);
  } catch (...) {
    src.vlmeta = {};  // decoded again next time
    throw;
  }
  // Rendered: the vlmetalayers need not be kept.
  src.vlmeta = {};
  src.frame_info.vlmetalayers = {};
  AddCharge(static_cast<int64_t>(meta_json_.capacity()) - held);
  meta_json_ready_.store(true, std::memory_order_release);
  return meta_json_;
}

// What the vlmetalayers, kept until meta.json is rendered, hold.
int64_t Container::VlmetaBytes() const {
  int64_t bytes = 0;
  for (const auto& vl : meta_->frame_info.vlmetalayers) {
    bytes += static_cast<int64_t>(vl.content.capacity() + vl.name.capacity());
  }
  return bytes;
}

// Variable-length metalayers are stored as Blosc2 chunks; fall back to the
// raw bytes for anything that is not one. A budget bounds what is
// decompressed and shown (a tiny frame can declare thousands of 16 MiB
// runs of zeros); what passes it is replaced by a note.
void Container::DecodeVlmeta() const {
  Metadata& src = *meta_;
  src.vlmeta.clear();
  constexpr int64_t kVlmetaBudget = 4 << 20;
  constexpr size_t kMaxVlmetaShown = 256;
  int64_t spent = 0;
  auto lease = context_->decompressors->Acquire();
  for (const auto& vl : src.frame_info.vlmetalayers) {
    format::NamedBytes decoded{vl.name, vl.content};
    int64_t size = static_cast<int64_t>(vl.content.size());
    auto chunk_info = codec::InspectChunk(vl.content);
    if (chunk_info.ok()) size = chunk_info->nbytes;
    if (spent + size > kVlmetaBudget || src.vlmeta.size() >= kMaxVlmetaShown) {
      decoded.content = OmittedNote(size);
    } else if (chunk_info.ok()) {
      std::vector<uint8_t> out(static_cast<size_t>(chunk_info->nbytes));
      if (lease->DecompressAll(vl.content, out).ok()) decoded.content = std::move(out);
    }
    spent += std::min<int64_t>(size, kVlmetaBudget);
    src.vlmeta.push_back(std::move(decoded));
  }
}

Status Container::LoadLayout() {
  Metadata& src = *meta_;
  const format::FrameInfo& info = src.frame_info;
  // The shape metalayer decides the layout.
  const format::NamedBytes* b2nd = nullptr;
  const format::NamedBytes* caterva = nullptr;
  for (const auto& m : info.metalayers) {
    if (m.name == "b2nd") b2nd = &m;
    if (m.name == "caterva") caterva = &m;
  }
  const int64_t nchunks = directory_->nchunks();
  if (b2nd != nullptr || caterva != nullptr) {
    auto decoded = b2nd != nullptr ? format::DecodeB2ndMetalayer(b2nd->content)
                                   : format::DecodeCatervaMetalayer(caterva->content);
    if (!decoded.ok()) return decoded.status();
    src.ndmeta = std::move(decoded).value();
    const format::NdMeta& nd = *src.ndmeta;
    format_name_ = nd.format;
    // The item size is what makes chunk sizes add up: a chunk holds the chunk
    // shape rounded up to whole blocks.
    std::vector<int64_t> ext(nd.chunkshape.size());
    for (size_t i = 0; i < ext.size(); ++i) {
      ext[i] = CeilDiv(nd.chunkshape[i], nd.blockshape[i]) * nd.blockshape[i];
    }
    auto ext_items = CheckedProduct(ext);
    if (!ext_items || *ext_items <= 0) return InvalidData("chunk shape is too large");
    int64_t itemsize = info.typesize;
    if (info.chunksize > 0 && info.chunksize % *ext_items == 0) {
      itemsize = info.chunksize / *ext_items;
    } else if (info.chunksize > 0) {
      return InvalidData("frame chunks are " + std::to_string(info.chunksize) +
                         " bytes, which is not a whole number of items for a chunk of " +
                         std::to_string(*ext_items) + " items");
    }
    if (itemsize <= 0) return InvalidData("item size is 0");
    // A dtype of another item size is served by the chunks' item size, as
    // c-blosc2 reads it; format::CheckDtype says so in meta.json.
    B2NDFS_ASSIGN_OR_RETURN(ArrayLayout layout,
                            ArrayLayout::Regular(nd.shape, nd.chunkshape, nd.blockshape, itemsize));
    if (layout.NumChunks() != nchunks) {
      return InvalidData("the shape needs " + std::to_string(layout.NumChunks()) +
                         " chunks but the frame holds " + std::to_string(nchunks));
    }
    layout_ = std::move(layout);
  } else {
    // A plain super-chunk: a 1-D array of typesize items whose chunks are the
    // super-chunk's own, unpadded (the last one may be short).
    format_name_ = "schunk";
    const int64_t typesize = info.typesize;
    if (typesize <= 0) return InvalidData("typesize is 0");
    if (info.nbytes % typesize != 0) {
      return InvalidData("the frame holds " + std::to_string(info.nbytes) +
                         " bytes, not a whole number of " + std::to_string(typesize) +
                         "-byte items");
    }
    if (info.chunksize > 0) {
      // Equal chunks (c-blosc2's only well-formed case): no chunk needs to
      // be read to know the layout, however many there are.
      if (info.chunksize % typesize != 0) {
        return InvalidData("chunks of " + std::to_string(info.chunksize) +
                           " bytes do not hold whole items");
      }
      const int64_t chunk_items = info.chunksize / typesize;
      int64_t block_items = info.blocksize / typesize;
      if (block_items <= 0 || chunk_items % block_items != 0) block_items = chunk_items;
      B2NDFS_ASSIGN_OR_RETURN(
          ArrayLayout layout,
          ArrayLayout::Regular({info.nbytes / typesize}, {chunk_items}, {block_items}, typesize));
      if (layout.NumChunks() != nchunks) {
        return InvalidData("the frame's size needs " + std::to_string(layout.NumChunks()) +
                           " chunks but its index holds " + std::to_string(nchunks));
      }
      layout_ = std::move(layout);
    } else {
      // Chunks of varying size: each chunk's header says how long it is.
      constexpr int64_t kMaxVariableChunks = int64_t{1} << 20;
      if (nchunks > kMaxVariableChunks) {
        return InvalidData("the frame has " + std::to_string(nchunks) +
                           " chunks of varying size; b2ndfs reads at most " +
                           std::to_string(kMaxVariableChunks));
      }
      std::vector<int64_t> chunk_items(static_cast<size_t>(nchunks));
      std::vector<int64_t> block_items(static_cast<size_t>(nchunks));
      int64_t total = 0;
      for (int64_t c = 0; c < nchunks; ++c) {
        B2NDFS_ASSIGN_OR_RETURN(const ChunkRef ref, directory_->Locate(c));
        if (ref.kind != format::ChunkKind::kStored) {
          return InvalidData("chunk " + std::to_string(c) +
                             " is a run of special values in a frame without a chunk size");
        }
        B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, directory_->ReadHeader(c));
        if (ci.nbytes % typesize != 0) {
          return InvalidData("chunk " + std::to_string(c) + " holds " + std::to_string(ci.nbytes) +
                             " bytes, not a whole number of " + std::to_string(typesize) +
                             "-byte items");
        }
        chunk_items[c] = ci.nbytes / typesize;
        int64_t bi = ci.blocksize / typesize;
        if (bi <= 0 || bi > chunk_items[c]) bi = std::max<int64_t>(chunk_items[c], 1);
        block_items[c] = bi;
        auto t = CheckedAdd(total, ci.nbytes);
        if (!t) return InvalidData("chunk sizes overflow");
        total = *t;
      }
      if (total != info.nbytes) {
        return InvalidData("chunks hold " + std::to_string(total) + " bytes but the frame says " +
                           std::to_string(info.nbytes));
      }
      B2NDFS_ASSIGN_OR_RETURN(ArrayLayout layout,
                              ArrayLayout::Irregular1D(chunk_items, block_items, typesize));
      layout_ = std::move(layout);
    }
  }

  return Status::Ok();
}

// A carrier whose expression can be computed as NumPy would is served as an
// array whose blocks are made, not decompressed (carrier.h); otherwise
// meta.json's "evaluation" says why not. Never an error of the container.
void Container::LoadEvaluation(const OperandScope& scope) {
  auto recipe = DecompressedVlmeta(tag_.recipe_vlmeta);
  if (!recipe.ok() || !*recipe) return;  // meta.json says what is wrong with it
  EvaluationAttempt attempt = PrepareEvaluation(**recipe, *layout_, npy_descr_, scope);
  evaluation_error_ = std::move(attempt.error);
  watched_ = std::move(attempt.watched);
  if (attempt.evaluation) {
    evaluation_ = std::move(attempt.evaluation);
    // The loader is ours alone until Open() returns.
    const_cast<BlockLoader&>(*loader_).set_maker(evaluation_.get());
  }
}

std::optional<struct stat> Container::derived_readers() const {
  return evaluation_ ? evaluation_->readers() : std::nullopt;
}

// A vlmeta entry's decompressed bytes (at most 64 MiB), or nullopt.
Result<std::optional<std::vector<uint8_t>>> Container::DecompressedVlmeta(
    const std::string& name) const {
  for (const auto& vl : meta_->frame_info.vlmetalayers) {
    if (vl.name != name) continue;
    B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, codec::InspectChunk(vl.content));
    if (ci.nbytes > (64 << 20)) return InvalidData("vlmeta '" + name + "' is too large");
    std::vector<uint8_t> out(static_cast<size_t>(ci.nbytes));
    auto lease = context_->decompressors->Acquire();
    B2NDFS_RETURN_IF_ERROR(lease->DecompressAll(vl.content, out).WithContext("vlmeta " + name));
    return std::optional<std::vector<uint8_t>>(std::move(out));
  }
  return std::optional<std::vector<uint8_t>>();
}

// A proxy cache holds the chunks its "proxy-fetched" vlmeta bitmap marks
// (python-blosc2 proxy.py; per block with "proxy-fetched-bpc" > 1, under
// "proxy-fetched-blocks"), and of those only the ones stored; without a
// bitmap (older proxy.py: unfetched chunks are uninitialised), the stored
// ones. The rest read as EIO, never as the zeros c-blosc2 would make.
Status Container::LoadProxyMask() {
  auto vlmeta = [&](const std::string& name) { return DecompressedVlmeta(name); };
  const int64_t nchunks = layout_->NumChunks();
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
    B2NDFS_ASSIGN_OR_RETURN(const ChunkRef ref, directory_->Locate(c));
    present[c] = ref.kind != format::ChunkKind::kUninitialized && (marked.empty() || marked[c]);
    if (present[c]) listed.push_back(c);
  }
  meta_->chunks_present = std::move(listed);
  directory_->set_present(std::move(present));
  return Status::Ok();
}

std::string Container::CodecName() const {
  return b2ndfs::CodecName(meta_->frame_info.codec, meta_->frame_info.udcodec);
}

std::string Container::RenderMeta(const FileCatalog* catalog) const {
  const Metadata& src = *meta_;
  const ArrayLayout& layout = *layout_;
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
  if (catalog != nullptr) {
    for (auto& f : catalog->Describe(*this)) {
      in.files.push_back(
          {std::move(f.name), std::move(f.shape), f.size, std::move(f.absent), std::move(f.note)});
    }
  }
  return format::RenderMetaJson(in);
}

}  // namespace b2ndfs::store
