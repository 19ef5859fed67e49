// fuse/invalidator without a kernel (a Notify instead of a session): what is
// enqueued is sent in order from its own thread; at unmount Stop() waits for
// a notification in progress, drops the rest, and every later Enqueue (a
// probe that still calls the filesystem's callback) is dropped safely; a
// notification that throws is logged and the next ones still go.
#include "invalidator.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "b2ndfs/util/log.h"
#include "wait_until.h"

namespace b2ndfs::fuse {
namespace {

using testing::WaitUntil;

std::vector<vfs::StaleNode> Nodes(vfs::Ino first, int n) {
  std::vector<vfs::StaleNode> nodes;
  for (int i = 0; i < n; ++i) {
    nodes.push_back(vfs::StaleNode{first + static_cast<vfs::Ino>(i), 1, "n", i % 2 == 0});
  }
  return nodes;
}

// What a Notify saw, from any thread.
struct Seen {
  std::mutex mutex;
  std::vector<vfs::Ino> inos;
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex);
    return inos.size();
  }
};

TEST_CASE("invalidator: nodes reach the notifier in order, from its own thread") {
  Seen seen;
  std::thread::id sent_from;
  Invalidator inv([&](const vfs::StaleNode& node) {
    std::lock_guard<std::mutex> lock(seen.mutex);
    seen.inos.push_back(node.ino);
    sent_from = std::this_thread::get_id();
  });
  inv.Enqueue(Nodes(10, 3));
  inv.Enqueue(Nodes(20, 2));
  REQUIRE(WaitUntil([&] { return seen.size() == 5; }));
  std::lock_guard<std::mutex> lock(seen.mutex);
  CHECK(seen.inos == std::vector<vfs::Ino>{10, 11, 12, 20, 21});
  CHECK(sent_from != std::this_thread::get_id());
}

TEST_CASE("invalidator: Stop waits for a notification in progress; later ones are dropped") {
  Seen seen;
  std::atomic<bool> entered{false};
  std::atomic<bool> release{false};
  Invalidator inv([&](const vfs::StaleNode& node) {
    entered = true;
    WaitUntil([&] { return release.load(); });
    std::lock_guard<std::mutex> lock(seen.mutex);
    seen.inos.push_back(node.ino);
  });
  inv.Enqueue(Nodes(1, 1));
  REQUIRE(WaitUntil([&] { return entered.load(); }));
  inv.Enqueue(Nodes(2, 3));  // queued behind the one in progress
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    inv.Stop();
    stopped = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(stopped.load());
  release = true;
  stopper.join();
  CHECK(seen.size() == 1);   // the queued ones were dropped
  inv.Enqueue(Nodes(9, 2));  // after Stop: dropped, no thread to send them
  inv.Stop();                // idempotent
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(seen.size() == 1);
}

TEST_CASE("invalidator: a notification that throws is logged and the next ones go") {
  Seen seen;
  Invalidator inv([&](const vfs::StaleNode& node) {
    if (node.ino == 2) throw std::runtime_error("kernel said no");
    std::lock_guard<std::mutex> lock(seen.mutex);
    seen.inos.push_back(node.ino);
  });
  inv.Enqueue(Nodes(1, 3));
  REQUIRE(WaitUntil([&] { return seen.size() == 2; }));
  CHECK(RecentLogText().find("invalidation failed: kernel said no") != std::string::npos);
}

TEST_CASE("invalidator: callers racing the unmount never touch a freed invalidator") {
  // As session.cc wires it: the filesystem's callback shares the invalidator.
  std::atomic<int> sent{0};
  auto inv = std::make_shared<Invalidator>([&](const vfs::StaleNode&) { sent.fetch_add(1); });
  std::function<void(const std::vector<vfs::StaleNode>&)> callback =
      [inv](const std::vector<vfs::StaleNode>& nodes) { inv->Enqueue(nodes); };
  std::atomic<bool> go{true};
  std::vector<std::thread> probes;
  for (int t = 0; t < 4; ++t) {
    probes.emplace_back([callback, &go] {
      while (go.load()) callback(Nodes(100, 2));
    });
  }
  REQUIRE(WaitUntil([&] { return sent.load() > 10; }));
  inv->Stop();  // session.cc: after the probes stopped; here, while they run
  inv.reset();  // the session's reference goes; the callbacks' remain
  const int after_stop = sent.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(sent.load() == after_stop);  // nothing is sent once stopped
  go = false;
  for (auto& p : probes) p.join();
}

}  // namespace
}  // namespace b2ndfs::fuse
