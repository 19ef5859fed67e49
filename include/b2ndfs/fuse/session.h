// fuse: the libfuse 3 low-level adapter. Every callback goes through one
// noexcept trampoline that replies exactly once and maps Status errnos (EIO
// for anything unexpected, ENOMEM for bad_alloc). Knows the vfs, nothing of
// c-blosc2 or msgpack. Serve is the libfuse glue alone (op table, mount,
// loop, teardown): each callback wraps its request in the Request seam
// (src/fuse/request.h) and calls the operation (src/fuse/operations.h),
// which the unit tests drive through a fake request without a kernel.
// Thread-safety: callbacks run on libfuse's worker threads concurrently.
// Unmount order (Serve, once the request loop ended): reads answered on
// threads of their own, then the filesystem's background probes
// (Filesystem::StopBackground), then the invalidator's thread and the
// invalidation callback, then the page pusher, then the session: nothing
// that may still call the kernel outlives what it calls through.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "b2ndfs/vfs/filesystem.h"

namespace b2ndfs::fuse {

struct SessionOptions {
  std::string mountpoint;
  std::vector<std::string> fuse_args;  // argv for fuse_session_new (argv[0] first)
  bool foreground = false;
  bool single_threaded = false;
  unsigned max_threads = 10;          // request threads at most (libfuse's default)
  unsigned max_idle_threads = 10;     // idle request threads kept, not ended
  size_t max_read = 1 << 20;          // largest read the kernel should send
  size_t kernel_readahead = 1 << 20;  // the mount's read_ahead_kb, in bytes (0: leave)
  // Remote sources: requests the client has in flight at most
  // (connections=); reads waiting on the network are answered by as many
  // threads of their own (at least 8, at most 256).
  int remote_connections = 32;
  // Called once the session runs (after daemonizing), before any request is
  // answered: starts what must not be started before a fork.
  std::function<void()> on_start;
};

// Mounts, daemonizes unless foreground (only after the mount succeeded, so
// errors reach the caller), serves until unmounted or signalled, unmounts.
// Returns a process exit code.
int Serve(vfs::Filesystem& filesystem, const SessionOptions& options);

// The version of the libfuse this process runs with ("3.14.0").
std::string LibraryVersion();

}  // namespace b2ndfs::fuse
