#include "operations.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/util/log.h"

namespace b2ndfs::fuse {

struct Operations::DirHandle {
  std::shared_ptr<vfs::DirListing> listing;
};

namespace {

int ErrnoOf(const Status& status) {
  return status.error_number() > 0 ? status.error_number() : EIO;
}

EntryReply EntryOf(const vfs::Attr& attr) {
  EntryReply e;
  e.ino = attr.st.st_ino;
  e.attr = attr.st;
  e.attr_timeout = attr.timeout;
  e.entry_timeout = attr.timeout;
  return e;
}

// Replies with `value` as fuse_lowlevel.h wants: its size for a size query
// (size 0), ERANGE when it does not fit, else the bytes.
void ReplyXattr(Request& req, const std::string& value, size_t size) {
  if (size == 0) {
    req.ReplyXattrSize(value.size());
  } else if (value.size() > size) {
    req.ReplyErr(ERANGE);
  } else {
    req.ReplyBuf(value.data(), value.size());
  }
}

}  // namespace

void ReplyToException(Request& req) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    req.ReplyErr(ENOMEM);
  } catch (const std::exception& e) {
    Log(LogLevel::kError, std::string("internal error: ") + e.what());
    req.ReplyErr(EIO);
  } catch (...) {
    req.ReplyErr(EIO);
  }
}

Operations::Operations(vfs::Filesystem& fs, size_t max_read) : fs_(fs), reply_buffers_(max_read) {}

Operations::~Operations() {
  async_reads_.reset();  // its running reads use the handles
  for (auto* f : files_) delete f;
  for (auto* d : dirs_) delete d;
}

template <typename T>
void Operations::Untrack(std::unordered_set<T*>& set, T* handle) {
  {
    std::lock_guard<std::mutex> lock(handles_mutex_);
    set.erase(handle);
  }
  delete handle;
}

void Operations::Lookup(Request& req, vfs::Ino parent, const char* name) noexcept {
  Trampoline(req, [&] {
    auto attr = fs_.Lookup(parent, name);
    if (!attr.ok()) {
      req.ReplyErr(ErrnoOf(attr.status()));
      return;
    }
    const EntryReply e = EntryOf(*attr);
    if (req.ReplyEntry(e) == -ENOENT) {
      // The lookup was interrupted: the kernel never saw the reference.
      fs_.Forget(e.ino, 1);
    }
  });
}

void Operations::Forget(Request& req, vfs::Ino ino, uint64_t nlookup) noexcept {
  Trampoline(req, [&] {
    fs_.Forget(ino, nlookup);
    req.ReplyNone();
  });
}

void Operations::GetAttr(Request& req, vfs::Ino ino, uint64_t fh) noexcept {
  Trampoline(req, [&] {
    // fstat of an open descriptor comes with its handle: its own version
    // answers, also after the container changed.
    const auto* open = reinterpret_cast<const vfs::FileHandle*>(fh);
    auto attr = fs_.GetAttr(ino, open);
    if (!attr.ok()) {
      req.ReplyErr(ErrnoOf(attr.status()));
      return;
    }
    req.ReplyAttr(attr->st, attr->timeout);
  });
}

void Operations::OpenDir(Request& req, vfs::Ino ino) noexcept {
  Trampoline(req, [&] {
    auto listing = fs_.OpenDir(ino);
    if (!listing.ok()) {
      req.ReplyErr(ErrnoOf(listing.status()));
      return;
    }
    auto handle = std::make_unique<DirHandle>();
    handle->listing = std::move(listing).value();
    OpenReply open;
    open.fh = reinterpret_cast<uint64_t>(handle.get());
    {
      std::lock_guard<std::mutex> lock(handles_mutex_);
      dirs_.insert(handle.get());
    }
    if (req.ReplyOpen(open) == 0) {
      handle.release();
    } else {
      // The open was interrupted: no release will come for this handle.
      std::lock_guard<std::mutex> lock(handles_mutex_);
      dirs_.erase(handle.get());
    }
  });
}

void Operations::ReadDir(Request& req, vfs::Ino ino, size_t size, off_t offset, uint64_t fh,
                         bool plus) noexcept {
  Trampoline(
      req, [&] { ServeReadDir(req, ino, size, offset, *reinterpret_cast<DirHandle*>(fh), plus); });
}

// READDIR and READDIRPLUS. Each entry handed over with attributes is a
// lookup: one kernel reference, given back by FORGET.
void Operations::ServeReadDir(Request& req, vfs::Ino ino, size_t size, off_t offset,
                              DirHandle& handle, bool plus) {
  vfs::DirListing& listing = *handle.listing;
  const bool attributes =
      plus && listing.cheap_lookups() && listing.size() <= kReadDirPlusMaxEntries;
  std::vector<char> buffer(size);
  size_t used = 0;
  // Offsets 0 and 1 are "." and ".."; entry i of the listing is at i + 2.
  for (size_t index = static_cast<size_t>(offset);; ++index) {
    if (index >= 2) {
      auto has = listing.Has(index - 2);
      if (!has.ok() && used == 0) {
        req.ReplyErr(ErrnoOf(has.status()));
        return;
      }
      // (An error after some entries: those go now, the error with the
      // next call.)
      if (!has.ok() || !*has) break;
    }
    EntryReply e;
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
        if (attr.ok()) e = EntryOf(*attr);
      }
    }
    const off_t next = static_cast<off_t>(index + 1);
    const size_t need = req.AddDirEntry(buffer.data() + used, size - used, name, e, next, plus);
    if (need > size - used) break;
    used += need;
  }
  req.ReplyBuf(buffer.data(), used);
}

void Operations::ReleaseDir(Request& req, uint64_t fh) noexcept {
  Trampoline(req, [&] {
    Untrack(dirs_, reinterpret_cast<DirHandle*>(fh));
    req.ReplyErr(0);
  });
}

void Operations::Open(Request& req, vfs::Ino ino, int flags) noexcept {
  Trampoline(req, [&] {
    auto handle = fs_.Open(ino, flags);
    if (!handle.ok()) {
      req.ReplyErr(ErrnoOf(handle.status()));
      return;
    }
    auto owned = std::make_unique<vfs::FileHandle>(std::move(handle).value());
    OpenReply open;
    open.keep_cache = owned->keep_cache;
    // Array files keep the page cache (mmap needs it); only generated files
    // whose size changes between opens (stats) bypass it.
    open.direct_io = owned->direct_io;
    open.fh = reinterpret_cast<uint64_t>(owned.get());
    {
      std::lock_guard<std::mutex> lock(handles_mutex_);
      files_.insert(owned.get());
    }
    if (req.ReplyOpen(open) == 0) {
      owned.release();
    } else {
      // The open was interrupted: no release will come for this handle.
      std::lock_guard<std::mutex> lock(handles_mutex_);
      files_.erase(owned.get());
    }
  });
}

// Reads into a reply buffer and replies (the buffer is free again once
// the reply returns: the kernel has copied it).
void Operations::ServeRead(Request& req, vfs::FileHandle& handle, size_t size, off_t offset) {
  const ReplyBuffers::Lease buffer = reply_buffers_.Take(std::max<size_t>(size, 1));
  auto n = fs_.Read(handle, offset, size, buffer.data());
  if (!n.ok()) {
    req.ReplyErr(ErrnoOf(n.status()));
    return;
  }
  req.ReplyBuf(reinterpret_cast<const char*>(buffer.data()), *n);
}

void Operations::Read(Request& req, vfs::Ino ino, size_t size, off_t offset, uint64_t fh) noexcept {
  auto* handle = reinterpret_cast<vfs::FileHandle*>(fh);
  // Remote reads are answered on AsyncReads' workers (StartAsyncReads).
  if (async_reads_ != nullptr && async_reads_->Defer(req, ino, size, offset, handle)) return;
  Trampoline(req, [&] { ServeRead(req, *handle, size, offset); });
}

void Operations::StartAsyncReads(AsyncReads::Options options) {
  async_reads_ = std::make_unique<AsyncReads>(
      options, [this](Request& req, vfs::FileHandle& handle, size_t size, off_t offset) {
        Trampoline(req, [&] { ServeRead(req, handle, size, offset); });
      });
}

void Operations::ShutdownAsyncReads() {
  if (async_reads_ != nullptr) async_reads_->Shutdown();
}

void Operations::Release(Request& req, uint64_t fh) noexcept {
  Trampoline(req, [&] {
    Untrack(files_, reinterpret_cast<vfs::FileHandle*>(fh));
    req.ReplyErr(0);
  });
}

void Operations::StatFs(Request& req) noexcept {
  Trampoline(req, [&] {
    struct statvfs st {};
    st.f_bsize = 4096;
    st.f_frsize = 4096;
    st.f_namemax = 255;
    st.f_files = fs_.NodeCount();
    st.f_flag = ST_RDONLY;
    req.ReplyStatfs(st);
  });
}

void Operations::Access(Request& req, vfs::Ino ino, int mask) noexcept {
  Trampoline(req, [&] {
    if (mask & W_OK) {
      req.ReplyErr(EROFS);
      return;
    }
    auto attr = fs_.GetAttr(ino);
    req.ReplyErr(attr.ok() ? 0 : ErrnoOf(attr.status()));
  });
}

void Operations::GetXattr(Request& req, vfs::Ino ino, const char* name, size_t size) noexcept {
  Trampoline(req, [&] {
    auto value = fs_.GetXattr(ino, name);
    if (!value.ok()) {
      req.ReplyErr(ErrnoOf(value.status()));
      return;
    }
    ReplyXattr(req, *value, size);
  });
}

void Operations::ListXattr(Request& req, vfs::Ino ino, size_t size) noexcept {
  Trampoline(req, [&] {
    auto names = fs_.ListXattr(ino);
    if (!names.ok()) {
      req.ReplyErr(ErrnoOf(names.status()));
      return;
    }
    ReplyXattr(req, *names, size);
  });
}

void Operations::ReadOnly(Request& req) noexcept { req.ReplyErr(EROFS); }

void Operations::ReadLink(Request& req) noexcept { req.ReplyErr(EINVAL); }

size_t Operations::open_files() const {
  std::lock_guard<std::mutex> lock(handles_mutex_);
  return files_.size();
}

size_t Operations::open_dirs() const {
  std::lock_guard<std::mutex> lock(handles_mutex_);
  return dirs_.size();
}

}  // namespace b2ndfs::fuse
