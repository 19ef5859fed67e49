#pragma once
// Stores whole files in the kernel's page cache ahead of their readers
// (vfs::PagePush: read-ahead across the files of slices/0/), from a thread of
// its own: rendering a file may wait on decompression, which request
// threads must not, and a notification must not be sent from inside a
// request for the same inode.

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "b2ndfs/vfs/filesystem.h"

struct fuse_session;

namespace b2ndfs::fuse {

class PagePusher {
 public:
  explicit PagePusher(struct fuse_session* session);
  ~PagePusher();  // pushes still queued are dropped; one in progress ends first
  PagePusher(const PagePusher&) = delete;
  PagePusher& operator=(const PagePusher&) = delete;

  // Queues `push` unless its inode is already queued or kMaxQueued pushes
  // wait (read-ahead is a hint: a reader that outruns it reads as usual).
  void Enqueue(vfs::PagePush push);

  static constexpr size_t kMaxQueued = 2;

 private:
  void Loop();

  struct fuse_session* session_;
  std::mutex mutex_;  // leaf lock
  std::condition_variable wake_;
  std::deque<vfs::PagePush> queue_;  // guarded by mutex_
  bool stopping_ = false;            // guarded by mutex_
  std::thread thread_;
};

}  // namespace b2ndfs::fuse
