#include "reply_buffers.h"

#include <cstring>
#include <new>

#include "b2ndfs/cache/buffer_memory.h"

namespace b2ndfs::fuse {

namespace {

// Slab memory (huge pages) where the size fits a slab, else prefaulted.
uint8_t* NewBuffer(size_t size) {
  if (size >= cache::kSlabSlotMinBytes) {
    return static_cast<uint8_t*>(cache::AllocateLargeBuffer(size));
  }
  return static_cast<uint8_t*>(::operator new(size));
}

void DeleteBuffer(uint8_t* buffer, size_t size) noexcept {
  if (size >= cache::kSlabSlotMinBytes) {
    cache::FreeLargeBuffer(buffer, size);
  } else {
    ::operator delete(buffer);
  }
}

}  // namespace

ReplyBuffers::~ReplyBuffers() {
  for (uint8_t* buffer : free_) DeleteBuffer(buffer, buffer_bytes_);
}

ReplyBuffers::Lease::~Lease() {
  if (buffer_ != nullptr) pool_->Give(buffer_, size_);
}

ReplyBuffers::Lease ReplyBuffers::Take(size_t size) {
  if (size > buffer_bytes_) return Lease(this, NewBuffer(size), size);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      uint8_t* buffer = free_.back();
      free_.pop_back();
      return Lease(this, buffer, buffer_bytes_);
    }
  }
  // Not value-initialized: every byte sent is written first.
  return Lease(this, NewBuffer(buffer_bytes_), buffer_bytes_);
}

void ReplyBuffers::Give(uint8_t* buffer, size_t size) noexcept {
  if (size == buffer_bytes_) {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      free_.push_back(buffer);
      return;
    } catch (const std::bad_alloc&) {
      // Not kept: freed below (a destructor's path must not throw).
    }
  }
  DeleteBuffer(buffer, size);  // a one-off, or no room to keep it
}

void ReplyBuffers::Prepare(size_t count) {
  for (size_t i = 0; i < count; ++i) {
    uint8_t* buffer = NewBuffer(buffer_bytes_);
    // Written once here: a page the kernel made present still costs a fault
    // on the first write from user space where the hypervisor shadows page
    // tables (cheap where the buffer is one huge page).
    std::memset(buffer, 0, buffer_bytes_);
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      // Behind the ones reads have used since (those are warmer).
      free_.insert(free_.begin(), buffer);
    } catch (const std::bad_alloc&) {
      DeleteBuffer(buffer, buffer_bytes_);
      return;
    }
  }
}

size_t ReplyBuffers::kept() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_.size();
}

}  // namespace b2ndfs::fuse
