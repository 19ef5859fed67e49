// Unit tests of the FUSE layer's reply buffers (src/fuse/reply_buffers.h):
// buffers come back for the next read, most recently used first, prepared
// ones behind them, and one-off larger buffers are not kept.
#include "reply_buffers.h"

#include <catch2/catch.hpp>
#include <cstring>

namespace b2ndfs::fuse {
namespace {

TEST_CASE("a returned reply buffer serves the next read, most recent first") {
  ReplyBuffers pool(64 << 10);
  CHECK(pool.kept() == 0);
  uint8_t* first = nullptr;
  uint8_t* second = nullptr;
  {
    ReplyBuffers::Lease a = pool.Take(64 << 10);
    ReplyBuffers::Lease b = pool.Take(1);
    first = a.data();
    second = b.data();
    REQUIRE(first != second);
    std::memset(first, 1, 64 << 10);  // the whole buffer is writable
  }                                   // b returns before a: a is the most recent
  CHECK(pool.kept() == 2);
  ReplyBuffers::Lease again = pool.Take(4096);
  CHECK(again.data() == first);
  CHECK(pool.kept() == 1);
}

TEST_CASE("prepared reply buffers wait behind the ones reads have used") {
  ReplyBuffers pool(16 << 10);
  uint8_t* used = nullptr;
  {
    ReplyBuffers::Lease lease = pool.Take(100);
    used = lease.data();
  }
  CHECK(pool.kept() == 1);
  pool.Prepare(2);
  CHECK(pool.kept() == 3);
  ReplyBuffers::Lease a = pool.Take(100);
  CHECK(a.data() == used);
  ReplyBuffers::Lease b = pool.Take(100);
  ReplyBuffers::Lease c = pool.Take(100);
  CHECK(b.data() != used);
  CHECK(c.data() != b.data());
  CHECK(pool.kept() == 0);
}

TEST_CASE("a request larger than the pool's buffers gets one of its own, not kept") {
  ReplyBuffers pool(4096);
  {
    ReplyBuffers::Lease big = pool.Take(3 * 4096);
    std::memset(big.data(), 2, 3 * 4096);
  }
  CHECK(pool.kept() == 0);
  { ReplyBuffers::Lease small = pool.Take(4096); }
  CHECK(pool.kept() == 1);
}

}  // namespace
}  // namespace b2ndfs::fuse
