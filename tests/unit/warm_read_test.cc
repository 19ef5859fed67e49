// The warm read path (store/box_reader.cc): a read whose blocks are all
// cached holds them by its own cache handles and never queues at the
// mount's PinBudget, whose FIFO admission would put it behind cold reads;
// and the read statistics that every read bumps are exact under threads.
#include <b2nd.h>
#include <blosc2.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "b2nd_writer.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/store/pin_budget.h"
#include "temp_dir.h"
#include "test_store.h"

namespace b2ndfs {
namespace {

// A float32 array of 4 chunks of 8 blocks.
void WriteArray(const std::string& path) {
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.typesize = 4;
  cp.nthreads = 1;
  const int64_t shape[2] = {64, 64};
  const int32_t chunks[2] = {32, 32};
  const int32_t blocks[2] = {8, 16};
  std::vector<float> data(64 * 64);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5f;
  b2nd_array_t* array =
      testing::WriteContiguous(path, cp, 2, shape, chunks, blocks, "<f4", data.data(),
                               static_cast<int64_t>(data.size() * sizeof(float)));
  b2nd_free(array);
}

}  // namespace

TEST_CASE("a warm read does not queue behind cold reads at the pin budget", "[read_plan]") {
  testing::TempDir dir("b2ndfs_warm_read");
  const std::string path = (dir.path / "a.b2nd").string();
  WriteArray(path);
  testing::TestStore env(64u << 20, 1, 0);
  store::PinBudget pins(1 << 20);
  env.ctx.pins = &pins;
  auto container = env.OpenLocal(path);
  const store::ArrayStream stream{"", geometry::Box::FromShape({64, 64})};
  std::vector<uint8_t> cold(64 * 64 * 4), warm(cold.size());
  REQUIRE(container->Read(stream, 0, cold.size(), cold.data()).ok());  // all cached now
  REQUIRE(container->StreamCached(stream));
  REQUIRE(pins.used() == 0);

  // A cold read holds the whole budget; another waits in line for it.
  pins.Acquire(pins.limit());
  std::thread queued([&] {
    pins.Acquire(1);
    pins.Release(1);
  });
  while (pins.waiting() < 1) std::this_thread::yield();

  // The warm read either completes, or queues behind them (a second waiter).
  std::atomic<bool> done{false};
  Result<size_t> read = size_t{0};
  std::thread reader([&] {
    read = container->Read(stream, 0, warm.size(), warm.data());
    done = true;
  });
  while (!done && pins.waiting() < 2) std::this_thread::yield();
  const bool completed_while_held = done.load();
  const size_t waiting = pins.waiting();
  pins.Release(pins.limit());
  reader.join();
  queued.join();
  CAPTURE(waiting);
  CHECK(completed_while_held);
  REQUIRE(read.ok());
  CHECK(*read == warm.size());
  CHECK(warm == cold);
}

TEST_CASE("read statistics count every thread's reads exactly", "[read_plan]") {
  testing::TempDir dir("b2ndfs_warm_read");
  const std::string path = (dir.path / "a.b2nd").string();
  WriteArray(path);
  testing::TestStore env(64u << 20, 1, 0);
  auto container = env.OpenLocal(path);
  const store::ArrayStream stream{"", geometry::Box::FromShape({64, 64})};
  std::vector<uint8_t> buffer(64 * 64 * 4);
  REQUIRE(container->Read(stream, 0, buffer.size(), buffer.data()).ok());
  const store::ReadStats& stats = store::GlobalReadStats();
  const uint64_t reads = stats.reads.load();
  const uint64_t served = stats.bytes_served.load();
  constexpr int kThreads = 6;
  constexpr int kReads = 500;
  std::atomic<int> failed{0};  // Catch2's assertions are not for threads
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> out(4096);
      for (int i = 0; i < kReads; ++i) {
        const int64_t offset = (t * 977 + i * 4099) % (64 * 64 * 4 - 4096);
        if (!container->Read(stream, offset, out.size(), out.data()).ok()) failed++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(failed == 0);
  CHECK(stats.reads.load() - reads == uint64_t{kThreads} * kReads);
  CHECK(stats.bytes_served.load() - served == uint64_t{kThreads} * kReads * 4096);
  CHECK(stats.pinned_bytes.load() == 0);
}

}  // namespace b2ndfs
