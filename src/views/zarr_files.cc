#include "zarr_files.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "zarr_meta.h"

namespace b2ndfs::views {
namespace {

std::string_view Text(const store::Container& c, const TextPiece& piece) {
  if (!piece.from_meta) return piece.text;
  return std::string_view(c.meta_json()).substr(piece.begin, piece.end - piece.begin);
}

}  // namespace

int64_t ZarrTextFile::Size(const store::Container& c) const {
  size_t size = 0;
  for (const TextPiece& piece : pieces_) size += Text(c, piece).size();
  return static_cast<int64_t>(size);
}

Result<size_t> ZarrTextFile::Read(const store::Container& c, int64_t offset, size_t length,
                                  uint8_t* out) const {
  if (offset < 0) return InvalidArgument("negative offset");
  size_t at = 0, done = 0;
  for (const TextPiece& piece : pieces_) {
    const std::string_view text = Text(c, piece);
    const size_t begin = std::max(at, static_cast<size_t>(offset));
    const size_t end = std::min(at + text.size(), static_cast<size_t>(offset) + length);
    if (begin < end) {
      std::memcpy(out + (begin - offset), text.data() + (begin - at), end - begin);
      done += end - begin;
    }
    at += text.size();
  }
  return done;
}

std::optional<TextPiece> VlmetaPiece(const store::Container& c) {
  auto range = FindJsonMember(c.meta_json(), "vlmeta");
  if (!range) return std::nullopt;
  return TextPiece{{}, true, range->first, range->second};
}

// Fits in int64: the layout checked prod(extchunkshape).
geometry::Box FullChunkBox(const geometry::ArrayLayout& layout, int64_t chunk) {
  geometry::Box box = layout.ChunkBox(chunk);
  for (size_t i = 0; i < box.stop.size(); ++i) box.stop[i] = box.start[i] + layout.chunkshape()[i];
  return box;
}

Result<size_t> ReadPadded(const store::Container& c, const geometry::Box& inside,
                          const geometry::Box& full, int64_t offset, size_t length, uint8_t* out) {
  if (inside == full) return c.Read(store::ArrayStream{std::string(), inside}, offset, length, out);
  if (offset < 0) return InvalidArgument("negative offset");
  const int64_t itemsize = c.layout().itemsize();
  const int64_t size = full.NumItems() * itemsize;
  if (offset >= size) return size_t{0};
  const size_t n =
      static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(length), size - offset));
  const int64_t item_begin = offset / itemsize;
  const int64_t item_end = (offset + static_cast<int64_t>(n) + itemsize - 1) / itemsize;
  // Whole items of the range, zero bytes where outside the array.
  std::vector<uint8_t> items(static_cast<size_t>((item_end - item_begin) * itemsize), 0);
  std::vector<uint8_t> part;
  size_t at = 0;
  for (const geometry::Box& piece : geometry::LinearRangeToBoxes(full, item_begin, item_end)) {
    const geometry::Box region = geometry::Intersect(piece, inside);
    uint8_t* dst = items.data() + at;
    at += static_cast<size_t>(piece.NumItems() * itemsize);
    if (region.empty()) continue;
    if (region == piece) {
      B2NDFS_RETURN_IF_ERROR(c.ReadArrayBox(region, dst));
      continue;
    }
    part.resize(static_cast<size_t>(region.NumItems() * itemsize));
    B2NDFS_RETURN_IF_ERROR(c.ReadArrayBox(region, part.data()));
    geometry::CopyRegion(part.data(), region, dst, piece, region, itemsize);
  }
  std::memcpy(out, items.data() + (offset - item_begin * itemsize), n);
  return n;
}

void PrefetchPadded(const store::Container& c, const geometry::Box& inside,
                    const geometry::Box& full, int64_t offset, int64_t length) {
  const store::ArrayStream stream{std::string(), inside};
  if (inside == full) {
    c.Prefetch(stream, offset, length);
  } else if (offset == 0 && !inside.empty()) {
    c.Prefetch(stream, 0, c.StreamSize(stream));
  }
}

std::optional<std::vector<int64_t>> KeyCoords(const KeyTree& tree,
                                              const std::vector<int64_t>& coords,
                                              const std::string& name) {
  const size_t depth = coords.size();
  const auto index = ParseIndex(name);
  if (!index || *index >= tree.grid()[depth] || std::to_string(*index) != name) {
    return std::nullopt;
  }
  std::vector<int64_t> deeper = coords;
  deeper.push_back(*index);
  return deeper;
}

std::shared_ptr<const Listing> ListKeyDir(const KeyTree& tree, size_t depth, uint64_t first) {
  const bool directories = static_cast<int>(depth) + 1 < tree.ndim();
  const uint64_t step = tree.Subtree(static_cast<int>(depth) + 1);
  return MakeListing(static_cast<size_t>(tree.grid()[depth]), [directories, step, first](size_t i) {
    return ListEntry{std::to_string(i), directories, first + i * step};
  });
}

}  // namespace b2ndfs::views
