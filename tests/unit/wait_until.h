#pragma once
// Polls `done` until it holds or 10 s pass, for unit tests that wait for
// another thread to reach a point (a waiter joining a flight, a queue
// draining). False on timeout, so that a broken wait fails its test instead
// of hanging it.
#include <chrono>
#include <functional>
#include <thread>

namespace b2ndfs::testing {

inline bool WaitUntil(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace b2ndfs::testing
