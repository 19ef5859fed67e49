// Remote read-ahead waits on the I/O workers (StoreContext::io_workers), not
// on the decoders: with a remote source's requests held, no decoder worker is
// inside a source read, a local container's read-ahead (which needs the
// decoders) still completes, and blocks whose bytes are on their way are not
// asked for again.
#include <b2nd.h>
#include <blosc2.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "b2nd_writer.h"
#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/store/worker_pool.h"
#include "temp_dir.h"
#include "test_store.h"

using namespace b2ndfs;

namespace {

// A remote source whose requests (Read, ReadMany) wait, while held, until
// released; it counts the requests made on a decoder worker.
class HeldSource final : public source::ByteSource {
 public:
  HeldSource(std::shared_ptr<const source::ByteSource> inner, const store::WorkerPool* decoders)
      : inner_(std::move(inner)), decoders_(decoders) {}
  const std::string& name() const override { return inner_->name(); }
  bool sparse() const override { return inner_->sparse(); }
  const source::Signature& signature() const override { return inner_->signature(); }
  Result<int64_t> PartSize(int64_t part) const override { return inner_->PartSize(part); }
  Status Read(int64_t part, int64_t offset, size_t length, uint8_t* out) const override {
    if (decoders_->OnWorker()) on_decoder++;
    WaitWhileHeld();
    return inner_->Read(part, offset, length, out);
  }
  void ReadMany(std::span<const source::PartRead> list,
                const source::ReadDone& done) const override {
    if (decoders_->OnWorker()) on_decoder++;
    WaitWhileHeld();
    for (size_t j = 0; j < list.size(); ++j) {
      const source::PartRead& r = list[j];
      done(j, inner_->Read(r.part, r.offset, r.length, r.out));
    }
  }
  source::CostProfile cost() const override {
    source::CostProfile cost;
    cost.max_read = int64_t{16} << 20;
    cost.batch_reads = true;
    cost.latency = source::CostProfile::Latency::kNetwork;
    return cost;
  }
  bool found_stale() const override { return inner_->found_stale(); }

  // A request (a Read, or a ReadMany's lot) waits here while held.
  void WaitWhileHeld() const {
    std::unique_lock<std::mutex> lock(mutex);
    if (!held) return;
    ++waiting;
    changed.notify_all();
    // The guard only ends a test that would otherwise hang.
    if (!changed.wait_for(lock, std::chrono::seconds(60), [&] { return !held; })) {
      timed_out = true;
    }
    --waiting;
  }
  void Hold() {
    std::lock_guard<std::mutex> lock(mutex);
    held = true;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      held = false;
    }
    changed.notify_all();
  }
  // Until `n` ReadMany calls are held (false: the guard ran out).
  bool WaitHeld(int n) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(60), [&] { return waiting >= n; });
  }

  mutable std::atomic<int> on_decoder{0};  // source reads made on a decoder worker
  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  bool held = false;               // guarded by mutex
  mutable int waiting = 0;         // guarded by mutex
  mutable bool timed_out = false;  // guarded by mutex

 private:
  std::shared_ptr<const source::ByteSource> inner_;
  const store::WorkerPool* decoders_;
};

constexpr int kNdim = 3;
const int64_t kShape[kNdim] = {64, 256, 256};
const int32_t kChunks[kNdim] = {32, 128, 128};
const int32_t kBlocks[kNdim] = {8, 32, 32};

void WriteArray(const std::string& path) {
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.compcode = BLOSC_ZSTD;
  cp.clevel = 1;
  cp.typesize = 4;
  cp.nthreads = 1;
  std::vector<float> data(static_cast<size_t>(kShape[0] * kShape[1] * kShape[2]));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 1000) * 0.5f;
  b2nd_array_t* array =
      testing::WriteContiguous(path, cp, kNdim, kShape, kChunks, kBlocks, "<f4", data.data(),
                               static_cast<int64_t>(data.size() * sizeof(float)));
  b2nd_free(array);
}

// Reads an item of every chunk: their heads are then cached, and read-ahead
// waits for nothing but its blocks' bytes.
void ReadChunkHeads(const store::Container& container) {
  for (int64_t z = 0; z < kShape[0]; z += kChunks[0]) {
    for (int64_t y = 0; y < kShape[1]; y += kChunks[1]) {
      for (int64_t x = 0; x < kShape[2]; x += kChunks[2]) {
        geometry::Box box;
        box.start = {z, y, x};
        box.stop = {z + 1, y + 1, x + 1};
        float item;
        REQUIRE(container.ReadArrayBox(box, reinterpret_cast<uint8_t*>(&item)).ok());
      }
    }
  }
}

store::ArrayStream WholeArray() {
  store::ArrayStream stream;
  stream.box.start.assign(kNdim, 0);
  stream.box.stop.assign(kShape, kShape + kNdim);
  return stream;
}

}  // namespace

TEST_CASE("remote read-ahead waits on the I/O workers, never on the decoders", "[io_workers]") {
  testing::TempDir dir("b2ndfs_io_workers");
  const std::string path = (dir.path / "a.b2nd").string();
  WriteArray(path);
  testing::TestStore env(256u << 20, 4, 2);
  store::WorkerPool io(8);
  env.ctx.io_workers = &io;

  auto opened = source::OpenLocal(path, &env.descriptors);
  REQUIRE(opened.ok());
  auto held = std::make_shared<HeldSource>(std::move(opened).value(), env.workers.get());
  auto remote = store::Container::Open(held, &env.ctx, 2, nullptr);
  REQUIRE(remote->ok());
  auto local = env.OpenLocal(path);
  const store::ArrayStream stream = WholeArray();
  const int64_t size = remote->StreamSize(stream);
  ReadChunkHeads(*remote);

  held->Hold();
  // 16 MiB of blocks: eight read-ahead tasks (one per chunk).
  remote->Prefetch(stream, 0, size);
  // One task per chunk, each on an I/O worker of its own, each waiting:
  // had they run on the decoders, every decoder would be waiting now.
  REQUIRE(held->WaitHeld(8));
  CHECK(held->on_decoder.load() == 0);
  // Blocks whose bytes a plan waits for are not asked for again.
  const uint64_t queued = store::GlobalReadStats().readahead_blocks_queued.load();
  remote->Prefetch(stream, 0, size);
  CHECK(store::GlobalReadStats().readahead_blocks_queued.load() == queued);

  // The local container's read-ahead runs on the decoders: it completes
  // while the remote requests are held.
  local->Prefetch(stream, 0, size);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!local->StreamCached(stream) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  CHECK(local->StreamCached(stream));
  // And a read of its (now cached) blocks and of others it lacks.
  std::vector<uint8_t> got(static_cast<size_t>(size));
  REQUIRE(local->ReadArrayBox(stream.box, got.data()).ok());

  held->Release();
  // Once the bytes land, the remote read-ahead decodes (on the decoders).
  const auto remote_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!remote->StreamCached(stream) && std::chrono::steady_clock::now() < remote_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  CHECK(remote->StreamCached(stream));
  std::vector<uint8_t> again(static_cast<size_t>(size));
  REQUIRE(remote->ReadArrayBox(stream.box, again.data()).ok());
  CHECK(again == got);
  CHECK(held->on_decoder.load() == 0);
  io.Shutdown();
  env.workers->Shutdown();
  std::lock_guard<std::mutex> lock(held->mutex);
  CHECK_FALSE(held->timed_out);
}

TEST_CASE("a remote read waits on its own thread and decodes on the workers", "[io_workers]") {
  testing::TempDir dir("b2ndfs_io_workers");
  const std::string path = (dir.path / "a.b2nd").string();
  WriteArray(path);
  testing::TestStore env(256u << 20, 4, 2);
  store::WorkerPool io(2);
  env.ctx.io_workers = &io;
  auto opened = source::OpenLocal(path, &env.descriptors);
  REQUIRE(opened.ok());
  auto held = std::make_shared<HeldSource>(std::move(opened).value(), env.workers.get());
  auto remote = store::Container::Open(held, &env.ctx, 2, nullptr);
  REQUIRE(remote->ok());
  auto local = env.OpenLocal(path);
  const store::ArrayStream stream = WholeArray();
  std::vector<uint8_t> want(static_cast<size_t>(local->StreamSize(stream)));
  REQUIRE(local->ReadArrayBox(stream.box, want.data()).ok());
  // Cold, many blocks of many reads: the plan's bytes come on this thread.
  std::vector<uint8_t> got(want.size());
  REQUIRE(remote->ReadArrayBox(stream.box, got.data()).ok());
  CHECK(got == want);
  CHECK(held->on_decoder.load() == 0);
}
