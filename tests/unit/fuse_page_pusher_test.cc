// fuse/page_pusher without a kernel (a Store function instead of a session):
// a push is rendered and stored from the pusher's threads and its `done`
// says whether the pages were stored; one push per inode at a time; at most
// kMaxQueued wait (read-ahead is a hint); a render that fails or throws, or
// a kernel that knows no such inode (-ENOENT), stores nothing; the
// destructor drops what is queued and waits for what is in progress.
#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "page_pusher.h"
#include "wait_until.h"

namespace b2ndfs::fuse {
namespace {

using testing::WaitUntil;

struct Kernel {
  std::mutex mutex;
  std::condition_variable cv;
  bool hold = false;
  int result = 0;
  int in_store = 0;
  std::vector<std::pair<vfs::Ino, std::string>> stored;
  std::thread::id caller = std::this_thread::get_id();
  bool from_caller = false;

  PagePusher::Store Fn() {
    return [this](vfs::Ino ino, const uint8_t* data, size_t size) {
      std::unique_lock<std::mutex> lock(mutex);
      if (std::this_thread::get_id() == caller) from_caller = true;
      ++in_store;
      cv.notify_all();
      // At most 10 s: a test that fails while stores are held ends.
      cv.wait_for(lock, std::chrono::seconds(10), [this] { return !hold; });
      --in_store;
      if (result == 0)
        stored.emplace_back(ino, std::string(reinterpret_cast<const char*>(data), size));
      return result;
    };
  }
  void Hold(bool h) {
    std::lock_guard<std::mutex> lock(mutex);
    hold = h;
    cv.notify_all();
  }
  int in_store_count() {
    std::lock_guard<std::mutex> lock(mutex);
    return in_store;
  }
  size_t stored_count() {
    std::lock_guard<std::mutex> lock(mutex);
    return stored.size();
  }
};

// A push of `text` as inode `ino`; `done` records its outcome.
struct Outcome {
  std::atomic<int> calls{0};
  std::atomic<bool> stored{false};
};
vfs::PagePush Push(vfs::Ino ino, std::string text, Outcome* outcome) {
  vfs::PagePush push;
  push.ino = ino;
  push.size = static_cast<int64_t>(text.size());
  push.render = [text](uint8_t* out) {
    std::memcpy(out, text.data(), text.size());
    return Status::Ok();
  };
  push.done = [outcome](bool stored) {
    outcome->stored = stored;
    outcome->calls.fetch_add(1);
  };
  return push;
}

TEST_CASE("page pusher: rendered and stored off the caller's thread, done says so", "[fuse]") {
  Kernel kernel;
  PagePusher pusher(kernel.Fn());
  Outcome a;
  REQUIRE(pusher.Enqueue(Push(7, "slice seven", &a)));
  REQUIRE(WaitUntil([&] { return a.calls.load() == 1; }));
  CHECK(a.stored.load());
  std::lock_guard<std::mutex> lock(kernel.mutex);
  REQUIRE(kernel.stored.size() == 1);
  CHECK(kernel.stored[0].first == 7);
  CHECK(kernel.stored[0].second == "slice seven");
  CHECK_FALSE(kernel.from_caller);
}

TEST_CASE("page pusher: what is not stored says so", "[fuse]") {
  Kernel kernel;
  PagePusher pusher(kernel.Fn());
  SECTION("the kernel does not hold the inode") {
    kernel.result = -ENOENT;
    Outcome a;
    REQUIRE(pusher.Enqueue(Push(1, "x", &a)));
    REQUIRE(WaitUntil([&] { return a.calls.load() == 1; }));
    CHECK_FALSE(a.stored.load());
  }
  SECTION("the render fails or throws: nothing reaches the kernel") {
    Outcome failed, threw;
    vfs::PagePush p1 = Push(1, "x", &failed);
    p1.render = [](uint8_t*) { return Status(EAGAIN, "not decompressed yet"); };
    vfs::PagePush p2 = Push(2, "y", &threw);
    p2.render = [](uint8_t*) -> Status { throw std::runtime_error("render bug"); };
    REQUIRE(pusher.Enqueue(std::move(p1)));
    REQUIRE(pusher.Enqueue(std::move(p2)));
    REQUIRE(WaitUntil([&] { return failed.calls.load() == 1 && threw.calls.load() == 1; }));
    CHECK_FALSE(failed.stored.load());
    CHECK_FALSE(threw.stored.load());
    CHECK(kernel.stored_count() == 0);
  }
}

TEST_CASE("page pusher: one push per inode at a time, a bounded queue, a clean stop", "[fuse]") {
  Kernel kernel;
  kernel.Hold(true);
  Outcome busy1, busy2, again, queued[PagePusher::kMaxQueued], over;
  std::thread release;
  {
    PagePusher pusher(kernel.Fn());
    REQUIRE(pusher.Enqueue(Push(1, "a", &busy1)));
    REQUIRE(pusher.Enqueue(Push(2, "b", &busy2)));
    REQUIRE(WaitUntil([&] { return kernel.in_store_count() == 2; }));  // both threads busy
    // Inode 1 is in progress: "on its way", not queued again.
    CHECK(pusher.Enqueue(Push(1, "a again", &again)));
    for (size_t i = 0; i < PagePusher::kMaxQueued; ++i) {
      REQUIRE(pusher.Enqueue(Push(10 + i, "q", &queued[i])));
    }
    CHECK(pusher.Enqueue(Push(10, "dup", &again)));  // queued already
    CHECK_FALSE(pusher.Enqueue(Push(99, "over", &over)));
    // The destructor drops the queued pushes and waits for the two stores,
    // which end once released.
    release = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      kernel.Hold(false);
    });
  }
  release.join();
  CHECK(kernel.in_store_count() == 0);
  CHECK(busy1.calls.load() == 1);
  CHECK(busy2.calls.load() == 1);
  CHECK(again.calls.load() == 0);
  CHECK(over.calls.load() == 0);
  for (const Outcome& q : queued) CHECK(q.calls.load() == 0);
  CHECK(kernel.stored_count() == 2);  // the queued ones were dropped unrendered
}

}  // namespace
}  // namespace b2ndfs::fuse
