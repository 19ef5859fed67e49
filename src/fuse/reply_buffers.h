#pragma once
// The buffers reads are answered from. A read gathers its bytes into a buffer
// of up to max_read bytes and hands it to fuse_reply_buf, which copies it
// into the kernel: the buffer is free again once the reply is sent. Buffers
// are kept until the session ends and handed out most recently used first,
// whichever thread asks: its pages are mapped and likely still in a CPU cache.
// A fresh buffer costs a page fault per 4 KiB page on first touch (in a
// virtual machine with shadow page tables ~15 us each, even after the kernel
// made them present: 4 ms for 1 MiB, a third of a cold 1 MiB slice read), so
// buffers come from the block memory's slabs (cache/buffer_memory.h: 2 MiB
// pages, where a new one costs ~0.2 ms), and the first few are made before
// any read comes (Prepare).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace b2ndfs::fuse {

class ReplyBuffers {
 public:
  explicit ReplyBuffers(size_t buffer_bytes) : buffer_bytes_(buffer_bytes) {}
  ReplyBuffers(const ReplyBuffers&) = delete;
  ReplyBuffers& operator=(const ReplyBuffers&) = delete;

  // A buffer of at least `size` bytes, the pool's while the lease lives.
  class Lease {
   public:
    Lease(ReplyBuffers* pool, uint8_t* buffer, size_t size)
        : pool_(pool), buffer_(buffer), size_(size) {}
    Lease(Lease&& other) noexcept
        : pool_(other.pool_), buffer_(std::exchange(other.buffer_, nullptr)), size_(other.size_) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    uint8_t* data() const { return buffer_; }

   private:
    ReplyBuffers* pool_;
    uint8_t* buffer_;
    size_t size_;
  };

  ~ReplyBuffers();

  // Larger than the pool's buffers (never for reads: the kernel asks for at
  // most max_read bytes): a buffer of its own, freed after use.
  Lease Take(size_t size);

  // Adds `count` buffers whose pages are present; for a thread of its own at
  // the start of the session (reads meanwhile make their own).
  void Prepare(size_t count);

  // Kept now (for tests).
  size_t kept() const;

 private:
  void Give(uint8_t* buffer, size_t size) noexcept;

  const size_t buffer_bytes_;
  mutable std::mutex mutex_;    // leaf lock
  std::vector<uint8_t*> free_;  // guarded by mutex_; last = most recent; owned
};

}  // namespace b2ndfs::fuse
