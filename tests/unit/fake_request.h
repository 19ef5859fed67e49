#pragma once
// A fuse::Request that records its replies instead of sending them to a
// kernel (src/fuse/request.h): the FUSE operations, AsyncReads and the
// trampolines run in unit tests as mountpoint-s3 runs its filesystem
// without FUSE in the loop. A test interrupts a request (Interrupt(): the
// kernel's FUSE_INTERRUPT) and makes replies fail (reply_result: -ENOENT,
// as libfuse answers when the kernel stopped waiting). READDIR entries are
// sized as the kernel's fuse_dirent / fuse_direntplus, so paging by buffer
// size is that of a real mount.
// Thread-safety: any thread (a detached copy shares the record).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "request.h"

namespace b2ndfs::testing {

// One directory entry a READDIR reply carried.
struct DirItem {
  std::string name;
  vfs::Ino ino = 0;     // the entry's st_ino
  vfs::Ino lookup = 0;  // READDIRPLUS: the referenced inode (0: names only)
  mode_t mode = 0;
  off_t next = 0;  // the offset to continue from
  double attr_timeout = 0;
};

struct Reply {
  enum Kind { kErr, kNone, kEntry, kAttr, kOpen, kBuf, kStatfs, kXattrSize };
  Kind kind = kNone;
  int error = 0;  // kErr
  fuse::EntryReply entry;
  struct stat attr {};
  double timeout = 0;
  fuse::OpenReply open;
  std::string data;  // kBuf
  struct statvfs statfs {};
  size_t size = 0;           // kXattrSize
  std::vector<DirItem> dir;  // kBuf of a READDIR
  size_t dir_bytes = 0;      // what its entries take in the kernel's layout
};

class FakeRequest final : public fuse::Request {
 public:
  FakeRequest() : shared_(std::make_shared<Shared>()) {}

  // The bytes one entry takes in the kernel's layout (fuse_kernel.h:
  // FUSE_NAME_OFFSET 24, FUSE_NAME_OFFSET_DIRENTPLUS 24 + 128, 8-aligned).
  static size_t DirEntryBytes(const std::string& name, bool plus) {
    return ((plus ? 152 : 24) + name.size() + 7) & ~size_t{7};
  }

  // The request's replies so far (exactly one, when it was answered right).
  std::vector<Reply> replies() const {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    return shared_->replies;
  }
  size_t reply_count() const {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    return shared_->replies.size();
  }
  // The one reply; fails the test when there is not exactly one.
  Reply only() const {
    auto all = replies();
    REQUIRE(all.size() == 1);
    return all.front();
  }
  // Waits up to 10 s for a reply (one answered on another thread).
  bool WaitReplied(size_t count = 1) const {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    return shared_->replied.wait_for(lock, std::chrono::seconds(10),
                                     [&] { return shared_->replies.size() >= count; });
  }
  // The kernel interrupts the request: the registered sink hears of it.
  void Interrupt() {
    fuse::InterruptSink* sink = nullptr;
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->interrupted = true;
      sink = shared_->sink;
    }
    if (sink != nullptr) sink->Interrupted(id());
  }
  // What entry, open and buf replies return (-ENOENT: the kernel no
  // longer waits, as for an interrupted lookup or open).
  void set_reply_result(int result) { shared_->reply_result = result; }
  bool has_sink() const {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    return shared_->sink != nullptr;
  }

  int ReplyErr(int error) override {
    Reply r;
    r.kind = Reply::kErr;
    r.error = error;
    return Record(std::move(r), 0);
  }
  void ReplyNone() override {
    Reply r;
    r.kind = Reply::kNone;
    Record(std::move(r), 0);
  }
  int ReplyEntry(const fuse::EntryReply& entry) override {
    Reply r;
    r.kind = Reply::kEntry;
    r.entry = entry;
    return Record(std::move(r), shared_->reply_result);
  }
  int ReplyAttr(const struct stat& attr, double timeout) override {
    Reply r;
    r.kind = Reply::kAttr;
    r.attr = attr;
    r.timeout = timeout;
    return Record(std::move(r), 0);
  }
  int ReplyOpen(const fuse::OpenReply& open) override {
    Reply r;
    r.kind = Reply::kOpen;
    r.open = open;
    return Record(std::move(r), shared_->reply_result);
  }
  int ReplyBuf(const char* data, size_t size) override {
    Reply r;
    r.kind = Reply::kBuf;
    r.data.assign(data, size);
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      r.dir.swap(shared_->dir);
      for (const auto& item : r.dir) r.dir_bytes += DirEntryBytes(item.name, shared_->plus);
    }
    return Record(std::move(r), shared_->reply_result);
  }
  int ReplyStatfs(const struct statvfs& st) override {
    Reply r;
    r.kind = Reply::kStatfs;
    r.statfs = st;
    return Record(std::move(r), 0);
  }
  int ReplyXattrSize(size_t size) override {
    Reply r;
    r.kind = Reply::kXattrSize;
    r.size = size;
    return Record(std::move(r), 0);
  }
  size_t AddDirEntry(char* buffer, size_t room, const std::string& name,
                     const fuse::EntryReply& entry, off_t next, bool plus) override {
    const size_t need = DirEntryBytes(name, plus);
    if (need > room) return need;
    std::fill(buffer, buffer + need, '\0');
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->plus = plus;
    shared_->dir.push_back(DirItem{name, entry.attr.st_ino, entry.ino,
                                   static_cast<mode_t>(entry.attr.st_mode), next,
                                   entry.attr_timeout});
    return need;
  }
  bool interrupted() const override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    return shared_->interrupted;
  }
  const void* id() const override { return shared_.get(); }
  void OnInterrupt(fuse::InterruptSink* sink) override {
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->sink = sink;
      if (!shared_->interrupted) return;
    }
    sink->Interrupted(id());  // as libfuse: an interrupt that came already
  }
  std::unique_ptr<fuse::Request> Detach() override {
    return std::unique_ptr<fuse::Request>(new FakeRequest(shared_));
  }

 private:
  struct Shared {
    mutable std::mutex mutex;
    std::condition_variable replied;
    std::vector<Reply> replies;
    std::vector<DirItem> dir;  // entries added since the last reply
    bool plus = false;
    bool interrupted = false;
    fuse::InterruptSink* sink = nullptr;
    std::atomic<int> reply_result{0};
  };
  explicit FakeRequest(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

  int Record(Reply reply, int result) {
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->replies.push_back(std::move(reply));
    }
    shared_->replied.notify_all();
    return result;
  }

  std::shared_ptr<Shared> shared_;
};

}  // namespace b2ndfs::testing
