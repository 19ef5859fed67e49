#include "generation.h"

#include <sys/stat.h>

#include <cstring>
#include <vector>

#include "b2ndfs/util/log.h"
#include "b2ndfs/views/view.h"

namespace b2ndfs::vfs {
namespace {

std::atomic<uint64_t> g_next_cache_id{1};

}  // namespace

void OpenContainers::Touch(const std::shared_ptr<const store::Container>& container) {
  std::vector<std::shared_ptr<const store::Container>> closing;  // released unlocked
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(container.get());
  if (it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.push_front(container);
  index_[container.get()] = lru_.begin();
  bytes_ += container->memory_bytes();
  while (lru_.size() > 1 && (lru_.size() > max_count_ || bytes_ > max_bytes_)) {
    bytes_ -= lru_.back()->memory_bytes();
    index_.erase(lru_.back().get());
    closing.push_back(std::move(lru_.back()));
    lru_.pop_back();
  }
}

void OpenContainers::Remove(const store::Container* container) {
  std::shared_ptr<const store::Container> closing;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(container);
  if (it == index_.end()) return;
  bytes_ -= (*it->second)->memory_bytes();
  closing = std::move(*it->second);
  lru_.erase(it->second);
  index_.erase(it);
}

size_t OpenContainers::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

std::shared_ptr<const store::Container> Generation::IfOpen() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return container_.lock();
}

void Generation::Adopt(std::shared_ptr<const store::Container> container) {
  std::lock_guard<std::mutex> lock(mutex_);
  container_ = container;
}

Result<std::shared_ptr<const store::Container>> Generation::Container(Filesystem& fs) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto open = container_.lock()) {
    fs.open_containers_->Touch(open);
    return open;
  }
  if (dead()) return Status(ESTALE, path_ + " changed on disk");
  auto container = store::Container::Open(source_, fs.store_, cache_id_, fs.views_.get());
  if (!container->ok() && container->transient()) {
    return Status(container->source().found_stale() ? ESTALE : EIO, container->error());
  }
  container_ = container;
  fs.open_containers_->Touch(container);
  return container;
}

Result<struct stat> ContainerEntry::SourceStat() const { return tree_->Stat(path_); }

Result<std::shared_ptr<Generation>> ContainerEntry::Current(Filesystem& fs) {
  // The common case, unchanged, costs a probe and no wait for other users of
  // the container; only a change is handled under the lock.
  auto probe = tree_->Probe(path_);
  auto unchanged = [&] {
    return current_ && probe.ok() && *probe == current_->signature() && !current_->found_stale();
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (unchanged()) return current_;
  }
  std::shared_ptr<Generation> old;
  Result<std::shared_ptr<Generation>> result = Status(EIO, "unset");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    probe = tree_->Probe(path_);  // another thread may have moved on meanwhile
    if (unchanged()) return current_;
    if (!probe.ok()) {
      // Gone (or unreadable): the generation dies with it.
      old = std::move(current_);
      result = probe.status();
    } else {
      // A read that found the source changed may have come after the probe's
      // cached answer: then the tree asks afresh.
      const bool probe_trusted = !(current_ && current_->found_stale());
      auto source = tree_->OpenContainer(path_, probe_trusted ? &*probe : nullptr);
      if (!source.ok()) return source.status();  // transient or gone: not remembered
      const uint64_t cache_id = g_next_cache_id.fetch_add(1);
      auto container = store::Container::Open(*source, fs.store_, cache_id, fs.views_.get());
      if (!container->ok() && container->transient()) {
        return Status(EIO, path_ + ": " + container->error());
      }
      auto generation =
          std::make_shared<Generation>(path_, std::move(source).value(), cache_id,
                                       fs.ReserveInos(fs.views_->OrdinalCount(*container)));
      generation->Adopt(container);
      fs.open_containers_->Touch(container);
      if (current_) Log(LogLevel::kInfo, path_ + " changed on disk; serving its new version");
      old = std::exchange(current_, generation);
      result = generation;
    }
  }
  if (old) {
    old->Kill();
    fs.GenerationReplaced(*this, old);
  }
  return result;
}

}  // namespace b2ndfs::vfs
