// Private to vfs: reading ahead of sequential readers of virtual files.
//
// A reader whose requests follow each other (give or take the reordering of
// the kernel's concurrent read-ahead and of mmap faults) gets a growing
// window of blocks decompressed ahead of it on the background workers; the
// window runs on into the files a reader in name order opens next
// (slices/0/...), whose pages are pushed into the kernel's page cache once
// their blocks are all cached (PagePush), so an image-sequence tool reads
// them without a request. mountpoint-s3's prefetcher and DwarFS's
// sequential detector are the models.
// Thread-safety: any thread; mutex_ and each ReadPattern's mutex are leaf
// locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "b2ndfs/vfs/file_handle.h"
#include "b2ndfs/vfs/types.h"

namespace b2ndfs::vfs {

class ReadAheadPolicy {
 public:
  struct Options {
    int64_t max_readahead = 8 << 20;  // bytes decompressed ahead of a local reader
    int64_t cache_bytes = 0;          // the block cache's capacity (0: unbounded)
  };
  explicit ReadAheadPolicy(Options options) : options_(options) {}

  // Called (from a request thread, no lock held) with a file to store in the
  // kernel's page cache ahead of its reader; none: no pushes.
  void SetPush(std::function<bool(PagePush)> push) { push_ = std::move(push); }
  // A read of [offset, offset + length) of `handle`: plans read-ahead. A
  // remote reader's is planned before its read is served (its requests go
  // out while the read waits for its own), a local one's after.
  void OnRead(const ViewHandle& handle, int64_t offset, size_t length, bool remote);
  // A file pushed ahead of its reader is being opened: its reader reads it
  // without requests, so the open carries the push on to the files after it.
  void OnOpen(const ViewHandle& handle, bool remote);

  uint64_t pushed_files() const { return pushed_files_.load(std::memory_order_relaxed); }
  uint64_t pushed_bytes() const { return pushed_bytes_.load(std::memory_order_relaxed); }

 private:
  void Push(const ViewHandle& handle, const std::shared_ptr<const views::Node>& file, bool remote);
  void SetPushed(Ino ino, bool pushed);
  bool TakePushed(Ino ino);

  const Options options_;
  std::function<bool(PagePush)> push_;
  std::mutex mutex_;  // leaf lock; guards pushed_
  // Files pushed (or on their way) and not opened since; bounded, oldest
  // forgotten first.
  std::unordered_set<Ino> pushed_;
  std::deque<Ino> pushed_order_;
  std::atomic<uint64_t> pushed_files_{0};
  std::atomic<uint64_t> pushed_bytes_{0};
};

}  // namespace b2ndfs::vfs
