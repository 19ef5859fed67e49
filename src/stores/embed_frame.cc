#include "b2ndfs/stores/embed_frame.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/meta_json.h"

namespace b2ndfs::stores {
namespace {

constexpr int64_t kMaxEmbedChunks = int64_t{1} << 20;

// Bytes of decompressed chunks kept by every EmbedFrame of the process.
std::atomic<int64_t> g_kept_bytes{0};

Status Bad(const std::string& what) { return InvalidData("embed store frame: " + what); }

// A vlmetalayer's content: a Blosc2 chunk (blosc2_vlmeta_add compresses it),
// decompressed; the raw bytes when it is not one.
Result<std::vector<uint8_t>> DecompressVlmeta(const std::vector<uint8_t>& content, int64_t budget) {
  auto info = codec::InspectChunk(content);
  if (!info.ok()) return content;
  if (info->nbytes > budget)
    return Bad("a vlmetalayer of " + std::to_string(info->nbytes) + " bytes");
  std::vector<uint8_t> out(static_cast<size_t>(info->nbytes));
  codec::Decompressor d;
  B2NDFS_RETURN_IF_ERROR(d.DecompressAll(content, out));
  return out;
}

std::string ValueJson(std::span<const uint8_t> bytes) {
  if (auto json = format::MsgpackToJson(bytes)) return *json;
  return "{\"base64\": " + format::JsonQuote(format::Base64Encode(bytes)) + "}";
}

}  // namespace

Result<std::vector<std::pair<std::string, std::vector<uint8_t>>>> FrameVlmeta(
    const FrameReadAt& read, int64_t frame_size) {
  B2NDFS_ASSIGN_OR_RETURN(format::FrameInfo info, format::ParseFrame(read, frame_size));
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  int64_t spent = 0;
  for (const auto& vl : info.vlmetalayers) {
    auto value = DecompressVlmeta(vl.content, kVlmetaBudget - spent);
    if (!value.ok()) continue;
    spent += static_cast<int64_t>(value->size());
    out.emplace_back(vl.name, std::move(value).value());
  }
  return out;
}

Result<std::string> FrameVlmetaJson(const FrameReadAt& read, int64_t frame_size,
                                    const std::vector<std::string>& skip) {
  B2NDFS_ASSIGN_OR_RETURN(format::FrameInfo info, format::ParseFrame(read, frame_size));
  std::string out = "{";
  int64_t spent = 0;
  bool first = true;
  for (const auto& vl : info.vlmetalayers) {
    if (std::find(skip.begin(), skip.end(), vl.name) != skip.end()) continue;
    out += first ? "" : ", ";
    first = false;
    out += format::JsonQuote(vl.name) + ": ";
    auto value = DecompressVlmeta(vl.content, kVlmetaBudget - spent);
    if (!value.ok()) {
      out += "{\"omitted\": true}";
      continue;
    }
    spent += static_cast<int64_t>(value->size());
    out += ValueJson(*value);
  }
  return out + "}";
}

Result<std::shared_ptr<const EmbedFrame>> EmbedFrame::Open(const FrameReadAt& read,
                                                           int64_t frame_size) {
  B2NDFS_ASSIGN_OR_RETURN(format::FrameInfo info, format::ParseFrame(read, frame_size));
  std::shared_ptr<EmbedFrame> frame(new EmbedFrame());
  for (const auto& m : info.metalayers) {
    if (m.name == "b2embed" || m.name == "b2dict" || m.name == "b2tree") frame->tag_ = m.name;
  }
  const format::NamedBytes* estore = nullptr;
  for (const auto& vl : info.vlmetalayers) {
    if (vl.name == "estore_metadata") estore = &vl;
  }
  if (estore == nullptr && frame->tag_.empty()) {
    return Bad(
        "neither a b2embed, b2dict or b2tree metalayer nor estore_metadata: not an EmbedStore");
  }
  if (estore != nullptr) {
    B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                            DecompressVlmeta(estore->content, kVlmetaBudget));
    B2NDFS_ASSIGN_OR_RETURN(frame->map_, format::DecodeEmbedMap(bytes));
  }
  B2NDFS_ASSIGN_OR_RETURN(frame->vlmeta_json_,
                          FrameVlmetaJson(read, frame_size, {"estore_metadata"}));
  if (info.sparse) return Bad("a sparse frame");
  frame->frame_size_ = frame_size;
  frame->stream_size_ = info.nbytes;
  frame->chunksize_ = info.chunksize;
  if (info.nchunks == 0) return std::shared_ptr<const EmbedFrame>(std::move(frame));
  if (info.typesize != 1) return Bad("items of " + std::to_string(info.typesize) + " bytes, not 1");
  if (info.variable_chunks || info.chunksize <= 0) return Bad("chunks of variable size");
  if (info.chunksize > kMaxEmbedChunkSize)
    return Bad("chunks of " + std::to_string(info.chunksize) + " bytes");
  if (info.nchunks > kMaxEmbedChunks ||
      info.nchunks != (info.nbytes + info.chunksize - 1) / info.chunksize) {
    return Bad(std::to_string(info.nchunks) + " chunks for " + std::to_string(info.nbytes) +
               " bytes in chunks of " + std::to_string(info.chunksize));
  }
  B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> index_chunk,
                          read(info.offsets_chunk_position, info.offsets_chunk_size));
  B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, codec::InspectChunk(index_chunk));
  if (ci.nbytes != info.nchunks * 8) return Bad("chunk index of the wrong size");
  std::vector<uint8_t> raw(static_cast<size_t>(ci.nbytes));
  codec::Decompressor d;
  B2NDFS_RETURN_IF_ERROR(d.DecompressAll(index_chunk, raw));
  frame->chunk_positions_.resize(static_cast<size_t>(info.nchunks));
  for (int64_t i = 0; i < info.nchunks; ++i) {
    int64_t value;
    std::memcpy(&value, raw.data() + i * 8, 8);
    B2NDFS_ASSIGN_OR_RETURN(format::ChunkLocation at, format::LocateChunk(info, value));
    if (at.kind == format::ChunkKind::kZeros) {
      frame->chunk_positions_[i] = -1;
    } else if (at.kind == format::ChunkKind::kStored) {
      frame->chunk_positions_[i] = at.offset;
    } else {
      return Bad("chunk " + std::to_string(i) + " is uninitialised or NaN");
    }
  }
  return std::shared_ptr<const EmbedFrame>(std::move(frame));
}

EmbedFrame::~EmbedFrame() { g_kept_bytes.fetch_sub(kept_bytes_, std::memory_order_relaxed); }

int64_t EmbedFrame::memory_bytes() const {
  int64_t bytes = static_cast<int64_t>(sizeof(*this) + chunk_positions_.capacity() * 8 +
                                       vlmeta_json_.capacity());
  for (const auto& e : map_.entries) {
    bytes += static_cast<int64_t>(sizeof(e) + e.key.capacity() + e.urlbase.capacity() +
                                  e.path.capacity() + e.problem.capacity());
  }
  // Kept chunks are bounded apart (kMaxKeptBytes).
  return bytes;
}

Result<std::shared_ptr<const std::vector<uint8_t>>> EmbedFrame::Chunk(const FrameReadAt& read,
                                                                      int64_t index) const {
  {
    std::lock_guard lock(mutex_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->first == index) {
        kept_.splice(kept_.begin(), kept_, it);
        return kept_.front().second;
      }
    }
  }
  const int64_t nbytes = std::min(chunksize_, stream_size_ - index * chunksize_);
  auto out = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(nbytes));
  const int64_t position = chunk_positions_[static_cast<size_t>(index)];
  if (position >= 0) {
    const std::string what = "chunk " + std::to_string(index);
    B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> header, read(position, codec::kChunkHeaderSize));
    B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, codec::InspectChunkHeader(header));
    if (ci.nbytes != nbytes)
      return Bad(what + " holds " + std::to_string(ci.nbytes) + " bytes, not " +
                 std::to_string(nbytes));
    if (ci.cbytes > frame_size_ - position) return Bad(what + " runs past the frame");
    B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> chunk, read(position, ci.cbytes));
    codec::Decompressor d;
    B2NDFS_RETURN_IF_ERROR(d.DecompressAll(chunk, *out).WithContext(what));
  }
  std::lock_guard lock(mutex_);
  const int64_t size = static_cast<int64_t>(out->size());
  if (kept_.size() >= kKeptChunks) {
    const int64_t dropped = static_cast<int64_t>(kept_.back().second->size());
    kept_.pop_back();
    kept_bytes_ -= dropped;
    g_kept_bytes.fetch_sub(dropped, std::memory_order_relaxed);
  }
  if (g_kept_bytes.fetch_add(size, std::memory_order_relaxed) + size <= kMaxKeptBytes) {
    kept_.emplace_front(index, out);
    kept_bytes_ += size;
  } else {
    g_kept_bytes.fetch_sub(size, std::memory_order_relaxed);
  }
  return std::shared_ptr<const std::vector<uint8_t>>(std::move(out));
}

Status EmbedFrame::ReadStream(const FrameReadAt& read, int64_t offset, size_t length,
                              uint8_t* out) const {
  if (offset < 0 || offset > stream_size_ || static_cast<int64_t>(length) > stream_size_ - offset) {
    return Bad("bytes " + std::to_string(offset) + "+" + std::to_string(length) +
               " outside the stream of " + std::to_string(stream_size_));
  }
  size_t done = 0;
  while (done < length) {
    const int64_t at = offset + static_cast<int64_t>(done);
    const int64_t index = at / chunksize_;
    B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const std::vector<uint8_t>> chunk, Chunk(read, index));
    const int64_t inside = at - index * chunksize_;
    const size_t n = std::min(length - done, static_cast<size_t>(chunk->size() - inside));
    std::memcpy(out + done, chunk->data() + inside, n);
    done += n;
  }
  return Status::Ok();
}

}  // namespace b2ndfs::stores
