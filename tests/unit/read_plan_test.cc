// Read planning: CoalesceSpans against its contract over random spans, and a
// container written by c-blosc2 read through a counting ByteSource: a slice
// costs far fewer source reads than blocks, at most ~1.25x the compressed
// bytes of its blocks plus chunk heads, and returns c-blosc2's bytes;
// concurrent readers whose plans overlap fetch their common bytes once
// (store/span_flights.h: 1.5x the bytes without it); a remote source gets all
// of a plan's reads in one ReadMany; a partly cached read counts each block
// once in the cache's hit and miss counts.
#include "b2ndfs/store/read_plan.h"

#include <b2nd.h>
#include <blosc2.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "b2nd_writer.h"
#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/source/descriptor_cache.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/store/worker_pool.h"
#include "b2ndfs/util/atomic_max.h"
#include "temp_dir.h"
#include "test_store.h"

using namespace b2ndfs;

TEST_CASE("CoalesceSpans covers every span and bounds the waste", "[read_plan]") {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 400; ++round) {
    const int nspans = 1 + static_cast<int>(rng() % 40);
    const int64_t max_gap = static_cast<int64_t>(rng() % 3 == 0 ? 0 : rng() % 5000);
    const int64_t max_read = 500 + static_cast<int64_t>(rng() % 20000);
    std::vector<store::SourceSpan> spans;
    for (int i = 0; i < nspans; ++i) {
      const int64_t part = static_cast<int64_t>(rng() % 3) - 1;
      const int64_t begin = static_cast<int64_t>(rng() % 50000);
      const int64_t length = static_cast<int64_t>(rng() % 3000);
      spans.push_back({part, begin, begin + length});
    }
    const auto reads = store::CoalesceSpans(spans, {max_gap, max_read});
    std::vector<int> seen(spans.size(), 0);
    for (size_t r = 0; r < reads.size(); ++r) {
      const auto& read = reads[r];
      // Useful bytes: the union of its members, counted by brute force.
      std::vector<char> used(static_cast<size_t>(read.end - read.begin), 0);
      for (size_t m : read.members) {
        const auto& s = spans[m];
        seen[m]++;
        REQUIRE(s.part == read.part);
        REQUIRE(s.begin >= read.begin);
        REQUIRE(s.end <= read.end);
        for (int64_t b = s.begin; b < s.end; ++b) used[static_cast<size_t>(b - read.begin)] = 1;
      }
      const int64_t useful = std::count(used.begin(), used.end(), 1);
      CHECK(read.useful == useful);
      const int64_t waste = (read.end - read.begin) - useful;
      CHECK(waste * store::kMaxWasteDenominator <= useful * store::kMaxWasteNumerator);
      // A gap is only fetched when it is at most max_gap.
      int64_t covered_to = read.begin;
      std::vector<size_t> members = read.members;
      std::sort(members.begin(), members.end(),
                [&](size_t a, size_t b) { return spans[a].begin < spans[b].begin; });
      for (size_t m : members) {
        CHECK(spans[m].begin - covered_to <= max_gap);
        covered_to = std::max(covered_to, spans[m].end);
      }
      if (r > 0 && reads[r - 1].part == read.part) {
        CHECK(reads[r - 1].end <= read.begin);  // ordered, never overlapping
        // Joining them was not allowed by one of the rules.
        const auto& prev = reads[r - 1];
        const int64_t gap = read.begin - prev.end;
        const bool allowed = gap <= max_gap && read.end - prev.begin <= max_read;
        if (allowed && read.members.size() == 1 && prev.members.size() == 1) {
          const int64_t u = prev.useful + read.useful;
          CHECK(gap * store::kMaxWasteDenominator > u * store::kMaxWasteNumerator);
        }
      } else if (r > 0) {
        CHECK(reads[r - 1].part < read.part);
      }
    }
    for (int n : seen) REQUIRE(n == 1);
  }
}

TEST_CASE("CoalesceSpans joins adjacent spans and keeps far ones apart", "[read_plan]") {
  std::vector<store::SourceSpan> spans{{-1, 3000, 4000}, {-1, 0, 1000},        {-1, 1000, 2000},
                                       {-1, 2100, 2900}, {-1, 100000, 101000}, {2, 0, 10}};
  const auto reads = store::CoalesceSpans(spans, {200, 1 << 20});
  REQUIRE(reads.size() == 3);
  CHECK(reads[0].begin == 0);
  CHECK(reads[0].end == 4000);
  CHECK(reads[0].members == std::vector<size_t>{1, 2, 3, 0});
  CHECK(reads[0].useful == 3800);
  CHECK(reads[1].begin == 100000);
  CHECK(reads[2].part == 2);
  // No gap allowed: each non-adjacent span alone, adjacent ones together.
  CHECK(store::CoalesceSpans(spans, {0, 1 << 20}).size() == 5);
  // The length cap splits even adjacent spans.
  CHECK(store::CoalesceSpans(spans, {200, 1500}).size() == 6);
}

namespace {

// Counts what the store asks of the source.
class CountingSource final : public source::ByteSource {
 public:
  CountingSource(std::shared_ptr<const source::ByteSource> inner, int64_t gap)
      : inner_(std::move(inner)), gap_(gap) {}
  const std::string& name() const override { return inner_->name(); }
  bool sparse() const override { return inner_->sparse(); }
  const source::Signature& signature() const override { return inner_->signature(); }
  Result<int64_t> PartSize(int64_t part) const override { return inner_->PartSize(part); }
  Status Read(int64_t part, int64_t offset, size_t length, uint8_t* out) const override {
    reads++;
    if (fail_reads) return Status(EIO, "the source fails");
    bytes += static_cast<int64_t>(length);
    RaiseAtomic(longest, static_cast<int64_t>(length));
    // A slow source, so that concurrent readers' reads overlap in time.
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    return inner_->Read(part, offset, length, out);
  }
  // As a remote source: a plan's reads come in one ReadMany, whose sizes
  // are recorded; its reads land in reverse order (as a network may).
  void ReadMany(std::span<const source::PartRead> list,
                const source::ReadDone& done) const override {
    {
      std::lock_guard<std::mutex> lock(batch_mutex);
      batches.push_back(list.size());
    }
    if (gate_calls > 0) {
      // Every batch waits until gate_calls of them have come: each plan
      // has claimed its spans (SpanFlights::Begin) before any bytes land.
      // The guard only ends a test that would otherwise hang.
      std::unique_lock<std::mutex> lock(gate_mutex);
      ++gate_arrived;
      gate_changed.notify_all();
      if (!gate_changed.wait_for(lock, std::chrono::seconds(30),
                                 [&] { return gate_arrived >= gate_calls; })) {
        gate_timed_out = true;
      }
    }
    for (size_t j = list.size(); j-- > 0;) {
      const source::PartRead& r = list[j];
      done(j,
           fail_batches ? Status(EIO, "batch refused") : Read(r.part, r.offset, r.length, r.out));
    }
  }
  source::CostProfile cost() const override {
    source::CostProfile cost;
    cost.merge_gap = gap_;
    if (remote_) {
      cost.max_read = store::kMaxRemoteReadBytes;
      cost.batch_reads = true;
      cost.latency = source::CostProfile::Latency::kNetwork;
    }
    return cost;
  }
  bool found_stale() const override { return inner_->found_stale(); }
  mutable std::atomic<int64_t> reads{0};
  mutable std::atomic<int64_t> bytes{0};
  mutable std::atomic<int64_t> longest{0};  // the longest read
  // Set before the container opens: its workers read them from then on
  // (the chunk heads are fetched in the background at open).
  int delay_ms = 0;
  bool remote_ = false;
  bool fail_batches = false;            // every read of a ReadMany fails (Read still works)
  std::atomic<bool> fail_reads{false};  // every read fails
  mutable std::mutex batch_mutex;
  mutable std::vector<size_t> batches;  // guarded by batch_mutex
  // The gate of ReadMany (0: none); set before the readers start.
  int gate_calls = 0;
  mutable std::mutex gate_mutex;
  mutable std::condition_variable gate_changed;
  mutable int gate_arrived = 0;         // guarded by gate_mutex
  mutable bool gate_timed_out = false;  // guarded by gate_mutex

 private:
  std::shared_ptr<const source::ByteSource> inner_;
  int64_t gap_;
};

// `path` opened as the mount opens it, through a CountingSource that joins
// gaps of up to `gap` bytes and declares requests that may stall when `remote`.
struct Counted {
  std::shared_ptr<CountingSource> counting;
  std::shared_ptr<const store::Container> container;
};
Counted OpenCounting(testing::TestStore& env, const std::string& path, int64_t gap,
                     bool remote = false) {
  auto opened = source::OpenLocal(path, &env.descriptors);
  REQUIRE(opened.ok());
  auto counting = std::make_shared<CountingSource>(std::move(opened).value(), gap);
  counting->remote_ = remote;
  auto container = store::Container::Open(counting, &env.ctx, 1, nullptr);
  REQUIRE(container->ok());
  return {std::move(counting), std::move(container)};
}

constexpr int kNdim = 3;
const int64_t kShape[kNdim] = {64, 256, 256};
const int32_t kChunks[kNdim] = {32, 128, 128};
const int32_t kBlocks[kNdim] = {8, 32, 32};

// Writes a float32 array with c-blosc2's own API (zstd + shuffle): a smooth
// field plus noise, so blocks compress to different sizes.
b2nd_array_t* WriteArray(const std::string& path) {
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.compcode = BLOSC_ZSTD;
  cp.clevel = 1;
  cp.typesize = 4;
  cp.nthreads = 1;
  std::vector<float> data(static_cast<size_t>(kShape[0] * kShape[1] * kShape[2]));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> noise(0.f, 1.f);
  for (int64_t z = 0; z < kShape[0]; ++z)
    for (int64_t y = 0; y < kShape[1]; ++y)
      for (int64_t x = 0; x < kShape[2]; ++x) {
        const float v = std::sin(0.05f * static_cast<float>(x + 2 * y)) * 100.f +
                        static_cast<float>(z) + noise(rng) * static_cast<float>(1 + (x / 32) % 4);
        data[static_cast<size_t>((z * kShape[1] + y) * kShape[2] + x)] = v;
      }
  return testing::WriteContiguous(path, cp, kNdim, kShape, kChunks, kBlocks, "<f4", data.data(),
                                  static_cast<int64_t>(data.size() * sizeof(float)));
}

// `path` opened as OpenCounting does (gaps of up to 1 MiB joined, reads
// delayed by `delay_ms`), and the heads of the chunks the concurrent readers
// below touch read, with a block of each that no reader's plan covers nor
// lies between its blocks: their plans then read nothing but blocks.
Counted OpenWithHeads(testing::TestStore& env, const std::string& path, uint64_t cache_id,
                      int delay_ms, bool remote) {
  auto opened = source::OpenLocal(path, &env.descriptors);
  REQUIRE(opened.ok());
  auto counting = std::make_shared<CountingSource>(std::move(opened).value(), int64_t{1} << 20);
  counting->remote_ = remote;
  counting->delay_ms = delay_ms;
  auto container = store::Container::Open(counting, &env.ctx, cache_id, nullptr);
  REQUIRE(container->ok());
  for (int64_t x : {0, 128}) {
    geometry::Box box;
    box.start = {0, 100, x};
    box.stop = {1, 101, x + 1};
    float item;
    REQUIRE(container->ReadArrayBox(box, reinterpret_cast<uint8_t*>(&item)).ok());
  }
  return {std::move(counting), std::move(container)};
}

// The compressed bytes of the blocks a box touches, and the heads of their
// chunks, from c-blosc2's own copy of each chunk.
struct Touched {
  int64_t blocks = 0;
  int64_t chunks = 0;
  int64_t block_bytes = 0;
  int64_t head_bytes = 0;
};

// c-blosc2's own bytes of the box [start, stop) of `array`.
std::vector<uint8_t> SliceBytes(b2nd_array_t* array, const int64_t start[kNdim],
                                const int64_t stop[kNdim]) {
  int64_t shape[kNdim];
  int64_t items = 1;
  for (int a = 0; a < kNdim; ++a) {
    shape[a] = stop[a] - start[a];
    items *= shape[a];
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(items * array->sc->typesize));
  REQUIRE(b2nd_get_slice_cbuffer(array, start, stop, bytes.data(), shape,
                                 static_cast<int64_t>(bytes.size())) == 0);
  return bytes;
}

Touched CountTouched(b2nd_array_t* array, const int64_t start[kNdim], const int64_t stop[kNdim]) {
  Touched t;
  const int64_t cgrid[kNdim] = {kShape[0] / kChunks[0], kShape[1] / kChunks[1],
                                kShape[2] / kChunks[2]};
  const int64_t bgrid[kNdim] = {kChunks[0] / kBlocks[0], kChunks[1] / kBlocks[1],
                                kChunks[2] / kBlocks[2]};
  for (int64_t c = 0; c < cgrid[0] * cgrid[1] * cgrid[2]; ++c) {
    const int64_t cc[kNdim] = {c / (cgrid[1] * cgrid[2]), (c / cgrid[2]) % cgrid[1], c % cgrid[2]};
    uint8_t* chunk = nullptr;
    bool needs_free = false;
    int cbytes = -1;
    int64_t blocks_here = 0;
    for (int64_t b = 0; b < bgrid[0] * bgrid[1] * bgrid[2]; ++b) {
      const int64_t bc[kNdim] = {b / (bgrid[1] * bgrid[2]), (b / bgrid[2]) % bgrid[1],
                                 b % bgrid[2]};
      bool hit = true;
      for (int a = 0; a < kNdim; ++a) {
        const int64_t lo = cc[a] * kChunks[a] + bc[a] * kBlocks[a];
        const int64_t hi = lo + kBlocks[a];
        hit = hit && lo < stop[a] && start[a] < hi;
      }
      if (!hit) continue;
      if (chunk == nullptr) {
        cbytes = blosc2_schunk_get_chunk(array->sc, c, &chunk, &needs_free);
        REQUIRE(cbytes > 0);
      }
      const int nblocks = static_cast<int>(bgrid[0] * bgrid[1] * bgrid[2]);
      auto start_of = [&](int64_t j) {
        int32_t v;
        std::memcpy(&v, chunk + BLOSC_EXTENDED_HEADER_LENGTH + 4 * j, 4);
        return static_cast<int64_t>(v);
      };
      const int64_t s = start_of(b);
      int64_t e = cbytes;
      for (int j = 0; j < nblocks; ++j) {
        if (start_of(j) > s) e = std::min(e, start_of(j));
      }
      t.block_bytes += e - s;
      ++blocks_here;
      t.head_bytes = BLOSC_EXTENDED_HEADER_LENGTH + 4 * nblocks;
    }
    if (blocks_here > 0) {
      t.blocks += blocks_here;
      t.chunks++;
    }
    if (needs_free) free(chunk);
  }
  t.head_bytes *= t.chunks;
  return t;
}

}  // namespace

TEST_CASE("a slice read coalesces source reads and stays near its compressed bytes",
          "[read_plan]") {
  testing::TempDir dir("b2ndfs_read_plan");
  const std::string path = (dir.path / "a.b2nd").string();
  b2nd_array_t* array = WriteArray(path);
  const int64_t gap = GENERATE(int64_t{32} << 10, int64_t{1} << 20);
  const int axis = GENERATE(0, 1, 2);
  const int threads = GENERATE(0, 3);
  CAPTURE(gap, axis, threads);

  testing::TestStore env(256u << 20, 4, threads);
  const auto [counting, container] = OpenCounting(env, path, gap);

  int64_t start[kNdim] = {0, 0, 0};
  int64_t stop[kNdim] = {kShape[0], kShape[1], kShape[2]};
  const int64_t index[kNdim] = {13, 77, 150};  // inside a block, not on an edge
  start[axis] = index[axis];
  stop[axis] = index[axis] + 1;
  int64_t nitems = 1;
  for (int a = 0; a < kNdim; ++a) nitems *= stop[a] - start[a];
  const Touched touched = CountTouched(array, start, stop);
  CAPTURE(touched.blocks, touched.chunks, touched.block_bytes, touched.head_bytes);

  geometry::Box box;
  box.start.assign(start, start + kNdim);
  box.stop.assign(stop, stop + kNdim);
  std::vector<uint8_t> got(static_cast<size_t>(nitems * 4));
  const int64_t reads_before = counting->reads.load();
  const int64_t bytes_before = counting->bytes.load();
  REQUIRE(container->ReadArrayBox(box, got.data()).ok());
  const int64_t reads = counting->reads.load() - reads_before;
  const int64_t bytes = counting->bytes.load() - bytes_before;
  CAPTURE(reads, bytes);

  const std::vector<uint8_t> want = SliceBytes(array, start, stop);
  CHECK(got == want);

  // One read per chunk head (the probe holds these heads), and the blocks'
  // bytes within the waste bound, plus what the head probes read past the heads.
  const int64_t probe_bytes = touched.chunks * 2048;
  CHECK(bytes * store::kMaxWasteDenominator <=
        touched.block_bytes * (store::kMaxWasteDenominator + store::kMaxWasteNumerator) +
            probe_bytes * store::kMaxWasteDenominator);
  const int64_t block_reads = reads - touched.chunks;
  CHECK(block_reads >= 1);
  if (axis != 2) {
    // Along axes 0 and 1 the blocks of a chunk lie in runs of 4 or 16.
    CHECK(block_reads * 4 <= touched.blocks);
  } else {
    // Along axis 2 every fourth block: the gaps are 3 blocks, more waste
    // than allowed, so each block is a read of its own.
    CHECK(block_reads <= touched.blocks);
  }

  // Read again: everything is cached, nothing is read.
  REQUIRE(container->ReadArrayBox(box, got.data()).ok());
  CHECK(counting->reads.load() - reads_before == reads);
  CHECK(got == want);
  b2nd_free(array);
}

TEST_CASE("a partly cached read counts each block it uses once in the cache's stats",
          "[read_plan]") {
  testing::TempDir dir("b2ndfs_read_plan");
  const std::string path = (dir.path / "a.b2nd").string();
  b2nd_array_t* array = WriteArray(path);
  testing::TestStore env(256u << 20, 4, 0);
  auto container = env.OpenLocal(path);

  // B: the plane z = 13; A: the same without its last row of blocks along y,
  // so that the blocks visited first in B are cached and a later one is not.
  const int64_t b_start[kNdim] = {13, 0, 0};
  const int64_t b_stop[kNdim] = {14, kShape[1], kShape[2]};
  const int64_t a_stop[kNdim] = {14, kShape[1] - kBlocks[1], kShape[2]};
  const Touched in_a = CountTouched(array, b_start, a_stop);
  const Touched in_b = CountTouched(array, b_start, b_stop);
  REQUIRE(in_a.blocks > in_b.chunks);  // else a double count could hide
  auto read = [&](const int64_t* stop) {
    geometry::Box box;
    box.start.assign(b_start, b_start + kNdim);
    box.stop.assign(stop, stop + kNdim);
    std::vector<uint8_t> got(static_cast<size_t>(box.NumItems() * 4));
    REQUIRE(container->ReadArrayBox(box, got.data()).ok());
    CHECK(got == SliceBytes(array, b_start, stop));
  };
  read(a_stop);
  const cache::CacheStats before = env.cache.stats();
  read(b_stop);
  const cache::CacheStats after = env.cache.stats();
  const uint64_t hits = after.hits - before.hits;
  const uint64_t misses = after.misses - before.misses;
  CAPTURE(in_a.blocks, in_b.blocks, in_b.chunks, hits, misses);
  // Every block of A is a hit, every other block of B a miss; besides them,
  // at most one chunk-head lookup per chunk.
  CHECK(hits >= static_cast<uint64_t>(in_a.blocks));
  CHECK(misses >= static_cast<uint64_t>(in_b.blocks - in_a.blocks));
  CHECK(hits + misses <= static_cast<uint64_t>(in_b.blocks + in_b.chunks));

  // All cached: a hit per block, nothing else.
  const cache::CacheStats warm = env.cache.stats();
  read(b_stop);
  CHECK(env.cache.stats().hits - warm.hits == static_cast<uint64_t>(in_b.blocks));
  CHECK(env.cache.stats().misses == warm.misses);
  b2nd_free(array);
}

TEST_CASE("a stream is cached once every block of its box is, and not before", "[read_plan]") {
  testing::TempDir dir("b2ndfs_read_plan");
  const std::string path = (dir.path / "a.b2nd").string();
  b2nd_array_t* array = WriteArray(path);
  testing::TestStore env(256u << 20, 4, 0);
  auto container = env.OpenLocal(path);
  // The plane z = 13, and the same without its last row of blocks along y.
  geometry::Box plane, most;
  plane.start = most.start = {13, 0, 0};
  plane.stop = {14, kShape[1], kShape[2]};
  most.stop = {14, kShape[1] - kBlocks[1], kShape[2]};
  const store::ArrayStream stream{"", plane};
  CHECK(!container->StreamCached(stream));
  std::vector<uint8_t> got(static_cast<size_t>(plane.NumItems() * 4));
  REQUIRE(container->ReadArrayBox(most, got.data()).ok());
  CHECK(!container->StreamCached(stream));  // its last row of blocks is not
  CHECK(container->StreamCached(store::ArrayStream{"", most}));
  REQUIRE(container->ReadArrayBox(plane, got.data()).ok());
  CHECK(container->StreamCached(stream));
  b2nd_free(array);
}

TEST_CASE("a remote source gets all of a plan's reads in one ReadMany", "[read_plan]") {
  testing::TempDir dir("b2ndfs_read_plan");
  const std::string path = (dir.path / "a.b2nd").string();
  b2nd_array_t* array = WriteArray(path);
  const int threads = GENERATE(0, 3);
  const int axis = GENERATE(0, 2);
  CAPTURE(threads, axis);
  testing::TestStore env(256u << 20, 4, threads);
  const auto [counting, container] = OpenCounting(env, path, int64_t{32} << 10, true);

  int64_t start[kNdim] = {0, 0, 0};
  int64_t stop[kNdim] = {kShape[0], kShape[1], kShape[2]};
  const int64_t index[kNdim] = {13, 77, 150};
  start[axis] = index[axis];
  stop[axis] = index[axis] + 1;
  int64_t nitems = 1;
  for (int a = 0; a < kNdim; ++a) nitems *= stop[a] - start[a];
  const Touched touched = CountTouched(array, start, stop);
  geometry::Box box;
  box.start.assign(start, start + kNdim);
  box.stop.assign(stop, stop + kNdim);
  std::vector<uint8_t> got(static_cast<size_t>(nitems * 4));
  {
    const Status read = container->ReadArrayBox(box, got.data());
    CAPTURE(read.message());
    REQUIRE(read.ok());
  }
  CHECK(got == SliceBytes(array, start, stop));
  {
    std::lock_guard<std::mutex> lock(counting->batch_mutex);
    REQUIRE(!counting->batches.empty());
    const size_t largest = *std::max_element(counting->batches.begin(), counting->batches.end());
    CAPTURE(counting->batches, touched.blocks);
    // Along axis 2 each block is a read of its own: all of them in one batch.
    if (axis == 2) CHECK(largest == static_cast<size_t>(touched.blocks));
    CHECK(largest >= 2);
  }
  b2nd_free(array);
}

TEST_CASE("a read whose source fails stops asking at its first failed block", "[read_plan]") {
  testing::TempDir dir("b2ndfs_read_plan");
  const std::string path = (dir.path / "a.b2nd").string();
  b2nd_array_t* array = WriteArray(path);
  b2nd_free(array);
  const bool remote = GENERATE(false, true);
  CAPTURE(remote);
  testing::TestStore env(256u << 20, 4, 2);
  const auto [counting, container] = OpenCounting(env, path, int64_t{32} << 10, remote);
  // The chunk heads are in (a read of one item per chunk), then the source fails.
  geometry::Box box;
  for (int64_t z : {0, 32}) {
    for (int64_t y : {0, 128}) {
      for (int64_t x : {0, 128}) {
        box.start = {z, y, x};
        box.stop = {z + 1, y + 1, x + 1};
        float item;
        REQUIRE(container->ReadArrayBox(box, reinterpret_cast<uint8_t*>(&item)).ok());
      }
    }
  }
  counting->fail_reads = true;
  const int64_t before = counting->reads.load();
  // Along axis 2: 64 blocks of 4 chunks, each a read of its own.
  box.start = {0, 0, 77};
  box.stop = {kShape[0], kShape[1], 78};
  std::vector<uint8_t> got(static_cast<size_t>(kShape[0] * kShape[1] * 4));
  const Status read = container->ReadArrayBox(box, got.data());
  CHECK_FALSE(read.ok());
  CHECK(read.message().find("the source fails") != std::string::npos);
  const int64_t asked = counting->reads.load() - before;
  CAPTURE(asked);
  // Locally each read goes out as its first block needs it; a remote
  // plan's 64 go out at once (one batch); none is asked for twice.
  CHECK(asked <= (remote ? 64 : 16));
}

TEST_CASE("a plan's reads stay within the source's longest read", "[read_plan]") {
  testing::TempDir dir("b2ndfs_read_plan");
  const std::string path = (dir.path / "a.b2nd").string();
  b2nd_array_t* array = WriteArray(path);
  const bool remote = GENERATE(false, true);
  const int threads = GENERATE(0, 3);
  CAPTURE(remote, threads);
  testing::TestStore env(256u << 20, 4, threads);
  // Gaps up to 1 MiB joined: only the longest read bounds a read.
  const auto [counting, container] = OpenCounting(env, path, int64_t{1} << 20, remote);
  // The whole array: its blocks lie back to back in the frame.
  const int64_t start[kNdim] = {0, 0, 0};
  const Touched touched = CountTouched(array, start, kShape);
  REQUIRE(touched.block_bytes > store::kMaxRemoteReadBytes / 2);  // room for long reads
  geometry::Box box;
  box.start.assign(start, start + kNdim);
  box.stop.assign(kShape, kShape + kNdim);
  std::vector<uint8_t> got(static_cast<size_t>(kShape[0] * kShape[1] * kShape[2] * 4));
  REQUIRE(container->ReadArrayBox(box, got.data()).ok());
  CHECK(got == SliceBytes(array, start, kShape));
  const int64_t longest = counting->longest.load();
  CAPTURE(longest, touched.block_bytes);
  if (remote) {
    // A request each: long reads, fewer requests.
    CHECK(longest > store::kMaxLocalReadBytes);
    CHECK(longest <= store::kMaxRemoteReadBytes);
  } else {
    CHECK(longest <= store::kMaxLocalReadBytes);
  }
  b2nd_free(array);
}

TEST_CASE("a remote container opens with its frame's two ends in one ReadMany", "[read_plan]") {
  testing::TempDir dir("b2ndfs_read_plan");
  const std::string path = (dir.path / "a.b2nd").string();
  b2nd_array_t* array = WriteArray(path);
  const bool fail_batches = GENERATE(false, true);
  CAPTURE(fail_batches);
  testing::TestStore env(256u << 20, 4, 0);
  env.ctx.remote_heads_max_chunks = 0;  // no background fetch of heads at open
  auto opened = source::OpenLocal(path, &env.descriptors);
  REQUIRE(opened.ok());
  auto counting = std::make_shared<CountingSource>(std::move(opened).value(), int64_t{32} << 10);
  counting->remote_ = true;
  counting->fail_batches = fail_batches;
  auto container = store::Container::Open(counting, &env.ctx, 1, nullptr);
  {
    std::lock_guard<std::mutex> lock(counting->batch_mutex);
    CHECK(counting->batches == std::vector<size_t>{2});
  }
  if (fail_batches) {
    // Windows that could not be read fail the open with the source's
    // error, without asking for their pieces one by one again.
    CHECK_FALSE(container->ok());
    CHECK(container->error().find("batch refused") != std::string::npos);
    CHECK(counting->reads == 0);
    b2nd_free(array);
    return;
  }
  REQUIRE(container->ok());
  CHECK(container->layout().shape() == std::vector<int64_t>(kShape, kShape + kNdim));
  CHECK(counting->reads == 2);  // header, trailer and index came in them
  // And the array reads right.
  const int64_t start[kNdim] = {5, 0, 0};
  const int64_t stop[kNdim] = {6, kShape[1], kShape[2]};
  geometry::Box box;
  box.start.assign(start, start + kNdim);
  box.stop.assign(stop, stop + kNdim);
  counting->fail_batches = false;
  std::vector<uint8_t> got(static_cast<size_t>(box.NumItems() * 4));
  REQUIRE(container->ReadArrayBox(box, got.data()).ok());
  CHECK(got == SliceBytes(array, start, stop));
  b2nd_free(array);
}

TEST_CASE("concurrent readers of the same blocks fetch their bytes once", "[read_plan]") {
  testing::TempDir dir("b2ndfs_read_plan");
  const std::string path = (dir.path / "a.b2nd").string();
  b2nd_array_t* array = WriteArray(path);
  testing::TestStore env(256u << 20, 4, 3);
  // The chunk heads come from the warm-up read below only (no background
  // fetch at open, none with a read's own).
  env.ctx.remote_heads_max_chunks = 0;
  // Remote: each plan's reads in one ReadMany (SpanFlights Begin/Land/Join).
  const bool remote = GENERATE(false, true);
  CAPTURE(remote);
  // Reader r reads a box shifted by r blocks along axis 2: their plans
  // start at different blocks and overlap in most of their bytes.
  constexpr int kReaders = 4;
  auto box_of = [](int first, int last) {
    geometry::Box box;
    box.start = {0, 0, 64 + 32 * first};
    box.stop = {32, 64, 160 + 32 * last};
    return box;
  };
  auto want_of = [&](const geometry::Box& box) {
    return SliceBytes(array, box.start.data(), box.stop.data());
  };
  auto open = [&](uint64_t cache_id, int delay_ms) {
    return OpenWithHeads(env, path, cache_id, delay_ms, remote);
  };
  // What one reader of all their boxes fetches.
  auto [alone_source, alone] = open(1, 0);
  const int64_t alone_before = alone_source->bytes.load();
  const geometry::Box all = box_of(0, kReaders - 1);
  std::vector<uint8_t> got(static_cast<size_t>(all.NumItems() * 4));
  REQUIRE(alone->ReadArrayBox(all, got.data()).ok());
  CHECK(got == want_of(all));
  const int64_t alone_bytes = alone_source->bytes.load() - alone_before;

  // The readers at once, on a slow source: their reads overlap in time. A
  // remote plan claims all its spans as its reads are issued, first thing
  // when it runs: the source holds their bytes until every reader's plan
  // has claimed, so that each byte is fetched once whatever the schedule.
  auto [shared_source, shared] = open(2, 20);
  const int64_t shared_before = shared_source->bytes.load();
  if (remote) shared_source->gate_calls = kReaders;
  std::vector<std::vector<uint8_t>> outs(kReaders);
  std::vector<Status> statuses(kReaders);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    outs[r].resize(static_cast<size_t>(box_of(r, r).NumItems() * 4));
    // `container` by name: C++20 lambdas may not capture structured bindings
    // implicitly before clang 16.
    readers.emplace_back([&, r, container = shared] {
      statuses[r] = container->ReadArrayBox(box_of(r, r), outs[r].data());
    });
  }
  for (std::thread& t : readers) t.join();
  for (int r = 0; r < kReaders; ++r) {
    REQUIRE(statuses[r].ok());
    CHECK(outs[r] == want_of(box_of(r, r)));
  }
  const int64_t shared_bytes = shared_source->bytes.load() - shared_before;
  CAPTURE(alone_bytes, shared_bytes);
  if (remote) {
    {
      std::lock_guard<std::mutex> lock(shared_source->gate_mutex);
      CHECK(shared_source->gate_arrived == kReaders);
      CHECK_FALSE(shared_source->gate_timed_out);
    }
    // Every byte the readers' plans claimed, once: here the same bytes as
    // the union's plan.
    CHECK(shared_bytes <= alone_bytes);
  } else {
    // A local plan claims a read's span only when the first task that
    // needs it runs, so on a loaded machine (sanitizers, 2 CPUs) another
    // plan made in between reads some bytes again (1.12x seen under TSan
    // with other tests beside it).
    CHECK(shared_bytes * 4 <= alone_bytes * 5);
  }
  b2nd_free(array);
}

TEST_CASE("a remote plan claims its spans before it waits for other readers' blocks",
          "[read_plan]") {
  testing::TempDir dir("b2ndfs_read_plan");
  const std::string path = (dir.path / "a.b2nd").string();
  b2nd_array_t* array = WriteArray(path);
  b2nd_free(array);
  // No workers: each plan's tasks run one after the other on its reader.
  testing::TestStore env(256u << 20, 4, 0);
  env.ctx.remote_heads_max_chunks = 0;
  geometry::Box box;
  box.start = {0, 0, 64};
  box.stop = {32, 64, 160};
  std::vector<uint8_t> want(static_cast<size_t>(box.NumItems() * 4));
  const auto [alone_source, alone] = OpenWithHeads(env, path, 1, 0, true);
  const int64_t alone_before = alone_source->bytes.load();
  REQUIRE(alone->ReadArrayBox(box, want.data()).ok());
  const int64_t alone_bytes = alone_source->bytes.load() - alone_before;

  // Reader A's batch is held at the source until a second batch comes; then
  // reader B reads the same box, its first blocks being loaded by A. B's
  // plan must claim (joining A's reads) without waiting for those blocks.
  const auto [source, container] = OpenWithHeads(env, path, 2, 0, true);
  const int64_t before = source->bytes.load();
  source->gate_calls = 2;
  std::vector<uint8_t> a(want.size()), b(want.size());
  Status a_status, b_status;
  std::thread reader_a([&, c = container] { a_status = c->ReadArrayBox(box, a.data()); });
  for (;;) {
    std::lock_guard<std::mutex> lock(source->gate_mutex);
    if (source->gate_arrived >= 1) break;
  }
  std::thread reader_b([&, c = container] { b_status = c->ReadArrayBox(box, b.data()); });
  reader_a.join();
  reader_b.join();
  {
    std::lock_guard<std::mutex> lock(source->gate_mutex);
    CHECK_FALSE(source->gate_timed_out);
  }
  REQUIRE(a_status.ok());
  REQUIRE(b_status.ok());
  CHECK(a == want);
  CHECK(b == want);
  const int64_t bytes = source->bytes.load() - before;
  CAPTURE(alone_bytes, bytes);
  CHECK(bytes == alone_bytes);
}

TEST_CASE("random byte ranges of the array stream return c-blosc2's bytes, cold and warm",
          "[read_plan]") {
  testing::TempDir dir("b2ndfs_read_plan");
  const std::string path = (dir.path / "a.b2nd").string();
  b2nd_array_t* array = WriteArray(path);
  std::vector<uint8_t> want(static_cast<size_t>(kShape[0] * kShape[1] * kShape[2] * 4));
  REQUIRE(b2nd_to_cbuffer(array, want.data(), static_cast<int64_t>(want.size())) == 0);
  b2nd_free(array);
  // A cache that holds a few chunks only and a small pinning limit: reads
  // come in several batches, and blocks are evicted between reads.
  const size_t cache_bytes = GENERATE(size_t{2} << 20, size_t{256} << 20);
  const int threads = GENERATE(0, 2);
  CAPTURE(cache_bytes, threads);
  testing::TestStore env(cache_bytes, 2, threads);
  env.ctx.max_pinned_bytes = 256u << 10;
  auto container = env.OpenLocal(path);
  const store::ArrayStream stream{"HEAD",
                                  geometry::Box::FromShape({kShape[0], kShape[1], kShape[2]})};
  REQUIRE(container->StreamSize(stream) == static_cast<int64_t>(want.size()) + 4);

  std::vector<uint8_t> file(4 + want.size());
  std::memcpy(file.data(), "HEAD", 4);
  std::memcpy(file.data() + 4, want.data(), want.size());
  std::mt19937_64 rng(99);
  std::vector<uint8_t> got;
  for (int round = 0; round < 60; ++round) {
    // Unaligned offsets and lengths from a few bytes to ~3 MiB, some past the end.
    const int64_t offset = static_cast<int64_t>(rng() % (file.size() + 4));
    const size_t length = round % 3 == 0 ? 1 + rng() % 64 : 1 + rng() % (3u << 20);
    got.assign(length, 0xEE);
    for (int pass = 0; pass < 2; ++pass) {  // cold (mostly), then warm
      CAPTURE(round, offset, length, pass);
      auto n = container->Read(stream, offset, length, got.data());
      REQUIRE(n.ok());
      const int64_t size = container->StreamSize(stream);
      REQUIRE(static_cast<int64_t>(*n) == std::clamp<int64_t>(size - offset, 0, length));
      if (*n > 0) CHECK(std::memcmp(got.data(), file.data() + offset, *n) == 0);
    }
  }
}
