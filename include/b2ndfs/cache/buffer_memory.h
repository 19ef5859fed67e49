// cache/buffer_memory: where the large buffers of block and chunk bytes live.
//
// A cold read fills memory the daemon never touched, and on Linux every new
// 4 KiB page costs a fault (in a virtual machine an exit to the hypervisor,
// and a page-table update it must shadow). c-blosc2 in-process decodes into
// one scratch block it reuses, so that cost was most of what separated a
// cold slice through the mount from c-blosc2's own time. So:
// - Buffers of kSlabSlotMinBytes to kSlabSlotMaxBytes are slots of 2 MiB
//   slabs: 2 MiB-aligned anonymous mappings, marked for transparent huge
//   pages and made present in one system call each, carved into slots of one
//   size class (multiples of 4 KiB up to 32 KiB, then eight classes per
//   doubling: at most 1/8 of a slot unused). A freed slot goes back to its
//   slab for the next buffer of its class, newest first; a slab whose last
//   slot is freed joins the kEmptySlabs kept for the next slab of any class
//   (the oldest of them is unmapped). And the slabs' free bytes (empty
//   slabs included) stay under kSlabSlackBytes: a buffer that would need a
//   new slab beyond that comes from operator new instead. Many size classes
//   in use at once (containers of many block shapes, compressed spans of
//   any length) would otherwise each hold a partly used 2 MiB slab.
// - Larger buffers come from operator new, prefaulted, and a few of them
//   freed lately (kRecycledBuffers, kRecycledBytes in all) are kept for an
//   allocation of the same size.
// - Under AddressSanitizer both are off (operator new and delete only), so
//   that a buffer used after its release stays visible.
// Thread-safety: every function may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace b2ndfs::cache {

inline constexpr size_t kSlabBytes = size_t{2} << 20;
inline constexpr size_t kSlabSlotMinBytes = size_t{8} << 10;
inline constexpr size_t kSlabSlotMaxBytes = kSlabBytes / 2;
inline constexpr size_t kEmptySlabs = 4;
inline constexpr size_t kSlabSlackBytes = kEmptySlabs * kSlabBytes;  // 8 MiB

// Bytes of SIZE or more, 4 KiB-aligned at least; throws std::bad_alloc.
// Only for SIZE >= kSlabSlotMinBytes; free with FreeLargeBuffer(p, SIZE).
void* AllocateLargeBuffer(size_t size);
void FreeLargeBuffer(void* p, size_t size) noexcept;

// Whether new slabs ask for transparent huge pages (madvise MADV_HUGEPAGE;
// on by default). Where the kernel's THP `defrag` setting is `madvise` (the
// default of Debian and Ubuntu), a fault in such memory may compact memory
// first: fewer faults and TLB misses, but a latency spike under memory
// pressure. Off, slabs are made of 4 KiB pages (still present at once).
void SetSlabHugePages(bool on) noexcept;

// Maps and makes present empty slabs until kEmptySlabs are kept: a new
// slab's 2 MiB must be zeroed by the kernel, and the first reads after a
// mount would otherwise pay that for every size class they touch. For a
// background thread at start; no-op under AddressSanitizer.
void FillEmptySlabs() noexcept;

// The slot a buffer of SIZE takes in a slab; 0 for sizes slabs do not hold.
size_t SlabSlotBytes(size_t size) noexcept;
// The size class of a slot: SlabSlotBytes' values map one to one onto
// 0 .. kSlabSizeClasses - 1 (8 .. 32 KiB in 4 KiB steps, then eight per
// doubling up to kSlabSlotMaxBytes).
inline constexpr size_t kSlabSizeClasses = 7 + 8 * 5;
size_t SlabSizeClass(size_t slot) noexcept;

struct BufferMemoryStats {
  uint64_t slabs = 0;            // mapped now (kSlabBytes each)
  uint64_t slabs_empty = 0;      // of which kept empty (at most kEmptySlabs)
  uint64_t slab_slots_used = 0;  // buffers living in them
  uint64_t slab_bytes_used = 0;  // their slot bytes
  uint64_t slabs_unmapped = 0;   // since start
  uint64_t slab_fallbacks = 0;   // slab-sized buffers from operator new (slack bound, no mapping)
};
BufferMemoryStats GetBufferMemoryStats() noexcept;

// Makes the pages of a new buffer of SIZE bytes at P present and writable
// in one system call, where the kernel supports it (Linux 5.14), so that
// filling it does not fault once per page.
void PrefaultForWrite(void* p, size_t size) noexcept;

// The recycled larger buffers (see above); exposed for tests.
void* TakeRecycledBuffer(size_t size) noexcept;     // nullptr: none of that size
bool RecycleBuffer(void* p, size_t size) noexcept;  // false: the caller frees
inline constexpr size_t kRecycledBuffers = 32;
inline constexpr size_t kRecycledBytes = size_t{8} << 20;  // all of them

}  // namespace b2ndfs::cache
