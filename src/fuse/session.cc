// 3.12 is the oldest API with fuse_loop_cfg_set_max_threads(); older ones
// leave the request loop at libfuse's fixed 10 threads.
#define FUSE_USE_VERSION 312
#include "b2ndfs/fuse/session.h"

#include <fuse_lowlevel.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "b2ndfs/util/log.h"
#include "fuse_request.h"
#include "invalidator.h"
#include "operations.h"
#include "page_pusher.h"

namespace b2ndfs::fuse {
namespace {

// What the callbacks reach through fuse_req_userdata.
struct State {
  vfs::Filesystem* fs = nullptr;
  size_t max_read = 1 << 20;
  std::function<void()> on_start;  // SessionOptions::on_start
  std::unique_ptr<Operations> ops;
};

// Reply buffers made present at the start: a sequential reader has one read
// in flight and the kernel's read-ahead another.
constexpr size_t kPreparedReplyBuffers = 2;

Operations& OpsOf(fuse_req_t req) { return *static_cast<State*>(fuse_req_userdata(req))->ops; }

void OpInit(void* userdata, struct fuse_conn_info* conn) {
  auto* state = static_cast<State*>(userdata);
  // libfuse 3.14 derives the kernel's max_pages from max_write; a larger
  // value lets the kernel send reads of up to max_read bytes at once.
  conn->max_write = static_cast<unsigned>(state->max_read);
  conn->max_read = 0;
  conn->max_readahead = static_cast<unsigned>(state->max_read);
  if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
  if (conn->capable & FUSE_CAP_SPLICE_WRITE) conn->want |= FUSE_CAP_SPLICE_WRITE;
  // Every listing as READDIRPLUS (Operations::ReadDir chooses which entries
  // carry attributes): in the kernel's "auto" mode only a directory's first
  // page would, unless its entries were looked up meanwhile.
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
  // The source is read-only for us: no need for the kernel to ask before
  // every read whether cached pages are still valid (open decides).
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  // Read-ahead requests are "background" ones, of which the kernel lets only
  // max_background (default 12) be outstanding per mount: a dozen readers of
  // a slow remote object would hold them all and stall every other file's
  // read-ahead in the kernel (AsyncReads keeps them off our threads).
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  // A reader of a remote file must stay killable: the kernel waits for
  // asynchronous direct I/O uninterruptibly (no FUSE_INTERRUPT is sent),
  // for a synchronous O_DIRECT read it does not (AsyncReads answers a waiting
  // one EINTR at once).
  if (state->fs->costs().requests_may_stall) conn->want &= ~FUSE_CAP_ASYNC_DIO;
  // Nothing may throw into libfuse; what did not start now starts on use.
  try {
    if (state->on_start) state->on_start();
  } catch (const std::exception& e) {
    Log(LogLevel::kWarning, std::string("starting worker threads: ") + e.what());
  }
}

// The op table: each callback wraps its fuse_req_t in a FuseRequest and
// calls the operation (operations.h), which replies exactly once.
void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  FuseRequest r(req);
  OpsOf(req).Lookup(r, parent, name);
}

void OpForget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  FuseRequest r(req);
  OpsOf(req).Forget(r, ino, nlookup);
}

void OpForgetMulti(fuse_req_t req, size_t count, struct fuse_forget_data* forgets) {
  FuseRequest r(req);
  OpsOf(req).ForgetMulti(r, count, [forgets](size_t i, vfs::Ino* ino, uint64_t* nlookup) {
    *ino = forgets[i].ino;
    *nlookup = forgets[i].nlookup;
  });
}

void OpGetAttr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  FuseRequest r(req);
  OpsOf(req).GetAttr(r, ino, fi != nullptr ? fi->fh : 0);
}

void OpOpenDir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  FuseRequest r(req, fi);
  OpsOf(req).OpenDir(r, ino);
}

void OpReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
               struct fuse_file_info* fi) {
  FuseRequest r(req);
  OpsOf(req).ReadDir(r, ino, size, offset, fi->fh, false);
}

void OpReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
                   struct fuse_file_info* fi) {
  FuseRequest r(req);
  OpsOf(req).ReadDir(r, ino, size, offset, fi->fh, true);
}

void OpReleaseDir(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
  FuseRequest r(req);
  OpsOf(req).ReleaseDir(r, fi->fh);
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  FuseRequest r(req, fi);
  OpsOf(req).Open(r, ino, fi->flags);
}

void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, struct fuse_file_info* fi) {
  FuseRequest r(req);
  OpsOf(req).Read(r, ino, size, offset, fi->fh);
}

void OpRelease(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
  FuseRequest r(req);
  OpsOf(req).Release(r, fi->fh);
}

void OpStatFs(fuse_req_t req, fuse_ino_t) {
  FuseRequest r(req);
  OpsOf(req).StatFs(r);
}

void OpAccess(fuse_req_t req, fuse_ino_t ino, int mask) {
  FuseRequest r(req);
  OpsOf(req).Access(r, ino, mask);
}

void OpReadLink(fuse_req_t req, fuse_ino_t) {
  FuseRequest r(req);
  Operations::ReadLink(r);
}

void OpGetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  FuseRequest r(req);
  OpsOf(req).GetXattr(r, ino, name, size);
}

void OpListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  FuseRequest r(req);
  OpsOf(req).ListXattr(r, ino, size);
}

// Everything that would change the tree: the mount is read-only.
void ReadOnly(fuse_req_t req) {
  FuseRequest r(req);
  Operations::ReadOnly(r);
}
void OpSetAttr(fuse_req_t req, fuse_ino_t, struct stat*, int, struct fuse_file_info*) {
  ReadOnly(req);
}
void OpMknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { ReadOnly(req); }
void OpMkdir(fuse_req_t req, fuse_ino_t, const char*, mode_t) { ReadOnly(req); }
void OpUnlink(fuse_req_t req, fuse_ino_t, const char*) { ReadOnly(req); }
void OpSymlink(fuse_req_t req, const char*, fuse_ino_t, const char*) { ReadOnly(req); }
void OpRename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned int) {
  ReadOnly(req);
}
void OpLink(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { ReadOnly(req); }
void OpWrite(fuse_req_t req, fuse_ino_t, const char*, size_t, off_t, struct fuse_file_info*) {
  ReadOnly(req);
}
void OpCreate(fuse_req_t req, fuse_ino_t, const char*, mode_t, struct fuse_file_info*) {
  ReadOnly(req);
}
void OpSetXattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) {
  ReadOnly(req);
}
void OpRemoveXattr(fuse_req_t req, fuse_ino_t, const char*) { ReadOnly(req); }
void OpFallocate(fuse_req_t req, fuse_ino_t, int, off_t, off_t, struct fuse_file_info*) {
  ReadOnly(req);
}

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof ops);
  ops.init = OpInit;
  ops.lookup = OpLookup;
  ops.forget = OpForget;
  ops.forget_multi = OpForgetMulti;
  ops.getattr = OpGetAttr;
  ops.opendir = OpOpenDir;
  ops.readdir = OpReadDir;
  ops.readdirplus = OpReadDirPlus;
  ops.releasedir = OpReleaseDir;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.release = OpRelease;
  ops.statfs = OpStatFs;
  ops.access = OpAccess;
  ops.readlink = OpReadLink;
  // Implemented, the kernel passes every getxattr on (an ENOSYS it would
  // remember): Filesystem::GetXattr answers security.* and system.* with
  // EOPNOTSUPP first, so that `ls -l` asks once per mount, not per entry.
  ops.getxattr = OpGetXattr;
  ops.listxattr = OpListXattr;
  ops.setattr = OpSetAttr;
  ops.mknod = OpMknod;
  ops.mkdir = OpMkdir;
  ops.unlink = OpUnlink;
  ops.rmdir = OpUnlink;
  ops.symlink = OpSymlink;
  ops.rename = OpRename;
  ops.link = OpLink;
  ops.write = OpWrite;
  ops.create = OpCreate;
  ops.setxattr = OpSetXattr;
  ops.removexattr = OpRemoveXattr;
  ops.fallocate = OpFallocate;
  return ops;
}

// Raises the kernel's read-ahead window for this mount (the FUSE default is
// 128 KiB), so that sequential readers get large requests. The mount is
// found in /proc/self/mountinfo: a stat() of the mountpoint would need the
// request loop that is not running yet.
void SetKernelReadahead(const std::string& mountpoint, size_t bytes) {
  char resolved[PATH_MAX];
  if (::realpath(mountpoint.c_str(), resolved) == nullptr) return;
  FILE* mountinfo = std::fopen("/proc/self/mountinfo", "r");
  if (mountinfo == nullptr) return;
  char line[4096];
  std::string device;
  while (std::fgets(line, sizeof line, mountinfo) != nullptr) {
    // "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT ..." (mountpoint octal-escaped).
    char dev[64], root[PATH_MAX], point[PATH_MAX];
    if (std::sscanf(line, "%*d %*d %63s %4095s %4095s", dev, root, point) == 3 &&
        std::string(point) == resolved) {
      device = dev;  // the last match is the newest mount
    }
  }
  std::fclose(mountinfo);
  if (device.empty()) return;
  const std::string path = "/sys/class/bdi/" + device + "/read_ahead_kb";
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    Log(LogLevel::kDebug, "cannot raise read-ahead: " + path + " not writable");
    return;
  }
  std::fprintf(f, "%zu\n", bytes / 1024);
  std::fclose(f);
}

}  // namespace

std::string LibraryVersion() { return fuse_pkgversion(); }

int Serve(vfs::Filesystem& filesystem, const SessionOptions& options) {
  State state;
  state.fs = &filesystem;
  state.max_read = options.max_read;
  state.on_start = options.on_start;
  state.ops = std::make_unique<Operations>(filesystem, options.max_read);

  std::vector<char*> argv;
  for (const auto& a : options.fuse_args) argv.push_back(const_cast<char*>(a.c_str()));
  struct fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  const fuse_lowlevel_ops ops = MakeOps();
  struct fuse_session* session = fuse_session_new(&args, &ops, sizeof ops, &state);
  fuse_opt_free_args(&args);
  if (session == nullptr) {
    Log(LogLevel::kError, "cannot create the FUSE session (see the message above)");
    return 1;
  }
  int rc = 1;
  if (fuse_set_signal_handlers(session) != 0) {
    fuse_session_destroy(session);
    return 1;
  }
  if (fuse_session_mount(session, options.mountpoint.c_str()) != 0) {
    Log(LogLevel::kError, "cannot mount on " + options.mountpoint);
    fuse_remove_signal_handlers(session);
    fuse_session_destroy(session);
    return 1;
  }
  if (options.kernel_readahead > 0)
    SetKernelReadahead(options.mountpoint, options.kernel_readahead);
  // Only now, with the mount in place, does the parent return to the caller.
  if (fuse_daemonize(options.foreground ? 1 : 0) != 0) {
    fuse_session_unmount(session);
    fuse_remove_signal_handlers(session);
    fuse_session_destroy(session);
    return 1;
  }
  if (!options.foreground) LogDetached();
  // Started after fuse_daemonize(): threads do not survive its fork.
  // Shared with the callback: a probe still calling it keeps it alive, and
  // after Stop() its Enqueue drops what it is given.
  auto invalidator = std::make_shared<Invalidator>(session);
  filesystem.SetInvalidateCallback(
      [invalidator](const std::vector<vfs::StaleNode>& nodes) { invalidator->Enqueue(nodes); });
  auto pusher = std::make_unique<PagePusher>(session);
  filesystem.SetPagePushCallback(
      [&pusher](vfs::PagePush push) { return pusher->Enqueue(std::move(push)); });
  // Made present while the first requests are on their way, after the fork
  // of fuse_daemonize (whose child would copy pages touched before it).
  std::thread reply_preparer;
  try {
    reply_preparer =
        std::thread([&state] { state.ops->reply_buffers().Prepare(kPreparedReplyBuffers); });
  } catch (const std::system_error&) {
    // No thread to spare: reads make their buffers as they come.
  }
  // Only a remote source has reads that wait on the network (no idle threads
  // for local mounts).
  if (filesystem.costs().requests_may_stall) {
    AsyncReads::Options async;
    // A worker per connection: more would wait for one; fewer would leave
    // connections idle while reads queue.
    async.workers = std::clamp(options.remote_connections, 8, 256);
    state.ops->StartAsyncReads(async);
  }
  if (options.single_threaded) {
    rc = fuse_session_loop(session);
  } else {
    struct fuse_loop_config* config = fuse_loop_cfg_create();
    if (config == nullptr) {
      Log(LogLevel::kError, "cannot create the FUSE loop configuration: out of memory");
      rc = -1;
    } else {
      fuse_loop_cfg_set_clone_fd(config, 0);
      fuse_loop_cfg_set_max_threads(config, options.max_threads);
      // Never more idle threads kept than may exist at all.
      fuse_loop_cfg_set_idle_threads(config,
                                     std::min(options.max_idle_threads, options.max_threads));
      rc = fuse_session_loop_mt(session, config);
      fuse_loop_cfg_destroy(config);
    }
  }
  if (reply_preparer.joinable()) reply_preparer.join();
  // Teardown, in this order:
  // 1. reads still answered on threads of their own (AsyncReads): before the
  //    unmount (replies need the channel) and the handles' release;
  // 2. the filesystem's background probes (running ones end, queued ones
  //    answer EIO): the last callers of the invalidation callback besides
  //    request threads, which have all ended with the loop;
  // 3. the invalidator's thread, the last user of the session besides this
  //    one (a late Enqueue is dropped), then the callback that shares it;
  // 4. the page pusher, then the session itself.
  state.ops->ShutdownAsyncReads();
  filesystem.StopBackground();
  invalidator->Stop();
  filesystem.SetInvalidateCallback(nullptr);
  invalidator.reset();
  filesystem.SetPagePushCallback(nullptr);
  pusher.reset();
  fuse_session_unmount(session);
  fuse_remove_signal_handlers(session);
  fuse_session_destroy(session);
  // libfuse returns the number of the signal that ended the loop: a clean
  // SIGTERM / SIGINT stop is a success (systemd's "stop" must not fail).
  return rc >= 0 ? 0 : 1;
}

}  // namespace b2ndfs::fuse
