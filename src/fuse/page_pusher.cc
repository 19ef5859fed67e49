#include "page_pusher.h"

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/util/log.h"

namespace b2ndfs::fuse {

PagePusher::PagePusher(struct fuse_session* session)
    : PagePusher([session](vfs::Ino ino, const uint8_t* data, size_t size) {
        struct fuse_bufvec buffer = FUSE_BUFVEC_INIT(size);
        buffer.buf[0].mem = const_cast<uint8_t*>(data);
        return fuse_lowlevel_notify_store(session, ino, 0, &buffer,
                                          static_cast<enum fuse_buf_copy_flags>(0));
      }) {}

PagePusher::PagePusher(Store store) : store_(std::move(store)) {
  try {
    for (size_t i = 0; i < kThreads; ++i) threads_.emplace_back([this] { Loop(); });
  } catch (...) {
    Stop();  // the threads made so far
    throw;
  }
}

PagePusher::~PagePusher() { Stop(); }

void PagePusher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  for (auto& thread : threads_) thread.join();
}

bool PagePusher::Enqueue(vfs::PagePush push) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return false;
    if (std::find(in_progress_.begin(), in_progress_.end(), push.ino) != in_progress_.end() ||
        std::any_of(queue_.begin(), queue_.end(),
                    [&](const vfs::PagePush& queued) { return queued.ino == push.ino; })) {
      return true;
    }
    if (queue_.size() >= kMaxQueued) return false;
    queue_.push_back(std::move(push));
  }
  wake_.notify_one();
  return true;
}

void PagePusher::Loop() {
  for (;;) {
    vfs::PagePush push;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      push = std::move(queue_.front());
      queue_.pop_front();
      in_progress_.push_back(push.ino);
    }
    bool stored = false;
    // From the block memory's slabs and recycled buffers: memory used
    // before, which a fresh allocation per push would not be.
    std::optional<cache::Bytes> bytes;
    try {
      bytes.emplace(static_cast<size_t>(push.size));
    } catch (const std::bad_alloc&) {
    }
    if (bytes) {
      Status rendered = Status::Ok();
      try {
        rendered = push.render(bytes->data());
      } catch (const std::exception& e) {
        rendered = Status(EIO, e.what());
      }
      if (rendered.ok()) {
        int rc = -EIO;
        try {
          rc = store_(push.ino, bytes->data(), static_cast<size_t>(push.size));
        } catch (...) {
          // (A test's store that throws: logged below as EIO.)
        }
        // -ENOENT: the kernel dropped the inode meanwhile; nothing to store.
        stored = rc == 0;
        if (rc != 0 && rc != -ENOENT) {
          Log(LogLevel::kDebug, "storing pages ahead of a reader: " + std::string(strerror(-rc)));
        }
      } else {
        Log(LogLevel::kDebug, "rendering a file ahead of its reader: " + rendered.message());
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      in_progress_.erase(std::find(in_progress_.begin(), in_progress_.end(), push.ino));
    }
    push.done(stored);
  }
}

}  // namespace b2ndfs::fuse
