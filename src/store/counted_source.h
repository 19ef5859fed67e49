// store/counted_source (private to store): a container's reads of its
// source. Every read (metadata, chunk heads, block bytes; one of a ReadMany
// as much as a Read) is counted in GlobalReadStats as it ends, and a failed
// one is remembered: an open that failed after a failed read failed because
// of the source (Container::transient()), not of the container's content.
// Thread-safety: every method from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::store {

class CountedSource {
 public:
  explicit CountedSource(std::shared_ptr<const source::ByteSource> source)
      : source_(std::move(source)) {}

  const source::ByteSource& source() const { return *source_; }
  bool sparse() const { return source_->sparse(); }
  Status Read(int64_t part, int64_t offset, int64_t length, uint8_t* out) const;
  // As ByteSource::ReadMany, each read counted before `done` hears of it.
  void ReadMany(std::span<const source::PartRead> reads, const source::ReadDone& done) const;
  // Some read of the source failed.
  bool failed() const { return failed_.load(std::memory_order_relaxed); }

 private:
  void Count(const Status& status, size_t length) const;

  std::shared_ptr<const source::ByteSource> source_;
  mutable std::atomic<bool> failed_{false};
};

}  // namespace b2ndfs::store
