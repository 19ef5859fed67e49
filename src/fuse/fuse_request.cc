#include "fuse_request.h"

#include <cstring>
#include <memory>

namespace b2ndfs::fuse {
namespace {

void ToEntryParam(const EntryReply& entry, fuse_entry_param* e) {
  std::memset(e, 0, sizeof *e);
  e->ino = entry.ino;
  e->attr = entry.attr;
  e->attr_timeout = entry.attr_timeout;
  e->entry_timeout = entry.entry_timeout;
}

// libfuse calls it with the request's lock held; `sink` outlives it.
void Interrupted(fuse_req_t req, void* sink) {
  static_cast<InterruptSink*>(sink)->Interrupted(req);
}

}  // namespace

int FuseRequest::ReplyErr(int error) { return fuse_reply_err(req_, error); }

void FuseRequest::ReplyNone() { fuse_reply_none(req_); }

int FuseRequest::ReplyEntry(const EntryReply& entry) {
  fuse_entry_param e;
  ToEntryParam(entry, &e);
  return fuse_reply_entry(req_, &e);
}

int FuseRequest::ReplyAttr(const struct stat& attr, double timeout) {
  return fuse_reply_attr(req_, &attr, timeout);
}

int FuseRequest::ReplyOpen(const OpenReply& open) {
  fi_->fh = open.fh;
  fi_->keep_cache = open.keep_cache ? 1 : 0;
  fi_->direct_io = open.direct_io ? 1 : 0;
  fi_->cache_readdir = open.cache_readdir ? 1 : 0;
  return fuse_reply_open(req_, fi_);
}

int FuseRequest::ReplyBuf(const char* data, size_t size) {
  return fuse_reply_buf(req_, data, size);
}

int FuseRequest::ReplyStatfs(const struct statvfs& st) { return fuse_reply_statfs(req_, &st); }

int FuseRequest::ReplyXattrSize(size_t size) { return fuse_reply_xattr(req_, size); }

size_t FuseRequest::AddDirEntry(char* buffer, size_t room, const std::string& name,
                                const EntryReply& entry, off_t next, bool plus) {
  fuse_entry_param e;
  ToEntryParam(entry, &e);
  return plus ? fuse_add_direntry_plus(req_, buffer, room, name.c_str(), &e, next)
              : fuse_add_direntry(req_, buffer, room, name.c_str(), &e.attr, next);
}

bool FuseRequest::interrupted() const { return fuse_req_interrupted(req_) != 0; }

void FuseRequest::OnInterrupt(InterruptSink* sink) {
  // The sink, not this object, is the callback's data: libfuse may call it
  // after the reply (it read the callback before the reply cleared it), when
  // a detached request is already freed.
  fuse_req_interrupt_func(req_, &Interrupted, sink);
}

std::unique_ptr<Request> FuseRequest::Detach() { return std::make_unique<FuseRequest>(req_); }

}  // namespace b2ndfs::fuse
