// fuse/async_reads without a kernel: reads of remote handles are answered on
// the executor's threads (local ones, and everything once the queue is full
// or stopped, by the caller); a file never holds more than per_file
// workers, so another file's read does not wait behind its queue; a queued
// read the kernel interrupts is answered EINTR at once; Shutdown answers
// what is queued EIO and waits for what runs. Every request gets exactly
// one reply.
#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "async_reads.h"
#include "fake_request.h"
#include "wait_until.h"

namespace b2ndfs::fuse {
namespace {

using testing::FakeRequest;
using testing::Reply;
using testing::WaitUntil;

// A Serve that replies with "ino:offset", each read held until released.
struct Server {
  std::mutex mutex;
  std::condition_variable cv;
  bool hold = false;
  std::vector<uint64_t> started;  // files whose read began, in order
  std::set<std::thread::id> threads;
  int running = 0;

  AsyncReads::Serve Fn() {
    return [this](Request& req, vfs::FileHandle& handle, size_t, off_t offset) {
      const uint64_t ino = handle.keep_cache ? 1 : 2;  // which test file
      {
        std::unique_lock<std::mutex> lock(mutex);
        started.push_back(ino);
        threads.insert(std::this_thread::get_id());
        ++running;
        cv.notify_all();
        cv.wait(lock, [this] { return !hold; });
        --running;
      }
      const std::string text = std::to_string(ino) + ":" + std::to_string(offset);
      req.ReplyBuf(text.data(), text.size());
    };
  }
  void Hold(bool h) {
    std::lock_guard<std::mutex> lock(mutex);
    hold = h;
    cv.notify_all();
  }
  size_t started_count() {
    std::lock_guard<std::mutex> lock(mutex);
    return started.size();
  }
  int running_count() {
    std::lock_guard<std::mutex> lock(mutex);
    return running;
  }
};

// Declared after the executor: a test that fails while reads are held
// releases them before the executor's destructor waits for its workers.
struct ReleaseAtEnd {
  Server& server;
  ~ReleaseAtEnd() { server.Hold(false); }
};

vfs::FileHandle RemoteFile(uint64_t ino) {
  vfs::FileHandle h;
  h.remote = true;
  h.keep_cache = ino == 1;
  return h;
}

TEST_CASE("async reads: remote reads are answered on a worker, local ones inline", "[fuse]") {
  Server server;
  AsyncReads reads(AsyncReads::Options{}, server.Fn());
  vfs::FileHandle local;
  FakeRequest a;
  CHECK_FALSE(reads.Defer(a, 1, 10, 0, &local));
  CHECK(a.reply_count() == 0);  // the caller serves it
  CHECK_FALSE(reads.Defer(a, 1, 10, 0, nullptr));
  vfs::FileHandle remote = RemoteFile(1);
  FakeRequest b;
  REQUIRE(reads.Defer(b, 1, 10, 4096, &remote));
  REQUIRE(b.WaitReplied());
  CHECK(b.only().data == "1:4096");
  {
    std::lock_guard<std::mutex> lock(server.mutex);
    CHECK(server.threads.count(std::this_thread::get_id()) == 0);
  }
  CHECK(reads.counters().deferred == 1);
}

TEST_CASE("async reads: a slow file holds at most per_file workers; others pass it", "[fuse]") {
  Server server;
  AsyncReads::Options options;
  options.workers = 3;
  options.per_file = 2;
  AsyncReads reads(options, server.Fn());
  ReleaseAtEnd release{server};
  vfs::FileHandle slow = RemoteFile(1), other = RemoteFile(2);
  server.Hold(true);
  std::vector<FakeRequest> slow_reads(5);
  for (size_t i = 0; i < slow_reads.size(); ++i) {
    REQUIRE(reads.Defer(slow_reads[i], 1, 10, static_cast<off_t>(i), &slow));
  }
  REQUIRE(WaitUntil([&] { return server.running_count() == 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(server.running_count() == 2);  // not a third of the slow file
  FakeRequest quick;
  REQUIRE(reads.Defer(quick, 2, 10, 0, &other));
  REQUIRE(WaitUntil([&] { return server.running_count() == 3; }));
  server.Hold(false);
  REQUIRE(quick.WaitReplied());
  CHECK(quick.only().data == "2:0");
  for (auto& r : slow_reads) {
    REQUIRE(r.WaitReplied());
    CHECK(r.reply_count() == 1);
  }
  std::lock_guard<std::mutex> lock(server.mutex);
  // The other file's read began before the slow file's queued ones.
  CHECK(server.started[2] == 2);
}

TEST_CASE("async reads: an interrupted read is answered EINTR, queued or about to be", "[fuse]") {
  Server server;
  AsyncReads::Options options;
  options.workers = 1;
  options.per_file = 1;
  AsyncReads reads(options, server.Fn());
  ReleaseAtEnd release{server};
  vfs::FileHandle file = RemoteFile(1);
  server.Hold(true);
  FakeRequest running, queued;
  REQUIRE(reads.Defer(running, 1, 10, 0, &file));
  REQUIRE(WaitUntil([&] { return server.running_count() == 1; }));
  REQUIRE(reads.Defer(queued, 1, 10, 10, &file));
  REQUIRE(queued.has_sink());
  queued.Interrupt();  // the kernel's FUSE_INTERRUPT: answered at once
  REQUIRE(queued.reply_count() == 1);
  CHECK(queued.only().kind == Reply::kErr);
  CHECK(queued.only().error == EINTR);
  CHECK(reads.counters().interrupted == 1);
  // A running read belongs to its worker: the interrupt leaves it be.
  running.Interrupt();
  CHECK(running.reply_count() == 0);
  // Interrupted before it was taken: answered EINTR by Defer itself.
  FakeRequest early;
  early.Interrupt();
  REQUIRE(reads.Defer(early, 1, 10, 20, &file));
  CHECK(early.only().error == EINTR);
  server.Hold(false);
  REQUIRE(running.WaitReplied());
  CHECK(running.only().data == "1:0");
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(queued.reply_count() == 1);  // never served after its EINTR
  CHECK(server.started_count() == 1);
}

TEST_CASE("async reads: a full queue and a stopped executor leave reads to the caller", "[fuse]") {
  Server server;
  AsyncReads::Options options;
  options.workers = 1;
  options.per_file = 1;
  options.max_queued = 2;
  AsyncReads reads(options, server.Fn());
  ReleaseAtEnd release{server};
  vfs::FileHandle file = RemoteFile(1);
  server.Hold(true);
  std::vector<FakeRequest> taken(3);
  REQUIRE(reads.Defer(taken[0], 1, 10, 0, &file));
  REQUIRE(WaitUntil([&] { return server.running_count() == 1; }));
  REQUIRE(reads.Defer(taken[1], 1, 10, 1, &file));
  REQUIRE(reads.Defer(taken[2], 1, 10, 2, &file));
  FakeRequest full;
  CHECK_FALSE(reads.Defer(full, 1, 10, 3, &file));
  CHECK(full.reply_count() == 0);
  CHECK(reads.counters().inline_full == 1);
  // Shutdown: the queued ones EIO, the running one finishes first.
  std::thread stopper([&] { reads.Shutdown(); });
  REQUIRE(taken[1].WaitReplied());
  REQUIRE(taken[2].WaitReplied());
  CHECK(taken[1].only().error == EIO);
  CHECK(taken[2].only().error == EIO);
  CHECK(taken[0].reply_count() == 0);
  server.Hold(false);
  stopper.join();
  CHECK(taken[0].only().data == "1:0");
  CHECK(reads.counters().failed == 2);
  FakeRequest late;
  CHECK_FALSE(reads.Defer(late, 1, 10, 0, &file));
  CHECK(late.reply_count() == 0);
  reads.Shutdown();  // idempotent
}

}  // namespace
}  // namespace b2ndfs::fuse
