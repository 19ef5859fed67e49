#include "b2ndfs/cache/buffer_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#include "b2ndfs/util/sanitizers.h"

namespace b2ndfs::cache {

void PrefaultForWrite(void* p, size_t size) noexcept {
#ifdef MADV_POPULATE_WRITE
  // Off for good after the first refusal (an older kernel: EINVAL).
  static std::atomic<bool> supported{true};
  if (!supported.load(std::memory_order_relaxed)) return;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  // The whole pages inside the buffer: the partial ones at its ends may be
  // shared with other allocations, and are present already if so.
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + size) & ~(page - 1);
  if (end <= begin) return;
  const int saved_errno = errno;
  if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) != 0 &&
      errno == EINVAL) {
    supported.store(false, std::memory_order_relaxed);
  }
  errno = saved_errno;
#else
  (void)p;
  (void)size;
#endif
}

size_t SlabSlotBytes(size_t size) noexcept {
  if (size < kSlabSlotMinBytes || size > kSlabSlotMaxBytes) return 0;
  const size_t step = std::max<size_t>(4096, std::bit_floor(size - 1) / 8);
  return (size + step - 1) / step * step;
}

size_t SlabSizeClass(size_t slot) noexcept {
  if (slot <= (32 << 10)) return slot / 4096 - 2;  // 8 .. 32 KiB: 0 .. 6
  const size_t octave = std::bit_floor(slot - 1);  // 32 .. 512 KiB
  const size_t step = octave / 8;
  return 7 + 8 * static_cast<size_t>(std::countr_zero(octave) - 15) + (slot - octave) / step - 1;
}

namespace {

std::atomic<bool> g_huge_pages{true};
std::atomic<uint64_t> g_slabs{0};
std::atomic<uint64_t> g_slabs_empty{0};
std::atomic<uint64_t> g_slots_used{0};
std::atomic<uint64_t> g_slot_bytes_used{0};
std::atomic<uint64_t> g_slabs_unmapped{0};
std::atomic<uint64_t> g_slab_fallbacks{0};

void* NewPrefaulted(size_t size) {
  void* p = ::operator new(size);
  PrefaultForWrite(p, size);
  return p;
}

// Sized where the compiler has it (clang before 16 only with
// -fsized-deallocation).
void Delete(void* p, size_t size) noexcept {
#ifdef __cpp_sized_deallocation
  ::operator delete(p, size);
#else
  (void)size;
  ::operator delete(p);
#endif
}

}  // namespace

void SetSlabHugePages(bool on) noexcept { g_huge_pages.store(on, std::memory_order_relaxed); }

BufferMemoryStats GetBufferMemoryStats() noexcept {
  BufferMemoryStats s;
  s.slabs = g_slabs.load(std::memory_order_relaxed);
  s.slabs_empty = g_slabs_empty.load(std::memory_order_relaxed);
  s.slab_slots_used = g_slots_used.load(std::memory_order_relaxed);
  s.slab_bytes_used = g_slot_bytes_used.load(std::memory_order_relaxed);
  s.slabs_unmapped = g_slabs_unmapped.load(std::memory_order_relaxed);
  s.slab_fallbacks = g_slab_fallbacks.load(std::memory_order_relaxed);
  return s;
}

#ifdef B2NDFS_ADDRESS_SANITIZER
// Off: ASan must see a buffer used after its release.
void* AllocateLargeBuffer(size_t size) { return NewPrefaulted(size); }
void FreeLargeBuffer(void* p, size_t size) noexcept { Delete(p, size); }
void* TakeRecycledBuffer(size_t) noexcept { return nullptr; }
bool RecycleBuffer(void*, size_t) noexcept { return false; }
void FillEmptySlabs() noexcept {}
#else
namespace {

// ---- Slabs ----

struct Slab {
  uint8_t* base = nullptr;
  uint32_t used = 0;        // slots handed out now
  uint32_t fresh_from = 0;  // slots from here on were never handed out
  void* freed = nullptr;    // freed slots, newest first, linked through their first bytes
};

struct SizeClass {
  std::mutex mu;
  std::unordered_map<uintptr_t, Slab> slabs;  // by base address
  std::vector<Slab*> with_room;               // slabs with a free slot; the back is used first
};

// Never destroyed: static destructors at exit may still free buffers.
SizeClass& Class(size_t slot) {
  static SizeClass* const classes = new SizeClass[kSlabSizeClasses];
  return classes[SlabSizeClass(slot)];
}

// Empty slabs, newest last, for the next slab of any class: a short-lived
// buffer of a rare size costs no mapping, and emptied slabs do not pile up.
struct EmptySlabs {
  std::mutex mu;
  std::vector<uint8_t*> bases;  // capacity kEmptySlabs
  EmptySlabs() { bases.reserve(kEmptySlabs); }
};

EmptySlabs& Empty() {
  static EmptySlabs* const empty = new EmptySlabs;
  return *empty;
}

// Held while a slab is made: one at a time. Threads that each found their
// class full at once (a cold read's tasks) made one slab each, all together,
// and their mmap, munmap and page faults queued on the process's memory map
// lock: 5-26 ms per mmap instead of 0.03 (the first read of a remote mount,
// 5 threads, in a VM where new memory is slow to fault in). The others wait,
// then mostly find room in the slab just made.
std::mutex& SlabMakingMutex() {
  static std::mutex* const mu = new std::mutex;
  return *mu;
}

// A new slab: 2 MiB-aligned (so that it can be one huge page, and a slot's
// slab is its address rounded down), present, or nullptr.
uint8_t* MapSlab() noexcept {
  void* raw =
      mmap(nullptr, 2 * kSlabBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t base = (start + kSlabBytes - 1) & ~(kSlabBytes - 1);
  if (base > start) munmap(raw, base - start);
  munmap(reinterpret_cast<void*>(base + kSlabBytes), start + kSlabBytes - base);
  void* slab = reinterpret_cast<void*>(base);
#ifdef MADV_HUGEPAGE
  if (g_huge_pages.load(std::memory_order_relaxed)) {
    madvise(slab, kSlabBytes, MADV_HUGEPAGE);  // a hint: refused where THP is off
  }
#endif
  PrefaultForWrite(slab, kSlabBytes);
  g_slabs.fetch_add(1, std::memory_order_relaxed);
  return static_cast<uint8_t*>(slab);
}

void UnmapSlab(uint8_t* base) noexcept {
  munmap(base, kSlabBytes);
  g_slabs.fetch_sub(1, std::memory_order_relaxed);
  g_slabs_unmapped.fetch_add(1, std::memory_order_relaxed);
}

// Bytes of slabs not in buffers now (racy by design: a bound, not a count).
uint64_t SlackBytes() noexcept {
  const uint64_t mapped = g_slabs.load(std::memory_order_relaxed) * kSlabBytes;
  const uint64_t used = g_slot_bytes_used.load(std::memory_order_relaxed);
  return mapped > used ? mapped - used : 0;
}

uint8_t* TakeEmptySlab() noexcept {
  EmptySlabs& e = Empty();
  std::lock_guard<std::mutex> lock(e.mu);
  if (e.bases.empty()) return nullptr;
  uint8_t* base = e.bases.back();
  e.bases.pop_back();
  g_slabs_empty.store(e.bases.size(), std::memory_order_relaxed);
  return base;
}

// Keeps BASE for the next slab; returns the oldest kept one if there were
// kEmptySlabs already (the caller unmaps it), else nullptr.
uint8_t* KeepEmptySlab(uint8_t* base) noexcept {
  EmptySlabs& e = Empty();
  std::lock_guard<std::mutex> lock(e.mu);
  uint8_t* oldest = nullptr;
  if (e.bases.size() == kEmptySlabs) {
    oldest = e.bases.front();
    e.bases.erase(e.bases.begin());
  }
  e.bases.push_back(base);  // within the capacity reserved: no allocation
  g_slabs_empty.store(e.bases.size(), std::memory_order_relaxed);
  return oldest;
}

}  // namespace

void FillEmptySlabs() noexcept {
  for (;;) {
    {
      EmptySlabs& e = Empty();
      std::lock_guard<std::mutex> lock(e.mu);
      if (e.bases.size() >= kEmptySlabs) return;
    }
    if (SlackBytes() + kSlabBytes > kSlabSlackBytes) return;
    uint8_t* base;
    {
      std::lock_guard<std::mutex> making(SlabMakingMutex());
      base = MapSlab();
    }
    if (base == nullptr) return;
    if (uint8_t* spare = KeepEmptySlab(base)) {  // others filled it meanwhile
      UnmapSlab(spare);
      return;
    }
  }
}

namespace {

// A slot of a slab with room, or nullptr. Holds c.mu.
void* TakeSlot(SizeClass& c, size_t slot, uint32_t per_slab) {
  if (c.with_room.empty()) return nullptr;
  Slab* s = c.with_room.back();
  void* p;
  if (s->freed != nullptr) {
    p = s->freed;
    s->freed = *static_cast<void**>(p);
  } else {
    p = s->base + size_t{s->fresh_from++} * slot;
  }
  if (++s->used == per_slab) c.with_room.pop_back();
  return p;
}

void* AllocateSlot(size_t slot) {
  SizeClass& c = Class(slot);
  const auto per_slab = static_cast<uint32_t>(kSlabBytes / slot);
  void* p;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    p = TakeSlot(c, slot, per_slab);
  }
  std::unique_lock<std::mutex> making(SlabMakingMutex(), std::defer_lock);
  if (p == nullptr) {
    making.lock();
    std::lock_guard<std::mutex> lock(c.mu);
    p = TakeSlot(c, slot, per_slab);  // in another thread's new slab
  }
  if (p == nullptr) {
    // Mapped without the class's lock: making 2 MiB present may take a while.
    uint8_t* base = TakeEmptySlab();
    if (base == nullptr && SlackBytes() + kSlabBytes <= kSlabSlackBytes) base = MapSlab();
    if (base == nullptr) {
      g_slab_fallbacks.fetch_add(1, std::memory_order_relaxed);
      return NewPrefaulted(slot);
    }
    std::lock_guard<std::mutex> lock(c.mu);
    try {
      // Room for every slab of the class: FreeSlot's push_back must not throw.
      if (c.with_room.capacity() <= c.slabs.size()) {
        c.with_room.reserve(2 * c.slabs.size() + 8);
      }
      Slab& s = c.slabs[reinterpret_cast<uintptr_t>(base)];
      s.base = base;
      c.with_room.push_back(&s);
    } catch (const std::bad_alloc&) {
      UnmapSlab(base);  // not to be lost
      throw;
    }
    p = TakeSlot(c, slot, per_slab);
  }
  g_slots_used.fetch_add(1, std::memory_order_relaxed);
  g_slot_bytes_used.fetch_add(slot, std::memory_order_relaxed);
  return p;
}

// False: P is not in a slab (a fallback of AllocateSlot).
bool FreeSlot(void* p, size_t slot) noexcept {
  SizeClass& c = Class(slot);
  const auto per_slab = static_cast<uint32_t>(kSlabBytes / slot);
  const uintptr_t base = reinterpret_cast<uintptr_t>(p) & ~(kSlabBytes - 1);
  uint8_t* emptied = nullptr;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    const auto it = c.slabs.find(base);
    if (it == c.slabs.end()) return false;
    Slab& s = it->second;
    *static_cast<void**>(p) = s.freed;
    s.freed = p;
    if (s.used-- == per_slab) c.with_room.push_back(&s);
    if (s.used == 0) {
      std::erase(c.with_room, &s);
      emptied = s.base;
      c.slabs.erase(it);
    }
  }
  g_slots_used.fetch_sub(1, std::memory_order_relaxed);
  g_slot_bytes_used.fetch_sub(slot, std::memory_order_relaxed);
  if (emptied != nullptr) {
    if (uint8_t* oldest = KeepEmptySlab(emptied)) UnmapSlab(oldest);
  }
  return true;
}

// ---- Recycled larger buffers ----

// The buffers RecycleBuffer keeps, oldest first. Never destroyed: static
// destructors at exit may still free block buffers into it.
struct RecycledBuffers {
  std::mutex mu;
  std::vector<std::pair<void*, size_t>> held;  // capacity kRecycledBuffers
  size_t bytes = 0;
  RecycledBuffers() { held.reserve(kRecycledBuffers); }
};

RecycledBuffers& Recycled() {
  static RecycledBuffers* const buffers = new RecycledBuffers;
  return *buffers;
}

}  // namespace

void* TakeRecycledBuffer(size_t size) noexcept {
  RecycledBuffers& r = Recycled();
  std::lock_guard<std::mutex> lock(r.mu);
  // The newest first: its lines are the likeliest to be in a CPU cache.
  for (size_t i = r.held.size(); i-- > 0;) {
    if (r.held[i].second != size) continue;
    void* p = r.held[i].first;
    r.held.erase(r.held.begin() + static_cast<std::ptrdiff_t>(i));
    r.bytes -= size;
    return p;
  }
  return nullptr;
}

bool RecycleBuffer(void* p, size_t size) noexcept {
  if (size > kRecycledBytes) return false;
  std::pair<void*, size_t> dropped[kRecycledBuffers];
  size_t ndropped = 0;
  {
    RecycledBuffers& r = Recycled();
    std::lock_guard<std::mutex> lock(r.mu);
    size_t oldest = 0;
    while (r.held.size() - oldest == kRecycledBuffers || r.bytes + size > kRecycledBytes) {
      dropped[ndropped++] = r.held[oldest];
      r.bytes -= r.held[oldest].second;
      ++oldest;
    }
    r.held.erase(r.held.begin(), r.held.begin() + static_cast<std::ptrdiff_t>(oldest));
    r.held.emplace_back(p, size);  // within the capacity reserved: no allocation
    r.bytes += size;
  }
  for (size_t i = 0; i < ndropped; ++i) Delete(dropped[i].first, dropped[i].second);
  return true;
}

void* AllocateLargeBuffer(size_t size) {
  if (const size_t slot = SlabSlotBytes(size)) return AllocateSlot(slot);
  if (void* recycled = TakeRecycledBuffer(size)) return recycled;
  return NewPrefaulted(size);
}

void FreeLargeBuffer(void* p, size_t size) noexcept {
  if (const size_t slot = SlabSlotBytes(size)) {
    if (FreeSlot(p, slot)) return;
    Delete(p, slot);  // AllocateSlot's fallback
    return;
  }
  if (!RecycleBuffer(p, size)) Delete(p, size);
}
#endif  // B2NDFS_ADDRESS_SANITIZER

}  // namespace b2ndfs::cache
