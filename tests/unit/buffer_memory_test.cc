// Unit tests of cache/buffer_memory: slab size classes, slots that never
// overlap and are reused newest first, slabs unmapped when empty (one kept),
// the recycled larger buffers, and a multi-threaded stress run.
#include "b2ndfs/cache/buffer_memory.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <latch>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/util/sanitizers.h"

namespace b2ndfs::cache {
namespace {

// Fills P with a pattern of SEED, and checks it back.
void Fill(void* p, size_t size, uint64_t seed) {
  auto* b = static_cast<uint8_t*>(p);
  for (size_t i = 0; i < size; i += 512) b[i] = static_cast<uint8_t>(seed + i / 512);
  b[size - 1] = static_cast<uint8_t>(seed * 7);
}
bool Holds(const void* p, size_t size, uint64_t seed) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < size; i += 512) {
    if (b[i] != static_cast<uint8_t>(seed + i / 512)) return false;
  }
  return b[size - 1] == static_cast<uint8_t>(seed * 7);
}

TEST_CASE("slab slots: a class per size, at most an eighth unused") {
  CHECK(SlabSlotBytes(kSlabSlotMinBytes - 1) == 0);
  CHECK(SlabSlotBytes(kSlabSlotMaxBytes + 1) == 0);
  CHECK(SlabSlotBytes(8 << 10) == (8 << 10));
  CHECK(SlabSlotBytes((8 << 10) + 1) == (12 << 10));
  CHECK(SlabSlotBytes(20 << 10) == (20 << 10));
  CHECK(SlabSlotBytes(64 << 10) == (64 << 10));
  CHECK(SlabSlotBytes((64 << 10) + 1) == (72 << 10));
  CHECK(SlabSlotBytes(100000) == (104 << 10));
  CHECK(SlabSlotBytes(kSlabSlotMaxBytes) == kSlabSlotMaxBytes);
  std::set<size_t> slots;
  size_t last_class = 0;
  for (size_t size = kSlabSlotMinBytes; size <= kSlabSlotMaxBytes; size += 97) {
    const size_t slot = SlabSlotBytes(size);
    REQUIRE(slot >= size);
    REQUIRE(slot % 4096 == 0);
    REQUIRE(slot - size < std::max<size_t>(4096, slot / 8));
    REQUIRE(SlabSlotBytes(slot) == slot);
    const size_t cls = SlabSizeClass(slot);
    REQUIRE(cls < kSlabSizeClasses);
    REQUIRE(cls >= last_class);  // classes ascend with their slots
    last_class = cls;
    slots.insert(slot);
  }
  slots.insert(kSlabSlotMaxBytes);
  // One to one: every slot size has a class of its own.
  CHECK(slots.size() == kSlabSizeClasses);
  std::set<size_t> classes;
  for (size_t slot : slots) classes.insert(SlabSizeClass(slot));
  CHECK(classes.size() == kSlabSizeClasses);
}

#ifndef B2NDFS_ADDRESS_SANITIZER
TEST_CASE("slab buffers: aligned, apart, reused newest first, empty slabs kept for any class") {
  // 44 KiB: a class no other test of this binary uses; 46 slots a slab.
  constexpr size_t kSize = 44 << 10;
  constexpr size_t kPerSlab = kSlabBytes / kSize;
  constexpr size_t kSlabs = kEmptySlabs + 2;
  const BufferMemoryStats before = GetBufferMemoryStats();
  std::vector<void*> bufs;
  for (size_t i = 0; i < kSlabs * kPerSlab; ++i) {
    bufs.push_back(AllocateLargeBuffer(kSize));
    REQUIRE(reinterpret_cast<uintptr_t>(bufs.back()) % 4096 == 0);
    Fill(bufs.back(), kSize, i);
  }
  for (size_t i = 0; i < bufs.size(); ++i) REQUIRE(Holds(bufs[i], kSize, i));
  auto slab_of = [](const void* p) { return reinterpret_cast<uintptr_t>(p) & ~(kSlabBytes - 1); };
  std::set<uintptr_t> slabs;
  for (void* p : bufs) slabs.insert(slab_of(p));
  CHECK(slabs.size() == kSlabs);
  const BufferMemoryStats during = GetBufferMemoryStats();
  // Empty slabs kept earlier were used first.
  CHECK(during.slabs - during.slabs_empty == before.slabs - before.slabs_empty + kSlabs);
  CHECK(during.slab_slots_used == before.slab_slots_used + bufs.size());
  CHECK(during.slab_bytes_used == before.slab_bytes_used + bufs.size() * kSize);

  // The slot freed last is the next one handed out.
  FreeLargeBuffer(bufs[5], kSize);
  FreeLargeBuffer(bufs[9], kSize);
  CHECK(AllocateLargeBuffer(kSize) == bufs[9]);
  CHECK(AllocateLargeBuffer(kSize) == bufs[5]);

  // Emptied slabs are kept, kEmptySlabs of them, the rest unmapped.
  for (void* p : bufs) FreeLargeBuffer(p, kSize);
  const BufferMemoryStats after = GetBufferMemoryStats();
  CHECK(after.slabs_empty == kEmptySlabs);
  CHECK(after.slabs - after.slabs_empty == before.slabs - before.slabs_empty);
  CHECK(after.slabs_unmapped > before.slabs_unmapped);
  CHECK(after.slab_slots_used == before.slab_slots_used);
  // The slab emptied last serves the next buffer, of another class too.
  void* other = AllocateLargeBuffer(52 << 10);
  CHECK(slab_of(other) == slab_of(bufs.back()));
  CHECK(GetBufferMemoryStats().slabs == after.slabs);
  CHECK(GetBufferMemoryStats().slabs_empty == kEmptySlabs - 1);
  FreeLargeBuffer(other, 52 << 10);
}

// The VmFlags of the mapping that holds P, from /proc/self/smaps.
std::string VmFlagsAt(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2) {
      inside = begin <= addr && addr < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

TEST_CASE("new slabs ask for huge pages unless told not to") {
  // Enough 1 MiB buffers (two a slab) that the last needs a slab mapped now,
  // whatever empty slabs were kept.
  auto last_slab_flags = [] {
    std::vector<void*> bufs;
    for (size_t i = 0; i < 2 * (kEmptySlabs + 1); ++i) bufs.push_back(AllocateLargeBuffer(1 << 20));
    const std::string flags = VmFlagsAt(bufs.back());
    for (void* p : bufs) FreeLargeBuffer(p, 1 << 20);
    return flags;
  };
  SetSlabHugePages(false);
  const std::string off = last_slab_flags();
  SetSlabHugePages(true);
  const std::string on = last_slab_flags();
  INFO("huge pages off: " << off << "\non: " << on);
  REQUIRE(!off.empty());
  CHECK(off.find(" hg") == std::string::npos);  // VM_HUGEPAGE: MADV_HUGEPAGE was given
  if (std::filesystem::exists("/sys/kernel/mm/transparent_hugepage")) {
    CHECK(on.find(" hg") != std::string::npos);
  }
}

TEST_CASE("FillEmptySlabs keeps kEmptySlabs ready, which the next slabs come from") {
  FillEmptySlabs();
  const BufferMemoryStats filled = GetBufferMemoryStats();
  CHECK(filled.slabs_empty == kEmptySlabs);
  FillEmptySlabs();  // full already: nothing more mapped
  CHECK(GetBufferMemoryStats().slabs == filled.slabs);
  void* p = AllocateLargeBuffer(60 << 10);  // a class with no slab yet
  CHECK(GetBufferMemoryStats().slabs == filled.slabs);
  CHECK(GetBufferMemoryStats().slabs_empty == kEmptySlabs - 1);
  FreeLargeBuffer(p, 60 << 10);
  CHECK(GetBufferMemoryStats().slabs_empty == kEmptySlabs);
}

TEST_CASE("threads that find a class full at once share one new slab") {
  // 100 KiB buffers: 19 to a slab. Each round, eight threads ask for one at
  // the same moment in a class with no slab; one slab serves them all.
  constexpr size_t kSize = 100 << 10;
  constexpr int kThreads = 8;
  int rounds_with_more = 0;
  for (int round = 0; round < 20; ++round) {
    const BufferMemoryStats before = GetBufferMemoryStats();
    std::vector<void*> bufs(kThreads);
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        bufs[static_cast<size_t>(t)] = AllocateLargeBuffer(kSize);
      });
    }
    for (auto& th : threads) th.join();
    const BufferMemoryStats after = GetBufferMemoryStats();
    // Slabs the class took: newly mapped, or from the empty ones.
    const int64_t taken = static_cast<int64_t>(after.slabs - before.slabs) +
                          static_cast<int64_t>(before.slabs_empty - after.slabs_empty);
    if (taken > 1) ++rounds_with_more;
    for (size_t i = 0; i < bufs.size(); ++i) Fill(bufs[i], kSize, i);
    for (size_t i = 0; i < bufs.size(); ++i) {
      CHECK(Holds(bufs[i], kSize, i));
      FreeLargeBuffer(bufs[i], kSize);
    }
  }
  CHECK(rounds_with_more == 0);
}

TEST_CASE("slabs keep under kSlabSlackBytes free; beyond, buffers come from operator new") {
  // One buffer in each of 24 classes (72 KiB to 512 KiB): each would need a
  // slab of its own, ~1.8 MiB of it free.
  std::vector<size_t> sizes;
  for (size_t octave = 64 << 10; octave < (512 << 10); octave *= 2) {
    for (size_t k = 1; k <= 8; ++k) sizes.push_back(octave + k * octave / 8);
  }
  const BufferMemoryStats before = GetBufferMemoryStats();
  std::vector<void*> bufs;
  for (size_t i = 0; i < sizes.size(); ++i) {
    bufs.push_back(AllocateLargeBuffer(sizes[i]));
    Fill(bufs.back(), sizes[i], i);
  }
  const BufferMemoryStats after = GetBufferMemoryStats();
  CHECK(after.slab_fallbacks > before.slab_fallbacks);
  CHECK(after.slabs * kSlabBytes - after.slab_bytes_used <= kSlabSlackBytes);
  for (size_t i = 0; i < sizes.size(); ++i) {
    CHECK(Holds(bufs[i], sizes[i], i));
    FreeLargeBuffer(bufs[i], sizes[i]);
  }
  CHECK(GetBufferMemoryStats().slab_slots_used == before.slab_slots_used);
}

TEST_CASE("block buffers come from slabs through the cache's allocator") {
  const BufferMemoryStats before = GetBufferMemoryStats();
  {
    Bytes block(20 << 10);
    CHECK(reinterpret_cast<uintptr_t>(block.data()) % 4096 == 0);
    CHECK(GetBufferMemoryStats().slab_slots_used == before.slab_slots_used + 1);
    Bytes small(100);  // below the slabs' sizes: operator new
    CHECK(GetBufferMemoryStats().slab_slots_used == before.slab_slots_used + 1);
  }
  CHECK(GetBufferMemoryStats().slab_slots_used == before.slab_slots_used);
}

// Takes every recycled buffer of `size` out of the pool and frees it; returns
// how many there were.
size_t DrainRecycled(size_t size) {
  size_t n = 0;
  for (; void* p = TakeRecycledBuffer(size); ++n) ::operator delete(p, size);
  return n;
}
#endif

TEST_CASE("buffers larger than a slot are recycled for the same size, within bounds") {
#ifdef B2NDFS_ADDRESS_SANITIZER
  // Off under ASan (it must see buffers used after their release).
  CHECK(TakeRecycledBuffer(2 << 20) == nullptr);
#else
  constexpr size_t kBig = kSlabSlotMaxBytes + 4096;
  for (size_t size : {size_t{64} << 10, kBig, kBig * 2}) DrainRecycled(size);
  void* a = AllocateLargeBuffer(kBig);
  FreeLargeBuffer(a, kBig);
  CHECK(TakeRecycledBuffer(kBig * 2) == nullptr);  // only the same size
  void* b = AllocateLargeBuffer(kBig);
  CHECK(b == a);                               // the buffer freed last
  CHECK(TakeRecycledBuffer(kBig) == nullptr);  // taken: gone from the pool
  FreeLargeBuffer(b, kBig);
  CHECK(TakeRecycledBuffer(kBig) == a);
  ::operator delete(a, kBig);

  // At most kRecycledBuffers, and kRecycledBytes in all: the oldest go first.
  std::vector<void*> many;
  for (size_t i = 0; i < kRecycledBuffers + 3; ++i) many.push_back(::operator new(64 << 10));
  for (void* p : many) CHECK(RecycleBuffer(p, 64 << 10));
  std::vector<void*> back;
  while (void* p = TakeRecycledBuffer(64 << 10)) back.push_back(p);
  CHECK(back.size() == kRecycledBuffers);
  CHECK(back.front() == many.back());  // newest first
  for (void* p : back) ::operator delete(p, 64 << 10);
  std::vector<void*> big;
  for (size_t i = 0; i < kRecycledBytes / kBig + 2; ++i) big.push_back(AllocateLargeBuffer(kBig));
  for (void* p : big) FreeLargeBuffer(p, kBig);
  CHECK(DrainRecycled(kBig) == kRecycledBytes / kBig);
  // Larger than the whole pool: freed, never kept.
  void* huge = AllocateLargeBuffer(kRecycledBytes + 1);
  FreeLargeBuffer(huge, kRecycledBytes + 1);
  CHECK(TakeRecycledBuffer(kRecycledBytes + 1) == nullptr);
#endif
}

TEST_CASE("threads allocating and freeing buffers of several sizes never share bytes") {
  constexpr int kThreads = 4;
  constexpr int kRounds = 3000;
  const size_t sizes[] = {8 << 10, 16 << 10, 16 << 10, 20000, 64 << 10, 300000, 1 << 20, 3 << 20};
  std::atomic<int> corrupt{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
      struct Held {
        void* p;
        size_t size;
        uint64_t seed;
      };
      std::vector<Held> held;
      for (int r = 0; r < kRounds; ++r) {
        if (held.size() < 40 && (held.empty() || rng() % 3 != 0)) {
          const size_t size = sizes[rng() % std::size(sizes)];
          const uint64_t seed = rng();
          void* p = AllocateLargeBuffer(size);
          Fill(p, size, seed);
          held.push_back({p, size, seed});
        } else {
          const size_t i = rng() % held.size();
          if (!Holds(held[i].p, held[i].size, held[i].seed)) corrupt.fetch_add(1);
          FreeLargeBuffer(held[i].p, held[i].size);
          held[i] = held.back();
          held.pop_back();
        }
      }
      for (const Held& h : held) {
        if (!Holds(h.p, h.size, h.seed)) corrupt.fetch_add(1);
        FreeLargeBuffer(h.p, h.size);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(corrupt.load() == 0);
}

}  // namespace
}  // namespace b2ndfs::cache
