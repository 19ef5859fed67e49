#pragma once
// Forwards "this inode changed" to the kernel (vfs::StaleNode: a container
// changed on disk) from a thread of its own: the notification must not be
// sent from inside a request for the same inode.

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "b2ndfs/vfs/filesystem.h"

struct fuse_session;

namespace b2ndfs::fuse {

class Invalidator {
 public:
  explicit Invalidator(struct fuse_session* session);
  ~Invalidator();  // what is still queued is dropped
  Invalidator(const Invalidator&) = delete;
  Invalidator& operator=(const Invalidator&) = delete;

  void Enqueue(const std::vector<vfs::StaleNode>& nodes);

 private:
  void Loop();

  struct fuse_session* session_;
  std::mutex mutex_;  // leaf lock
  std::condition_variable wake_;
  std::vector<vfs::StaleNode> pending_;  // guarded by mutex_
  bool stopping_ = false;                // guarded by mutex_
  std::thread thread_;
};

}  // namespace b2ndfs::fuse
