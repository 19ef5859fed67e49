#include "counted_source.h"

#include <cerrno>

#include "b2ndfs/store/container.h"

namespace b2ndfs::store {

Status CountedSource::Read(int64_t part, int64_t offset, int64_t length, uint8_t* out) const {
  Status status = source_->Read(part, offset, static_cast<size_t>(length), out);
  Count(status, static_cast<size_t>(length));
  return status;
}

void CountedSource::ReadMany(std::span<const source::PartRead> reads,
                             const source::ReadDone& done) const {
  source_->ReadMany(reads, [&](size_t i, const Status& status) {
    Count(status, reads[i].length);
    done(i, status);
  });
}

void CountedSource::Count(const Status& status, size_t length) const {
  ReadStats& stats = GlobalReadStats();
  stats.source_reads++;
  // EOPNOTSUPP: the source cannot serve the reads this container needs (a
  // web server that ignores Range): the container's own trouble, shown in
  // its meta.json, not trouble reaching the source.
  if (status.ok()) {
    stats.source_bytes_read += length;
  } else if (status.error_number() != EOPNOTSUPP) {
    failed_.store(true, std::memory_order_relaxed);
  }
}

}  // namespace b2ndfs::store
