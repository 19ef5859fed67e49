#include "invalidator.h"

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <utility>

#include "b2ndfs/util/task_pool.h"

namespace b2ndfs::fuse {

Invalidator::Invalidator(struct fuse_session* session)
    : Invalidator([session](const vfs::StaleNode& node) {
        // -ENOENT answers mean the kernel holds nothing for it: nothing to do.
        if (node.forget_name) {
          fuse_lowlevel_notify_inval_entry(session, node.parent, node.name.c_str(),
                                           node.name.size());
        }
        if (node.ino != 0) fuse_lowlevel_notify_inval_inode(session, node.ino, 0, 0);
      }) {}

Invalidator::Invalidator(Notify notify) : notify_(std::move(notify)) {
  thread_ = std::thread([this] { Loop(); });
}

Invalidator::~Invalidator() { Stop(); }

void Invalidator::Stop() {
  std::lock_guard<std::mutex> stop_lock(stop_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    pending_.clear();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Invalidator::Enqueue(const std::vector<vfs::StaleNode>& nodes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;  // unmounting: the kernel forgets everything anyway
    pending_.insert(pending_.end(), nodes.begin(), nodes.end());
  }
  wake_.notify_all();
}

void Invalidator::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    if (stopping_) return;
    std::vector<vfs::StaleNode> batch;
    batch.swap(pending_);
    lock.unlock();
    for (const auto& node : batch) {
      try {
        notify_(node);
      } catch (...) {
        LogTaskFailure("invalidation", failure_log_);  // the next ones still go
      }
    }
    lock.lock();
  }
}

}  // namespace b2ndfs::fuse
