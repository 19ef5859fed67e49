#pragma once
// The block cache's lookup table: an open-addressing hash index from a key
// to a handle of the entry that holds it (private to src/cache).
//
// Why not std::unordered_map: a warm read looks up every block it touches,
// and the map's lookup is three dependent cache misses (bucket, the node
// before the bucket's first, the node) before the entry itself; on a 16 KiB
// block geometry the lookups were a quarter of a warm slice's daemon time
// (perf). Here a slot is 16 bytes, the handle and a 31-bit tag of the key's
// hash, so a lookup reads one slot line, then the entry (which the caller
// reads anyway); the key is read back from the entry only when the tags match.
// Linear probing, deletion by backward shift (no tombstones), at most 5/8 full.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace b2ndfs::cache {

// splitmix64's finalizer: every input bit flips about half the output bits,
// so neighbouring blocks of one chunk land in unrelated shards and buckets.
constexpr uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// KeyOf(handle) returns the key of the entry `handle` refers to. `hash` is
// a well mixed 64-bit hash of the key; the index uses its low 31 bits.
template <typename Key, typename Handle, typename KeyOf>
class KeyIndex {
 public:
  // The handle stored for `key`, or nullptr.
  const Handle* Find(const Key& key, uint64_t hash) const {
    const size_t i = SlotOf(key, hash);
    return i == kAbsent ? nullptr : &slots_[i].handle;
  }

  // Adds `handle` for a key not in the index. May throw std::bad_alloc
  // (growing); the index is unchanged then.
  void Insert(uint64_t hash, Handle handle) {
    if ((size_ + 1) * 8 > slots_.size() * 5) Grow();
    Place(Slot{TagOf(hash), std::move(handle)});
    ++size_;
  }

  // Removes `key`; false when it was not there.
  bool Erase(const Key& key, uint64_t hash) {
    size_t hole = SlotOf(key, hash);
    if (hole == kAbsent) return false;
    const size_t mask = slots_.size() - 1;
    // Backward shift: each later slot of the run moves into the hole when
    // its home is at or before the hole, so no probe sequence is broken.
    for (size_t next = (hole + 1) & mask; slots_[next].tag != 0; next = (next + 1) & mask) {
      const size_t displacement = (next - (slots_[next].tag & mask)) & mask;
      if (displacement >= ((next - hole) & mask)) {
        slots_[hole] = std::move(slots_[next]);
        hole = next;
      }
    }
    slots_[hole] = Slot{};
    --size_;
    return true;
  }

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }

  void clear() {
    std::vector<Slot>().swap(slots_);
    size_ = 0;
    PublishHint();
  }

  // Starts loading the slot line where `hash`'s key would be, without the
  // owner's lock: a caller about to look up many keys in a row overlaps
  // their misses. The table may be regrown meanwhile; the hint then names
  // stale memory, which a prefetch may name harmlessly (it never faults).
  void Prefetch(uint64_t hash) const {
    const Slot* base = hint_base_.load(std::memory_order_relaxed);
    if (base == nullptr) return;
    const size_t mask = hint_mask_.load(std::memory_order_relaxed);
    __builtin_prefetch(base + (TagOf(hash) & mask));
  }

 private:
  struct Slot {
    uint32_t tag = 0;  // 0: empty; else the hash's low 31 bits with bit 31 set
    Handle handle{};
  };

  static constexpr size_t kAbsent = ~size_t{0};

  static uint32_t TagOf(uint64_t hash) {
    return static_cast<uint32_t>(hash & 0x7fffffffU) | 0x80000000U;
  }

  // The slot holding `key`, or kAbsent.
  size_t SlotOf(const Key& key, uint64_t hash) const {
    if (size_ == 0) return kAbsent;
    const uint32_t tag = TagOf(hash);
    const size_t mask = slots_.size() - 1;
    for (size_t i = tag & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.tag == 0) return kAbsent;
      if (slot.tag == tag && KeyOf{}(slot.handle) == key) return i;
    }
  }

  // The tag holds the hash's low 31 bits: enough for any home up to 2^31 slots.
  void Place(Slot slot) {
    const size_t mask = slots_.size() - 1;
    size_t i = slot.tag & mask;
    while (slots_[i].tag != 0) i = (i + 1) & mask;
    slots_[i] = std::move(slot);
  }

  void Grow() {
    std::vector<Slot> old(slots_.empty() ? 16 : slots_.size() * 2);
    old.swap(slots_);  // a throw above leaves the index as it was
    for (Slot& slot : old) {
      if (slot.tag != 0) Place(std::move(slot));
    }
    PublishHint();
  }

  void PublishHint() {
    hint_base_.store(slots_.empty() ? nullptr : slots_.data(), std::memory_order_relaxed);
    hint_mask_.store(slots_.empty() ? 0 : slots_.size() - 1, std::memory_order_relaxed);
  }

  std::vector<Slot> slots_;  // a power of two in size, or empty
  size_t size_ = 0;
  // slots_'s address and mask for Prefetch, which reads them unlocked.
  std::atomic<const Slot*> hint_base_{nullptr};
  std::atomic<size_t> hint_mask_{0};
};

}  // namespace b2ndfs::cache
