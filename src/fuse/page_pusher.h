#pragma once
// Stores whole files in the kernel's page cache ahead of their readers
// (vfs::PagePush: read-ahead across the files of slices/0/), from threads of
// its own: rendering a file may wait on decompression, which request
// threads must not, and a notification must not be sent from inside a
// request for the same inode. Two threads: rendering and storing a file
// costs more than reading it from the page cache, so one thread alone falls
// behind a reader (the reader then asks for the pages itself, and the
// daemon makes them twice).
// Tests give a Store function instead of a session (no kernel).
// Thread-safety: any thread; mutex_ is a leaf lock, and nothing is stored
// or rendered while it is held.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "b2ndfs/vfs/filesystem.h"

struct fuse_session;

namespace b2ndfs::fuse {

class PagePusher {
 public:
  // Stores through `session` (fuse_lowlevel_notify_store).
  explicit PagePusher(struct fuse_session* session);
  // Stores `size` bytes as inode `ino`'s pages through `store` instead,
  // which returns 0 or a negative errno (-ENOENT: the kernel knows no such
  // inode).
  using Store = std::function<int(vfs::Ino ino, const uint8_t* data, size_t size)>;
  explicit PagePusher(Store store);
  ~PagePusher();  // pushes still queued are dropped; one in progress ends first
  PagePusher(const PagePusher&) = delete;
  PagePusher& operator=(const PagePusher&) = delete;

  // Queues `push` unless kMaxQueued pushes wait (read-ahead is a hint: a
  // reader that outruns it reads as usual) or one of its inode is queued or
  // in progress. Returns whether a push of the inode is on its way.
  bool Enqueue(vfs::PagePush push);

  static constexpr size_t kMaxQueued = 4;
  static constexpr size_t kThreads = 2;

 private:
  void Loop();
  void Stop();  // drops what is queued, joins the threads

  const Store store_;
  std::mutex mutex_;  // leaf lock
  std::condition_variable wake_;
  std::deque<vfs::PagePush> queue_;  // guarded by mutex_, as below
  std::vector<vfs::Ino> in_progress_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace b2ndfs::fuse
