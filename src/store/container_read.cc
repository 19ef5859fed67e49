// Container's reads: a byte range of a stream (its header, then a box of the
// array) served by the BoxReader, errors mapped to what a file read returns.
#include <algorithm>
#include <cstring>
#include <new>

#include "b2ndfs/util/log.h"
#include "box_reader.h"
#include "cache_keys.h"

namespace b2ndfs::store {

using geometry::Box;

Status Container::ReadArrayBox(const Box& box, uint8_t* out) const {
  if (!ok()) return InvalidData(error_);
  const auto& shape = layout_->shape();
  if (box.ndim() != static_cast<int>(shape.size())) return InvalidArgument("box has wrong ndim");
  for (int a = 0; a < box.ndim(); ++a) {
    if (box.start[a] < 0 || box.start[a] > box.stop[a] || box.stop[a] > shape[a]) {
      return InvalidArgument("box " + geometry::ToString(box) + " is outside the array");
    }
  }
  Status status = reader_->ReadBox(box, 0, box.NumItems(), out);
  if (!status.ok() && status.error_number() != ENOMEM) return Status(EIO, status.message());
  return status;
}

Result<cache::Value> Container::DerivedFromChunk(int64_t chunk, int variant,
                                                 const ChunkTransform& make) const {
  if (!ok()) return InvalidData(error_);
  if (chunk < 0 || chunk >= layout_->NumChunks() || variant < 0 || variant > 15) {
    return InvalidArgument("no chunk " + std::to_string(chunk));
  }
  return context_->cache->GetOrLoad(
      DerivedKey(cache_id_, chunk, variant), [&]() -> Result<cache::Value> {
        const Box box = layout_->ChunkBox(chunk);
        std::vector<uint8_t> bytes(static_cast<size_t>(box.NumItems() * layout_->itemsize()));
        B2NDFS_RETURN_IF_ERROR(ReadArrayBox(box, bytes.data()));
        B2NDFS_ASSIGN_OR_RETURN(std::string made, make(bytes));
        auto value = std::make_shared<cache::Bytes>(made.size());
        std::memcpy(value->data(), made.data(), made.size());
        return cache::Value(std::move(value));
      });
}

void Container::Prefetch(const ArrayStream& stream, int64_t offset, int64_t length) const {
  if (!ok() || length <= 0) return;
  int64_t body_offset = offset - static_cast<int64_t>(stream.header.size());
  if (body_offset < 0) {
    length += body_offset;
    body_offset = 0;
  }
  reader_->Prefetch(stream.box, body_offset, length, shared_from_this());
}

bool Container::StreamCached(const ArrayStream& stream) const {
  return ok() && reader_->Cached(stream.box);
}

int64_t Container::StreamSize(const ArrayStream& stream) const {
  const int64_t header = static_cast<int64_t>(stream.header.size());
  if (!ok()) return header;
  return header + stream.box.NumItems() * layout_->itemsize();
}

Result<size_t> Container::Read(const ArrayStream& stream, int64_t offset, size_t length,
                               uint8_t* out) const {
  GlobalReadStats().reads++;
  if (offset < 0) return InvalidArgument("negative offset");
  const int64_t size = StreamSize(stream);
  if (offset >= size || length == 0) return size_t{0};
  const size_t n =
      static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(length), size - offset));
  const int64_t header = static_cast<int64_t>(stream.header.size());
  size_t done = 0;
  if (offset < header) {
    done = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(n), header - offset));
    std::memcpy(out, stream.header.data() + offset, done);
  }
  Status status;
  if (done < n) {
    if (!ok()) return Status(EIO, name() + ": " + error_);
    try {
      status = reader_->ReadBytes(stream.box, offset + static_cast<int64_t>(done) - header,
                                  n - done, out + done);
    } catch (const std::bad_alloc&) {
      status = Status(ENOMEM, "out of memory");
    }
  }
  if (!status.ok()) {
    GlobalReadStats().read_errors++;
    // A source that changed under a reader is not a broken container: say
    // so once per generation, not once per message.
    const bool stale = status.error_number() == ESTALE;
    LogOnce(stale ? "stale:" + name() + std::to_string(cache_id_) : "read:" + name(),
            stale ? LogLevel::kInfo : LogLevel::kError, name() + ": " + status.message());
    // Whatever went wrong inside the container (a vanished chunk file, a
    // source rewritten under an open descriptor) is an I/O error of this
    // file, not a missing file.
    const int error_number = status.error_number() == ENOMEM ? ENOMEM : EIO;
    return Status(error_number, name() + ": " + status.message());
  }
  GlobalReadStats().bytes_served += n;
  return n;
}

}  // namespace b2ndfs::store
