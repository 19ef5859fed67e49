// fuse/request (private to src/fuse): the seam under the libfuse adapter.
// One kernel request as the operations (operations.h) see it: the replies
// fuse_lowlevel.h allows, and whether the kernel interrupted it. The real
// one (fuse_request.h) wraps a fuse_req_t; tests use a fake that records
// the replies (tests/unit/fake_request.h), so that every operation runs
// without a kernel mount, as mountpoint-s3 tests its filesystem without
// FUSE in the loop. Nothing here needs libfuse's headers.
// Replies: exactly one per request (forget: ReplyNone). A reply returns 0,
// or a negative errno from the kernel's side (-ENOENT: the request was
// interrupted and the kernel no longer waits for it).
// Lifetime: a Request is valid until it has replied; Detach() makes one that
// may outlive the call it came with (a read answered on another thread).
// Thread-safety: one thread at a time, but for the interrupt hook.
#pragma once

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "b2ndfs/vfs/filesystem.h"

namespace b2ndfs::fuse {

// A looked-up node as the kernel gets it (fuse_entry_param): one reference
// to inode `ino` (0: a negative or attribute-less entry), its attributes,
// and how long it may cache both.
struct EntryReply {
  vfs::Ino ino = 0;
  struct stat attr {};
  double attr_timeout = 0;
  double entry_timeout = 0;
};

// What an open or opendir answers besides success (fuse_file_info's fields).
struct OpenReply {
  uint64_t fh = 0;  // the handle every later request of this file carries
  bool keep_cache = false;
  bool direct_io = false;
  bool cache_readdir = false;
};

// Told when the kernel interrupts a request it registered with (FUSE
// INTERRUPT: its reader got a signal). Called on the thread that delivers
// the interrupt, possibly before Request::OnInterrupt returns, and possibly
// after the request was answered (then `id` is matched with nothing).
class InterruptSink {
 public:
  virtual ~InterruptSink() = default;
  virtual void Interrupted(const void* id) = 0;
};

class Request {
 public:
  virtual ~Request() = default;

  virtual int ReplyErr(int error) = 0;  // 0: success without data
  virtual void ReplyNone() = 0;         // forget
  virtual int ReplyEntry(const EntryReply& entry) = 0;
  virtual int ReplyAttr(const struct stat& attr, double timeout) = 0;
  virtual int ReplyOpen(const OpenReply& open) = 0;
  virtual int ReplyBuf(const char* data, size_t size) = 0;
  virtual int ReplyStatfs(const struct statvfs& st) = 0;
  // The size of an extended attribute (or of the list of names) asked for
  // with size 0.
  virtual int ReplyXattrSize(size_t size) = 0;

  // Appends one entry to a READDIR (plus: READDIRPLUS) reply being built in
  // `buffer`, `room` bytes of it free, in the kernel's layout; returns the
  // bytes the entry takes, written only when they fit in `room`. `next`:
  // the offset of the entry after it.
  virtual size_t AddDirEntry(char* buffer, size_t room, const std::string& name,
                             const EntryReply& entry, off_t next, bool plus) = 0;

  // Whether the kernel interrupted the request.
  virtual bool interrupted() const = 0;
  // The request's identity while it waits for its reply (the key
  // InterruptSink::Interrupted is called with).
  virtual const void* id() const = 0;
  // Asks to have `sink` told of an interrupt of this request. `sink` must
  // outlive every request registered with it.
  virtual void OnInterrupt(InterruptSink* sink) = 0;
  // The same request, as an object of its own that may be answered later
  // from another thread (this one must then not reply).
  virtual std::unique_ptr<Request> Detach() = 0;
};

}  // namespace b2ndfs::fuse
