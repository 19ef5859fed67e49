// fuse/async_reads (private to src/fuse): FUSE reads that may wait on the
// network, answered from a bounded set of threads of their own instead of
// the request threads.
//
// Why. libfuse serves requests on a few threads (max_threads). A read of a
// slow remote object holds its thread for as long as the server takes, so a
// dozen readers of one slow object would leave `ls`, `stat`, meta.json and
// the reads of every other file waiting. A read whose handle says it may wait
// on the network (vfs::FileHandle::remote) is queued here and the request
// thread returns to the loop at once; libfuse's low-level API lets any thread
// reply. Local reads never come here: no thread hop on the hot path.
// The read itself is served by the function given at construction (the
// operations' own, operations.cc), so the reply path stays in one place.
// Fairness. At most Options::per_file reads of one file (inode) run at once;
// further reads of it wait in that file's own queue, and files with waiting
// reads take turns (round-robin). A slow file so never holds more than
// per_file workers (or connections of the remote client's pool), and the
// read of another file waits at most for one worker to free up, never behind
// the slow file's queue.
// Bounds. `workers` threads; at most `max_queued` reads wait. Beyond that,
// and after Shutdown(), a read runs on the request thread as before
// (back-pressure rather than unbounded memory).
// Interrupts. A queued read whose request the kernel interrupts
// (FUSE_INTERRUPT: its reader got a signal) is answered EINTR at once and
// dropped; a running one finishes (the remote client's timeout bounds it).
// Shutdown. Once the request loop has ended, Shutdown() answers every queued
// read EIO, waits for the running ones and joins the workers. It must run
// before the session is unmounted (replies need its channel) and before the
// file handles are freed (a queued read points at its handle, as the kernel
// keeps a file open until its reads are answered).
// Thread-safety: Defer() from any request thread, concurrently; Shutdown()
// and the destructor from the thread that ran the request loop.
// Requests are the seam's (request.h): a real kernel request, or a fake one
// in tests (tests/unit/fuse_async_reads_test.cc).
// Lock order: mutex_ is a leaf; libfuse's request locks are never taken
// while it is held (interrupt callbacks come with them held).
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "b2ndfs/vfs/file_handle.h"
#include "request.h"

namespace b2ndfs::fuse {

class AsyncReads final : private InterruptSink {
 public:
  // Serves one read and replies exactly once, whatever happens.
  using Serve = std::function<void(Request&, vfs::FileHandle&, size_t size, off_t offset)>;

  struct Options {
    int workers = 8;  // Serve() sizes it by the remote client's connections
    int per_file = 2;
    size_t max_queued = 4096;
  };

  struct Counters {
    uint64_t deferred = 0;     // reads answered by a worker
    uint64_t interrupted = 0;  // queued reads answered EINTR
    uint64_t failed = 0;       // queued reads answered EIO at shutdown
    uint64_t inline_full = 0;  // remote reads served inline: queue full or stopping
  };

  AsyncReads(Options options, Serve serve);
  ~AsyncReads();
  AsyncReads(const AsyncReads&) = delete;
  AsyncReads& operator=(const AsyncReads&) = delete;

  // Takes the read of `size` bytes at `offset` of `handle` (file `ino`) and
  // returns true, when the handle may wait on the network
  // (vfs::FileHandle::remote): it is then answered on a worker (or EINTR, if
  // interrupted first), and `req` must not reply. False: the caller serves
  // the read itself (a local file, a full queue, after Shutdown()).
  bool Defer(Request& req, uint64_t ino, size_t size, off_t offset,
             vfs::FileHandle* handle) noexcept;
  // See "Shutdown". Idempotent.
  void Shutdown();
  Counters counters() const;

 private:
  struct Job {
    std::unique_ptr<Request> req;
    uint64_t ino;
    size_t size;
    off_t offset;
    vfs::FileHandle* handle;
  };
  struct FileQueue {
    std::deque<Job> waiting;
    int running = 0;
    bool in_turn = false;  // listed in turns_
  };

  void Interrupted(const void* id) override;
  void WorkerLoop();
  // Lists `ino` in turns_ when it has waiting reads and a free slot.
  // Called with mutex_ held.
  void OfferTurn(uint64_t ino, FileQueue& queue);
  // Takes request `id`'s job out of `ino`'s queue. Called with mutex_ held.
  std::unique_ptr<Request> TakeWaiting(uint64_t ino, const void* id);

  const Options options_;
  const Serve serve_;
  mutable std::mutex mutex_;  // leaf lock; guards everything below
  std::condition_variable wake_;
  std::unordered_map<uint64_t, FileQueue> files_;      // files with waiting or running reads
  std::deque<uint64_t> turns_;                         // files whose next read may start
  std::unordered_map<const void*, uint64_t> waiting_;  // request id -> file
  bool stopping_ = false;
  Counters counters_;
  std::vector<std::thread> threads_;
};

}  // namespace b2ndfs::fuse
