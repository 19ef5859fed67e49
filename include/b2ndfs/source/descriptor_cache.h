// source/descriptor_cache: a mount-wide, bounded LRU of open read-only file
// descriptors, keyed by path.
//
// Sources ask for a descriptor per read; the least recently used beyond the
// capacity are closed (a reader still using one keeps it alive through its
// shared_ptr). An entry remembers the identity (device, inode) it was opened
// on: asking for another identity reopens the path. When open() fails with
// EMFILE/ENFILE the cache closes half of what it holds and tries once more.
// Thread-safety: every method may be called from any thread.
// Lock order: mutex_ is a leaf lock; open() and close() run without it.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "b2ndfs/util/file.h"
#include "b2ndfs/util/status.h"
#include "b2ndfs/util/weighted_lru.h"

namespace b2ndfs::source {

struct OpenFile {
  std::shared_ptr<const File> file;
  struct stat st {};  // fstat at open
};

struct DescriptorStats {
  uint64_t opens = 0;      // open() calls that succeeded
  uint64_t hits = 0;       // descriptors handed out again
  uint64_t evictions = 0;  // closed to stay within capacity (or after EMFILE)
  size_t open_now = 0;     // held by the cache now
  size_t capacity = 0;
};

class DescriptorCache {
 public:
  explicit DescriptorCache(size_t capacity);
  // An open descriptor of `path`. With want_inode != 0, a cached descriptor of
  // another inode is not returned (the path is opened again; the caller
  // checks the result's identity).
  Result<OpenFile> Open(const std::string& path, uint64_t want_device = 0, uint64_t want_inode = 0);
  // Closes the cached descriptor of `path`, if any (it changed on disk).
  void Drop(const std::string& path);
  DescriptorStats stats() const;
  size_t capacity() const { return capacity_; }

 private:
  void Shrink(size_t target);
  const size_t capacity_;
  mutable std::mutex mutex_;
  util::WeightedLru<std::string, OpenFile> lru_;  // at most capacity_ entries
  DescriptorStats stats_;
};

// The soft RLIMIT_NOFILE share that the descriptor cache of a mount may use:
// half the limit, at least 16 and at most 4096.
size_t DefaultDescriptorCapacity();

}  // namespace b2ndfs::source
