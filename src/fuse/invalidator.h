#pragma once
// Forwards "this inode changed" to the kernel (vfs::StaleNode: a container
// changed on disk) from a thread of its own: the notification must not be
// sent from inside a request for the same inode.
// Lifetime: the session owns it (shared with the filesystem's invalidation
// callback, so that a call still in progress never meets a freed object).
// Stop() joins its thread, after which the session is never used again and
// Enqueue() drops what it is given: at unmount the session calls it after
// the filesystem's background probes stopped and before fuse_session_destroy
// (session.cc, Serve).
// Thread-safety: any thread. Lock order: stop_mutex_ before mutex_, a leaf
// lock; notifications are sent with no lock held.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"

struct fuse_session;

namespace b2ndfs::fuse {

class Invalidator {
 public:
  // Sends each node to the kernel through `session`.
  explicit Invalidator(struct fuse_session* session);
  // Hands each node to `notify` instead (tests: no kernel).
  using Notify = std::function<void(const vfs::StaleNode&)>;
  explicit Invalidator(Notify notify);
  ~Invalidator();  // stops
  // What is still queued is dropped. Idempotent; not from the thread itself.
  void Stop();
  Invalidator(const Invalidator&) = delete;
  Invalidator& operator=(const Invalidator&) = delete;

  void Enqueue(const std::vector<vfs::StaleNode>& nodes);

 private:
  void Loop();

  const Notify notify_;
  std::mutex mutex_;  // leaf lock
  std::condition_variable wake_;
  std::vector<vfs::StaleNode> pending_;                    // guarded by mutex_
  bool stopping_ = false;                                  // guarded by mutex_
  std::thread thread_;                                     // joined by the first Stop()
  std::mutex stop_mutex_;                                  // serialises Stop(); before mutex_
  LogRateLimit failure_log_{5, int64_t{60} * 1000000000};  // of notify_
};

}  // namespace b2ndfs::fuse
