// DecompressorPool: at most max_contexts contexts exist at once, lent or
// idle; an Acquire beyond that waits for one to come back; every context
// decodes what c-blosc2 compressed.
#include <blosc2.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/util/atomic_max.h"
#include "chunk_writer.h"

namespace b2ndfs::codec {
namespace {

using Bytes = std::vector<uint8_t>;

// `data` as one zstd chunk (4-byte items, 16 KiB blocks), written by c-blosc2.
Bytes CompressedChunk(const Bytes& data) {
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.compcode = BLOSC_ZSTD;
  cp.clevel = 1;
  cp.typesize = 4;
  cp.blocksize = 16 * 1024;
  cp.nthreads = 1;
  return testing::CompressChunk(data, cp);
}

Bytes Pattern(size_t bytes) {
  Bytes data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>((i * 7 + i / 4096) & 0xff);
  return data;
}

TEST_CASE("a pool makes at most max_contexts; a further Acquire waits for a return") {
  DecompressorPool pool(2);
  auto first = std::make_unique<DecompressorPool::Lease>(pool.Acquire());
  DecompressorPool::Lease second = pool.Acquire();
  REQUIRE(pool.live_contexts() == 2);

  std::atomic<bool> acquired{false};
  auto third = std::async(std::launch::async, [&] {
    DecompressorPool::Lease lease = pool.Acquire();
    acquired = true;
  });
  // Not proof that it would wait forever, but a pool that made a third
  // context would have done so at once.
  REQUIRE(third.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
  CHECK_FALSE(acquired.load());
  CHECK(pool.live_contexts() == 2);

  first.reset();  // returns a context: the waiting Acquire takes it
  REQUIRE(third.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(acquired.load());
  CHECK(pool.live_contexts() == 2);
}

TEST_CASE("Prepare makes idle contexts within the bound") {
  DecompressorPool pool(3);
  pool.Prepare(8);
  CHECK(pool.live_contexts() == 3);
  // Taken from the idle ones: no fourth is made.
  std::vector<DecompressorPool::Lease> leases;
  for (int i = 0; i < 3; ++i) leases.push_back(pool.Acquire());
  CHECK(pool.live_contexts() == 3);
}

TEST_CASE("many threads share a small pool; every decode is c-blosc2's bytes") {
  constexpr size_t kMaxContexts = 3;
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  DecompressorPool pool(kMaxContexts);
  const Bytes data = Pattern(64 * 1024);
  const Bytes chunk = CompressedChunk(data);

  std::atomic<int> lent{0}, most_lent{0}, wrong{0}, failed{0};
  // The first kMaxContexts threads hold their first leases all at once, so
  // that the pool is seen full however the threads are scheduled (the others
  // return theirs meanwhile: no thread waits while holding one but these).
  std::barrier full(static_cast<std::ptrdiff_t>(kMaxContexts));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Bytes out(data.size());
      for (int r = 0; r < kRounds; ++r) {
        DecompressorPool::Lease lease = pool.Acquire();
        RaiseAtomic(most_lent, ++lent);
        if (r == 0 && t < static_cast<int>(kMaxContexts)) full.arrive_and_wait();
        // Whole chunks and a range of it, in turn.
        Status status = Status::Ok();
        size_t offset = 0, length = out.size();
        if ((r + t) % 2 == 1) {
          offset = 20000 + 4 * static_cast<size_t>(r);
          length = 5000;
          status = lease->DecompressRange(chunk, static_cast<int64_t>(offset),
                                          std::span<uint8_t>(out.data(), length));
        } else {
          status = lease->DecompressAll(chunk, out);
        }
        if (!status.ok()) {
          ++failed;
        } else if (!std::equal(out.begin(), out.begin() + static_cast<ptrdiff_t>(length),
                               data.begin() + static_cast<ptrdiff_t>(offset))) {
          ++wrong;
        }
        --lent;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(failed.load() == 0);
  CHECK(wrong.load() == 0);
  CHECK(most_lent.load() == static_cast<int>(kMaxContexts));  // full, never more
  CHECK(pool.live_contexts() <= kMaxContexts);
}

}  // namespace
}  // namespace b2ndfs::codec
