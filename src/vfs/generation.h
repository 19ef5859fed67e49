// Private to vfs: container entries (one per container path), their
// generations (one per version of the source) and the LRU of opened
// containers. See filesystem.h for the lifetime model.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/source/tree.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/vfs/filesystem.h"

namespace b2ndfs::vfs {

// The containers kept open: least recently used beyond `max_count`, or beyond
// `max_bytes` of charged metadata, are let go (readers holding one keep it
// until they finish).
// Lock order: mutex_ is a leaf lock; containers are released after it.
class OpenContainers {
 public:
  OpenContainers(size_t max_count, int64_t max_bytes)
      : max_count_(std::max<size_t>(max_count, 1)), max_bytes_(max_bytes) {}
  void Touch(const std::shared_ptr<const store::Container>& container);
  void Remove(const store::Container* container);
  size_t size() const;

 private:
  using List = std::list<std::shared_ptr<const store::Container>>;
  const size_t max_count_;
  const int64_t max_bytes_;
  mutable std::mutex mutex_;
  List lru_;  // most recent first
  std::unordered_map<const store::Container*, List::iterator> index_;
  int64_t bytes_ = 0;
};

// One version of one container: its source (which checks every read against
// that version), the inode numbers reserved for its names, and its opened
// container while the LRU keeps it.
class Generation {
 public:
  Generation(std::string path, std::shared_ptr<const source::ByteSource> source, uint64_t cache_id,
             Ino ino_base)
      : path_(std::move(path)),
        source_(std::move(source)),
        cache_id_(cache_id),
        ino_base_(ino_base) {}

  const source::Signature& signature() const { return source_->signature(); }
  uint64_t cache_id() const { return cache_id_; }
  Ino ino_base() const { return ino_base_; }
  bool dead() const { return dead_.load(); }
  // A read found the source no longer holds this version.
  bool found_stale() const { return source_->found_stale(); }
  void Kill() { dead_ = true; }
  // The container if it is open, without reopening it.
  std::shared_ptr<const store::Container> IfOpen() const;
  // The opened container; reopened (from this generation's source, which
  // refuses another version) when the LRU had closed it.
  Result<std::shared_ptr<const store::Container>> Container(Filesystem& fs);
  void Adopt(std::shared_ptr<const store::Container> container);

 private:
  const std::string path_;
  const std::shared_ptr<const source::ByteSource> source_;
  const uint64_t cache_id_;
  const Ino ino_base_;
  std::atomic<bool> dead_{false};
  mutable std::mutex mutex_;  // held while reopening; before OpenContainers::mutex_
  std::weak_ptr<const store::Container> container_;
};

// One container path: its current generation, checked against the source's
// signature whenever something inside it is used.
class ContainerEntry {
 public:
  // `tree` outlives the entry (the filesystem holds both).
  ContainerEntry(std::string path, const source::Tree* tree)
      : path_(std::move(path)), tree_(tree) {}
  const std::string& path() const { return path_; }
  // The source's attributes (its directory's for a sparse frame), without
  // opening it.
  Result<struct stat> SourceStat() const;
  // The current generation; a new one when the source changed (the old one
  // dies and the filesystem is told). Errors reading the source are
  // returned, not remembered.
  Result<std::shared_ptr<Generation>> Current(Filesystem& fs);

 private:
  const std::string path_;
  const source::Tree* const tree_;
  std::mutex mutex_;  // held while opening; before Filesystem::mutex_
  std::shared_ptr<Generation> current_;
};

}  // namespace b2ndfs::vfs
