// fuse/operations (private to src/fuse): the FUSE low-level operations
// against the Request seam (request.h), with no libfuse in sight: what
// session.cc's op table calls, and what the unit tests drive through a fake
// request (tests/unit/fuse_ops_test.cc). Every operation replies exactly
// once, through one noexcept trampoline: a Status's errno (EIO where it has
// none), EIO for an unexpected exception, ENOMEM for bad_alloc.
// State. The open files and directories the kernel has not released: a
// handle is the `fh` the kernel carries in every later request of it, owned
// here; on SIGTERM or a forced unmount no release comes, and the destructor
// frees them. Reads of remote files go to AsyncReads (StartAsyncReads) and
// are answered on its threads.
// Lifetime: outlives the request loop; Serve tears down in the order
// session.h gives (ShutdownAsyncReads before the session is unmounted).
// Thread-safety: every operation from any request thread, concurrently.
// Lock order: handles_mutex_ is a leaf lock.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "async_reads.h"
#include "b2ndfs/vfs/filesystem.h"
#include "reply_buffers.h"
#include "request.h"

namespace b2ndfs::fuse {

// The kernel gets the attributes of a directory's entries with their names
// (READDIRPLUS) where looking them up is cheap (inside a container) and the
// directory holds at most this many: it then knows their inodes before they
// are opened, so pages can be pushed ahead of a reader of slices/0/ on a
// fresh mount, and `ls -l` costs no lookup per entry. Larger directories (a
// chunks/ of millions) and the mirrored tree (whose lookups would open
// containers) get names only, as with READDIR.
constexpr size_t kReadDirPlusMaxEntries = size_t{1} << 16;

class Operations {
 public:
  // `max_read`: the largest read the kernel sends (the reply buffers' size).
  Operations(vfs::Filesystem& fs, size_t max_read);
  ~Operations();  // frees the handles the kernel did not release
  Operations(const Operations&) = delete;
  Operations& operator=(const Operations&) = delete;

  void Lookup(Request& req, vfs::Ino parent, const char* name) noexcept;
  void Forget(Request& req, vfs::Ino ino, uint64_t nlookup) noexcept;
  // FORGET of many: `get(i, &ino, &nlookup)` gives the i-th of `count`.
  template <typename Get>
  void ForgetMulti(Request& req, size_t count, Get get) noexcept;
  // `fh`: the open file the kernel asks through (fstat), 0 for none.
  void GetAttr(Request& req, vfs::Ino ino, uint64_t fh) noexcept;
  void OpenDir(Request& req, vfs::Ino ino) noexcept;
  // READDIR (plus: READDIRPLUS) of at most `size` bytes from `offset`.
  void ReadDir(Request& req, vfs::Ino ino, size_t size, off_t offset, uint64_t fh,
               bool plus) noexcept;
  void ReleaseDir(Request& req, uint64_t fh) noexcept;
  void Open(Request& req, vfs::Ino ino, int flags) noexcept;
  void Read(Request& req, vfs::Ino ino, size_t size, off_t offset, uint64_t fh) noexcept;
  void Release(Request& req, uint64_t fh) noexcept;
  void StatFs(Request& req) noexcept;
  void Access(Request& req, vfs::Ino ino, int mask) noexcept;
  void GetXattr(Request& req, vfs::Ino ino, const char* name, size_t size) noexcept;
  void ListXattr(Request& req, vfs::Ino ino, size_t size) noexcept;
  // Everything that would change the tree: the mount is read-only.
  static void ReadOnly(Request& req) noexcept;
  static void ReadLink(Request& req) noexcept;  // no symbolic links

  // Remote reads from now on answered on `options.workers` threads of their
  // own. Call before the request loop starts.
  void StartAsyncReads(AsyncReads::Options options);
  // Answers queued reads EIO, waits for running ones (see async_reads.h).
  void ShutdownAsyncReads();
  AsyncReads* async_reads() { return async_reads_.get(); }
  ReplyBuffers& reply_buffers() { return reply_buffers_; }
  // Handles the kernel has not released (tests).
  size_t open_files() const;
  size_t open_dirs() const;

 private:
  struct DirHandle;
  template <typename T>
  void Untrack(std::unordered_set<T*>& set, T* handle);
  void ServeRead(Request& req, vfs::FileHandle& handle, size_t size, off_t offset);
  void ServeReadDir(Request& req, vfs::Ino ino, size_t size, off_t offset, DirHandle& handle,
                    bool plus);

  vfs::Filesystem& fs_;
  ReplyBuffers reply_buffers_;
  mutable std::mutex handles_mutex_;  // leaf lock
  std::unordered_set<vfs::FileHandle*> files_;
  std::unordered_set<DirHandle*> dirs_;
  std::unique_ptr<AsyncReads> async_reads_;  // last: goes first
};

// Runs `body`, which must reply itself on success; any escaping exception is
// turned into exactly one error reply.
void ReplyToException(Request& req) noexcept;
template <typename Body>
void Trampoline(Request& req, Body&& body) noexcept {
  try {
    body();
  } catch (...) {
    ReplyToException(req);
  }
}

template <typename Get>
void Operations::ForgetMulti(Request& req, size_t count, Get get) noexcept {
  Trampoline(req, [&] {
    for (size_t i = 0; i < count; ++i) {
      vfs::Ino ino = 0;
      uint64_t nlookup = 0;
      get(i, &ino, &nlookup);
      fs_.Forget(ino, nlookup);
    }
    req.ReplyNone();
  });
}

}  // namespace b2ndfs::fuse
