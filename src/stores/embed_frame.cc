#include "b2ndfs/stores/embed_frame.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "b2ndfs/cache/cache_id.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/meta_json.h"
#include "b2ndfs/util/json.h"

namespace b2ndfs::stores {
namespace {

constexpr int64_t kMaxEmbedChunks = int64_t{1} << 20;

Status BadEmbedFrame(const std::string& what) { return InvalidData("embed store frame: " + what); }

// A vlmetalayer's content: a Blosc2 chunk (blosc2_vlmeta_add compresses it),
// decompressed; the raw bytes when it is not one.
Result<std::vector<uint8_t>> DecompressVlmeta(const std::vector<uint8_t>& content, int64_t budget) {
  auto info = codec::InspectChunk(content);
  if (!info.ok()) return content;
  if (info->nbytes > budget)
    return BadEmbedFrame("a vlmetalayer of " + std::to_string(info->nbytes) + " bytes");
  std::vector<uint8_t> out(static_cast<size_t>(info->nbytes));
  codec::Decompressor d;
  B2NDFS_RETURN_IF_ERROR(d.DecompressAll(content, out));
  return out;
}

std::string ValueJson(std::span<const uint8_t> bytes) {
  if (auto json = format::MsgpackToJson(bytes)) return *json;
  return "{\"base64\": " + json::Quote(format::Base64Encode(bytes)) + "}";
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
    out += json::Quote(vl.name) + ": ";
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

EmbedStats& GlobalEmbedStats() {
  static EmbedStats stats;
  return stats;
}

Result<std::shared_ptr<const EmbedFrame>> EmbedFrame::Open(const FrameReadAt& read,
                                                           int64_t frame_size,
                                                           EmbedUnitCache units) {
  B2NDFS_ASSIGN_OR_RETURN(format::FrameInfo info, format::ParseFrame(read, frame_size));
  std::shared_ptr<EmbedFrame> frame(new EmbedFrame());
  frame->units_ = std::move(units);
  for (const auto& m : info.metalayers) {
    if (m.name == "b2embed" || m.name == "b2dict" || m.name == "b2tree") frame->tag_ = m.name;
  }
  const format::NamedBytes* estore = nullptr;
  for (const auto& vl : info.vlmetalayers) {
    if (vl.name == "estore_metadata") estore = &vl;
  }
  if (estore == nullptr && frame->tag_.empty()) {
    return BadEmbedFrame(
        "neither a b2embed, b2dict or b2tree metalayer nor estore_metadata: not an EmbedStore");
  }
  if (estore != nullptr) {
    B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                            DecompressVlmeta(estore->content, kVlmetaBudget));
    B2NDFS_ASSIGN_OR_RETURN(frame->map_, format::DecodeEmbedMap(bytes));
  }
  B2NDFS_ASSIGN_OR_RETURN(frame->vlmeta_json_,
                          FrameVlmetaJson(read, frame_size, {"estore_metadata"}));
  if (info.sparse) return BadEmbedFrame("a sparse frame");
  frame->frame_size_ = frame_size;
  frame->stream_size_ = info.nbytes;
  frame->chunksize_ = info.chunksize;
  if (info.nchunks == 0) return std::shared_ptr<const EmbedFrame>(std::move(frame));
  if (info.typesize != 1)
    return BadEmbedFrame("items of " + std::to_string(info.typesize) + " bytes, not 1");
  if (info.variable_chunks || info.chunksize <= 0) return BadEmbedFrame("chunks of variable size");
  if (info.chunksize > kMaxEmbedChunkSize)
    return BadEmbedFrame("chunks of " + std::to_string(info.chunksize) + " bytes");
  if (info.nchunks > kMaxEmbedChunks ||
      info.nchunks != (info.nbytes + info.chunksize - 1) / info.chunksize) {
    return BadEmbedFrame(std::to_string(info.nchunks) + " chunks for " +
                         std::to_string(info.nbytes) + " bytes in chunks of " +
                         std::to_string(info.chunksize));
  }
  B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> index_chunk,
                          read(info.offsets_chunk_position, info.offsets_chunk_size));
  B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, codec::InspectChunk(index_chunk));
  if (ci.nbytes != info.nchunks * 8) return BadEmbedFrame("chunk index of the wrong size");
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
      return BadEmbedFrame("chunk " + std::to_string(i) + " is uninitialised or NaN");
    }
  }
  return std::shared_ptr<const EmbedFrame>(std::move(frame));
}

EmbedFrame::~EmbedFrame() = default;

int64_t EmbedFrame::memory_bytes() const {
  int64_t bytes = static_cast<int64_t>(sizeof(*this) + chunk_positions_.capacity() * 8 +
                                       vlmeta_json_.capacity() + units_.identity.capacity());
  for (const auto& e : map_.entries) {
    bytes += static_cast<int64_t>(sizeof(e) + e.key.capacity() + e.urlbase.capacity() +
                                  e.path.capacity() + e.problem.capacity());
  }
  // Decompressed units are the block cache's, charged there.
  return bytes;
}

Result<cache::Value> EmbedFrame::Unit(const FrameReadAt& read, int64_t chunk, int64_t unit) const {
  cache::BlockCache* const cache = units_.cache;
  if (cache == nullptr || !cache->CanRetain(static_cast<size_t>(kEmbedUnitBytes))) {
    return DecodeUnit(read, chunk, unit);
  }
  const int64_t units_per_chunk = (chunksize_ + kEmbedUnitBytes - 1) / kEmbedUnitBytes;
  const cache::Key key = cache::NamedKey(cache::EntryKind::kEmbedChunk, units_.identity,
                                         chunk * units_per_chunk + unit);
  return cache->GetOrLoad(key, [&] { return DecodeUnit(read, chunk, unit); });
}

// Only the blocks the unit covers are read and decoded (the chunk's head, then
// the span of its blocks), but for chunks c-blosc2 decodes only whole
// (codec::ChunkInfo::needs_whole_chunk), stored ones and special values.
Result<cache::Value> EmbedFrame::DecodeUnit(const FrameReadAt& read, int64_t chunk,
                                            int64_t unit) const {
  const int64_t nbytes = std::min(chunksize_, stream_size_ - chunk * chunksize_);
  const int64_t begin = unit * kEmbedUnitBytes;
  const int64_t length = std::min(kEmbedUnitBytes, nbytes - begin);
  auto out = std::make_shared<cache::Bytes>(static_cast<size_t>(length));
  const int64_t position = chunk_positions_[static_cast<size_t>(chunk)];
  if (position < 0) {
    std::memset(out->data(), 0, out->size());
    return cache::Value(std::move(out));
  }
  const std::string what = "chunk " + std::to_string(chunk);
  B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> header, read(position, codec::kChunkHeaderSize));
  B2NDFS_ASSIGN_OR_RETURN(codec::ChunkInfo ci, codec::InspectChunkHeader(header));
  if (ci.nbytes != nbytes)
    return BadEmbedFrame(what + " holds " + std::to_string(ci.nbytes) + " bytes, not " +
                         std::to_string(nbytes));
  if (ci.cbytes > frame_size_ - position) return BadEmbedFrame(what + " runs past the frame");
  codec::Decompressor d;
  if (ci.needs_whole_chunk || ci.vl_blocks || ci.memcpyed || ci.special || length == nbytes) {
    B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> whole, read(position, ci.cbytes));
    B2NDFS_RETURN_IF_ERROR(d.DecompressRange(whole, begin, *out).WithContext(what));
  } else {
    B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> head, read(position, codec::ChunkHeadSize(ci)));
    B2NDFS_ASSIGN_OR_RETURN(codec::ChunkSpan span, codec::SpanForRange(head, ci, begin, length));
    B2NDFS_ASSIGN_OR_RETURN(std::vector<uint8_t> part,
                            read(position + span.begin, span.end - span.begin));
    B2NDFS_RETURN_IF_ERROR(
        d.DecompressRangeFromPart(head, ci, span, part, begin, *out).WithContext(what));
  }
  EmbedStats& stats = GlobalEmbedStats();
  stats.units_decompressed.fetch_add(1, std::memory_order_relaxed);
  stats.bytes_decompressed.fetch_add(static_cast<uint64_t>(length), std::memory_order_relaxed);
  return cache::Value(std::move(out));
}

Status EmbedFrame::ReadStream(const FrameReadAt& read, int64_t offset, size_t length,
                              uint8_t* out) const {
  if (offset < 0 || offset > stream_size_ || static_cast<int64_t>(length) > stream_size_ - offset) {
    return BadEmbedFrame("bytes " + std::to_string(offset) + "+" + std::to_string(length) +
                         " outside the stream of " + std::to_string(stream_size_));
  }
  size_t done = 0;
  while (done < length) {
    const int64_t at = offset + static_cast<int64_t>(done);
    const int64_t chunk = at / chunksize_;
    const int64_t unit = (at - chunk * chunksize_) / kEmbedUnitBytes;
    B2NDFS_ASSIGN_OR_RETURN(cache::Value bytes, Unit(read, chunk, unit));
    const int64_t inside = at - chunk * chunksize_ - unit * kEmbedUnitBytes;
    const size_t n = std::min(length - done, static_cast<size_t>(bytes->size() - inside));
    std::memcpy(out + done, bytes->data() + inside, n);
    done += n;
  }
  return Status::Ok();
}

}  // namespace b2ndfs::stores
