// fuse/fuse_request (private to src/fuse): the Request of a real kernel
// request, a fuse_req_t of libfuse's low-level API (session.cc makes one per
// callback, on the stack; Detach() one on the heap for a read answered on
// another thread). fuse_file_info is the one libfuse passed to open and
// opendir, which ReplyOpen fills in.
#pragma once

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

#include <memory>
#include <string>

#include "request.h"

namespace b2ndfs::fuse {

class FuseRequest final : public Request {
 public:
  explicit FuseRequest(fuse_req_t req, struct fuse_file_info* fi = nullptr) : req_(req), fi_(fi) {}

  int ReplyErr(int error) override;
  void ReplyNone() override;
  int ReplyEntry(const EntryReply& entry) override;
  int ReplyAttr(const struct stat& attr, double timeout) override;
  int ReplyOpen(const OpenReply& open) override;
  int ReplyBuf(const char* data, size_t size) override;
  int ReplyStatfs(const struct statvfs& st) override;
  int ReplyXattrSize(size_t size) override;
  size_t AddDirEntry(char* buffer, size_t room, const std::string& name, const EntryReply& entry,
                     off_t next, bool plus) override;
  bool interrupted() const override;
  const void* id() const override { return req_; }
  void OnInterrupt(InterruptSink* sink) override;
  std::unique_ptr<Request> Detach() override;

 private:
  fuse_req_t req_;
  struct fuse_file_info* fi_;
};

}  // namespace b2ndfs::fuse
