#include "reply_buffers.h"

#include <new>

#include "b2ndfs/cache/buffer_memory.h"

namespace b2ndfs::fuse {

ReplyBuffers::Lease::~Lease() {
  if (buffer_ != nullptr) pool_->Give(std::move(buffer_), size_);
}

std::unique_ptr<uint8_t[]> ReplyBuffers::NewBuffer() const {
  // Not value-initialized: every byte sent is written first.
  std::unique_ptr<uint8_t[]> buffer(new uint8_t[buffer_bytes_]);
  cache::PrefaultForWrite(buffer.get(), buffer_bytes_);
  return buffer;
}

ReplyBuffers::Lease ReplyBuffers::Take(size_t size) {
  if (size > buffer_bytes_) return Lease(this, std::unique_ptr<uint8_t[]>(new uint8_t[size]), size);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      std::unique_ptr<uint8_t[]> buffer = std::move(free_.back());
      free_.pop_back();
      return Lease(this, std::move(buffer), buffer_bytes_);
    }
  }
  return Lease(this, NewBuffer(), buffer_bytes_);
}

void ReplyBuffers::Give(std::unique_ptr<uint8_t[]> buffer, size_t size) {
  if (size != buffer_bytes_) return;  // a one-off: freed here
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    free_.push_back(std::move(buffer));
  } catch (const std::bad_alloc&) {
    // Not kept: freed here (a destructor's path must not throw).
  }
}

void ReplyBuffers::Prepare(size_t count) {
  for (size_t i = 0; i < count; ++i) {
    std::unique_ptr<uint8_t[]> buffer = NewBuffer();
    std::lock_guard<std::mutex> lock(mutex_);
    // Behind the ones reads have used since (those are warmer).
    free_.insert(free_.begin(), std::move(buffer));
  }
}

size_t ReplyBuffers::kept() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_.size();
}

}  // namespace b2ndfs::fuse
