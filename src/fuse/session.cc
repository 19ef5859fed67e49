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
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_set>
#include <vector>

#include "async_reads.h"
#include "b2ndfs/util/log.h"
#include "invalidator.h"
#include "page_pusher.h"
#include "reply_buffers.h"

namespace b2ndfs::fuse {
namespace {

struct DirHandle {
  std::shared_ptr<vfs::DirListing> listing;
};

struct State {
  vfs::Filesystem* fs = nullptr;
  size_t max_read = 1 << 20;
  std::function<void()> on_start;           // SessionOptions::on_start
  std::unique_ptr<AsyncReads> async_reads;  // remote reads; null until the loop runs
  std::unique_ptr<ReplyBuffers> reply_buffers;
  // Handles the kernel has not released yet. On SIGTERM or a forced unmount
  // it never will: they are freed when the session ends.
  std::mutex handles_mutex;  // leaf lock
  std::unordered_set<vfs::FileHandle*> files;
  std::unordered_set<DirHandle*> dirs;

  template <typename T>
  void Track(std::unordered_set<T*>& set, T* handle) {
    std::lock_guard<std::mutex> lock(handles_mutex);
    set.insert(handle);
  }
  template <typename T>
  void Untrack(std::unordered_set<T*>& set, T* handle) {
    {
      std::lock_guard<std::mutex> lock(handles_mutex);
      set.erase(handle);
    }
    delete handle;
  }
  ~State() {
    for (auto* f : files) delete f;
    for (auto* d : dirs) delete d;
  }
};

// Reply buffers made present at the start: a sequential reader has one read
// in flight and the kernel's read-ahead another.
constexpr size_t kPreparedReplyBuffers = 2;

State& StateOf(fuse_req_t req) { return *static_cast<State*>(fuse_req_userdata(req)); }

// Runs `body`, which must reply itself on success; any escaping exception is
// turned into exactly one error reply.
template <typename Body>
void Trampoline(fuse_req_t req, Body&& body) noexcept {
  try {
    body();
  } catch (const std::bad_alloc&) {
    fuse_reply_err(req, ENOMEM);
  } catch (const std::exception& e) {
    Log(LogLevel::kError, std::string("internal error: ") + e.what());
    fuse_reply_err(req, EIO);
  } catch (...) {
    fuse_reply_err(req, EIO);
  }
}

int ErrnoOf(const Status& status) {
  return status.error_number() > 0 ? status.error_number() : EIO;
}

void OpInit(void* userdata, struct fuse_conn_info* conn) {
  auto* state = static_cast<State*>(userdata);
  // libfuse 3.14 derives the kernel's max_pages from max_write; a larger
  // value lets the kernel send reads of up to max_read bytes at once.
  conn->max_write = static_cast<unsigned>(state->max_read);
  conn->max_read = 0;
  conn->max_readahead = static_cast<unsigned>(state->max_read);
  if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
  if (conn->capable & FUSE_CAP_SPLICE_WRITE) conn->want |= FUSE_CAP_SPLICE_WRITE;
  // Every listing as READDIRPLUS (ServeReadDir chooses which entries carry
  // attributes): in the kernel's "auto" mode only a directory's first page
  // would, unless its entries were looked up meanwhile.
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

// A looked-up node as the kernel gets it: one reference to its inode, its
// attributes, and how long it may cache both.
void SetEntry(const vfs::Attr& attr, fuse_entry_param* e) {
  e->ino = attr.st.st_ino;
  e->attr = attr.st;
  e->attr_timeout = attr.timeout;
  e->entry_timeout = attr.timeout;
}

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Trampoline(req, [&] {
    // Taken before replying: a reply frees `req`, even a failed one.
    State& state = StateOf(req);
    auto attr = state.fs->Lookup(parent, name);
    if (!attr.ok()) {
      fuse_reply_err(req, ErrnoOf(attr.status()));
      return;
    }
    fuse_entry_param e;
    std::memset(&e, 0, sizeof e);
    SetEntry(*attr, &e);
    if (fuse_reply_entry(req, &e) == -ENOENT) {
      // The lookup was interrupted: the kernel never saw the reference.
      state.fs->Forget(e.ino, 1);
    }
  });
}

void OpForget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  Trampoline(req, [&] {
    StateOf(req).fs->Forget(ino, nlookup);
    fuse_reply_none(req);
  });
}

void OpForgetMulti(fuse_req_t req, size_t count, struct fuse_forget_data* forgets) {
  Trampoline(req, [&] {
    for (size_t i = 0; i < count; ++i) StateOf(req).fs->Forget(forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
  });
}

void OpGetAttr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  Trampoline(req, [&] {
    // fstat of an open descriptor comes with its handle: its own version
    // answers, also after the container changed.
    const auto* open = fi != nullptr ? reinterpret_cast<const vfs::FileHandle*>(fi->fh) : nullptr;
    auto attr = StateOf(req).fs->GetAttr(ino, open);
    if (!attr.ok()) {
      fuse_reply_err(req, ErrnoOf(attr.status()));
      return;
    }
    fuse_reply_attr(req, &attr->st, attr->timeout);
  });
}

void OpOpenDir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  Trampoline(req, [&] {
    State& state = StateOf(req);  // before replying, which frees `req`
    auto listing = state.fs->OpenDir(ino);
    if (!listing.ok()) {
      fuse_reply_err(req, ErrnoOf(listing.status()));
      return;
    }
    auto handle = std::make_unique<DirHandle>();
    handle->listing = std::move(listing).value();
    fi->fh = reinterpret_cast<uint64_t>(handle.get());
    fi->cache_readdir = 0;
    state.Track(state.dirs, handle.get());
    if (fuse_reply_open(req, fi) == 0) {
      handle.release();
    } else {
      // The open was interrupted: no release will come for this handle.
      std::lock_guard<std::mutex> lock(state.handles_mutex);
      state.dirs.erase(handle.get());
    }
  });
}

// The kernel gets the attributes of a directory's entries with their names
// (READDIRPLUS) where looking them up is cheap (inside a container) and the
// directory holds at most this many: it then knows their inodes before they
// are opened, so pages can be pushed ahead of a reader of slices/0/ on a
// fresh mount, and `ls -l` costs no lookup per entry. Larger directories (a
// chunks/ of millions) and the mirrored tree (whose lookups would open
// containers) get names only, as with READDIR.
constexpr size_t kReadDirPlusMaxEntries = size_t{1} << 16;

// READDIR and READDIRPLUS. Each entry handed over with attributes is a
// lookup: one kernel reference, given back by FORGET.
void ServeReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
                  struct fuse_file_info* fi, bool plus) {
  Trampoline(req, [&] {
    auto* handle = reinterpret_cast<DirHandle*>(fi->fh);
    vfs::DirListing& listing = *handle->listing;
    const bool attributes =
        plus && listing.cheap_lookups() && listing.size() <= kReadDirPlusMaxEntries;
    std::vector<char> buffer(size);
    size_t used = 0;
    // Offsets 0 and 1 are "." and ".."; entry i of the listing is at i + 2.
    for (size_t index = static_cast<size_t>(offset);; ++index) {
      if (index >= 2) {
        auto has = listing.Has(index - 2);
        if (!has.ok() && used == 0) {
          fuse_reply_err(req, ErrnoOf(has.status()));
          return;
        }
        // (An error after some entries: those go now, the error with the
        // next call.)
        if (!has.ok() || !*has) break;
      }
      fuse_entry_param e;
      std::memset(&e, 0, sizeof e);
      std::string name;
      if (index < 2) {
        name = index == 0 ? "." : "..";
        e.attr.st_ino = ino;
        e.attr.st_mode = S_IFDIR;
      } else {
        vfs::DirEntry entry = listing.at(index - 2);
        name = std::move(entry.name);
        e.attr.st_ino = entry.ino;
        e.attr.st_mode = entry.type;
        if (attributes) {
          // From the listing's own generation, at no source I/O. Names
          // inside a container hold no per-name state, so the references
          // the kernel counts for them need no bookkeeping here. An entry
          // without attributes (ino 0) is looked up when it is used.
          auto attr = listing.Attributes(index - 2);
          if (attr.ok()) SetEntry(*attr, &e);
        }
      }
      const off_t next = static_cast<off_t>(index + 1);
      const size_t need = plus ? fuse_add_direntry_plus(req, buffer.data() + used, size - used,
                                                        name.c_str(), &e, next)
                               : fuse_add_direntry(req, buffer.data() + used, size - used,
                                                   name.c_str(), &e.attr, next);
      if (need > size - used) break;
      used += need;
    }
    fuse_reply_buf(req, buffer.data(), used);
  });
}

void OpReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
               struct fuse_file_info* fi) {
  ServeReadDir(req, ino, size, offset, fi, false);
}

void OpReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
                   struct fuse_file_info* fi) {
  ServeReadDir(req, ino, size, offset, fi, true);
}

void OpReleaseDir(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
  Trampoline(req, [&] {
    StateOf(req).Untrack(StateOf(req).dirs, reinterpret_cast<DirHandle*>(fi->fh));
    fuse_reply_err(req, 0);
  });
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  Trampoline(req, [&] {
    State& state = StateOf(req);  // before replying, which frees `req`
    auto handle = state.fs->Open(ino, fi->flags);
    if (!handle.ok()) {
      fuse_reply_err(req, ErrnoOf(handle.status()));
      return;
    }
    auto owned = std::make_unique<vfs::FileHandle>(std::move(handle).value());
    fi->keep_cache = owned->keep_cache ? 1 : 0;
    // Array files keep the page cache (mmap needs it); only generated files
    // whose size changes between opens (stats) bypass it.
    fi->direct_io = owned->direct_io ? 1 : 0;
    fi->fh = reinterpret_cast<uint64_t>(owned.get());
    state.Track(state.files, owned.get());
    if (fuse_reply_open(req, fi) == 0) {
      owned.release();
    } else {
      // The open was interrupted: no release will come for this handle.
      std::lock_guard<std::mutex> lock(state.handles_mutex);
      state.files.erase(owned.get());
    }
  });
}

// Reads into a reply buffer and replies (the buffer is free again once
// fuse_reply_buf returns: the kernel has copied it).
void ServeRead(fuse_req_t req, vfs::FileHandle& handle, size_t size, off_t offset) {
  State& state = StateOf(req);
  const ReplyBuffers::Lease buffer = state.reply_buffers->Take(std::max<size_t>(size, 1));
  auto n = state.fs->Read(handle, offset, size, buffer.data());
  if (!n.ok()) {
    fuse_reply_err(req, ErrnoOf(n.status()));
    return;
  }
  fuse_reply_buf(req, reinterpret_cast<const char*>(buffer.data()), *n);
}

void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, struct fuse_file_info* fi) {
  // Remote reads are answered on AsyncReads' workers, which call OpRead again.
  if (DeferRead(StateOf(req).async_reads.get(), req, ino, size, offset, fi, OpRead)) return;
  Trampoline(req,
             [&] { ServeRead(req, *reinterpret_cast<vfs::FileHandle*>(fi->fh), size, offset); });
}

void OpRelease(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
  Trampoline(req, [&] {
    StateOf(req).Untrack(StateOf(req).files, reinterpret_cast<vfs::FileHandle*>(fi->fh));
    fuse_reply_err(req, 0);
  });
}

void OpStatFs(fuse_req_t req, fuse_ino_t) {
  Trampoline(req, [&] {
    struct statvfs st;
    std::memset(&st, 0, sizeof st);
    st.f_bsize = 4096;
    st.f_frsize = 4096;
    st.f_namemax = 255;
    st.f_files = StateOf(req).fs->NodeCount();
    st.f_flag = ST_RDONLY;
    fuse_reply_statfs(req, &st);
  });
}

void OpAccess(fuse_req_t req, fuse_ino_t ino, int mask) {
  Trampoline(req, [&] {
    if (mask & W_OK) {
      fuse_reply_err(req, EROFS);
      return;
    }
    auto attr = StateOf(req).fs->GetAttr(ino);
    fuse_reply_err(req, attr.ok() ? 0 : ErrnoOf(attr.status()));
  });
}

void OpReadLink(fuse_req_t req, fuse_ino_t) { fuse_reply_err(req, EINVAL); }

// Everything that would change the tree: the mount is read-only.
void OpSetAttr(fuse_req_t req, fuse_ino_t, struct stat*, int, struct fuse_file_info*) {
  fuse_reply_err(req, EROFS);
}
void OpMknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { fuse_reply_err(req, EROFS); }
void OpMkdir(fuse_req_t req, fuse_ino_t, const char*, mode_t) { fuse_reply_err(req, EROFS); }
void OpUnlink(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void OpSymlink(fuse_req_t req, const char*, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void OpRename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned int) {
  fuse_reply_err(req, EROFS);
}
void OpLink(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void OpWrite(fuse_req_t req, fuse_ino_t, const char*, size_t, off_t, struct fuse_file_info*) {
  fuse_reply_err(req, EROFS);
}
void OpCreate(fuse_req_t req, fuse_ino_t, const char*, mode_t, struct fuse_file_info*) {
  fuse_reply_err(req, EROFS);
}
void OpSetXattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) {
  fuse_reply_err(req, EROFS);
}
// Replies with `value` as fuse_lowlevel.h wants: its size for a size query
// (size 0), ERANGE when it does not fit, else the bytes.
void ReplyXattr(fuse_req_t req, const std::string& value, size_t size) {
  if (size == 0) {
    fuse_reply_xattr(req, value.size());
  } else if (value.size() > size) {
    fuse_reply_err(req, ERANGE);
  } else {
    fuse_reply_buf(req, value.data(), value.size());
  }
}

void OpGetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  Trampoline(req, [&] {
    auto value = StateOf(req).fs->GetXattr(ino, name);
    if (!value.ok()) {
      fuse_reply_err(req, ErrnoOf(value.status()));
      return;
    }
    ReplyXattr(req, *value, size);
  });
}

void OpListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  Trampoline(req, [&] {
    auto names = StateOf(req).fs->ListXattr(ino);
    if (!names.ok()) {
      fuse_reply_err(req, ErrnoOf(names.status()));
      return;
    }
    ReplyXattr(req, *names, size);
  });
}

void OpRemoveXattr(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void OpFallocate(fuse_req_t req, fuse_ino_t, int, off_t, off_t, struct fuse_file_info*) {
  fuse_reply_err(req, EROFS);
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
  state.reply_buffers = std::make_unique<ReplyBuffers>(options.max_read);

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
    reply_preparer = std::thread([&state] { state.reply_buffers->Prepare(kPreparedReplyBuffers); });
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
    state.async_reads = std::make_unique<AsyncReads>(async);
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
  if (state.async_reads) state.async_reads->Shutdown();
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
