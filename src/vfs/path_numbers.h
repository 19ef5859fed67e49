// Private to vfs: the inode numbers of the mirrored tree (directories, plain
// files, container directories), README.md "Inode numbers".
//
// Each (path, kind) the mount lists or looks up gets the next number of its
// range the first time, and keeps it for the mount's life: across FORGET and
// a new lookup, and in every listing. Two paths never share a number, so
// tools that tell files apart by (st_dev, st_ino) (find's loop detection,
// rsync -H, backup caches) see every path once.
// What is kept per name: a 128-bit keyed fingerprint of its path and kind
// (SipHash-2-4, a key drawn per mount, so no one can make two names collide
// on purpose; by chance, two of 10^9 names share one with a probability
// below 10^-20) in an append-only array (16 bytes), and a 4-byte slot of an
// open-addressing index kept at most 3/4 full (5 to 11 bytes a name): about
// 21 to 27 bytes per name, never freed while mounted (bytes()).
// Ranges (disjoint from the fixed numbers and the counted ones, see
// inode_table.h):
// - 64-bit (the default): 2^32 + n for the n-th name;
// - ino32: 2^31 + n while n < 2^31 (numbers that 32-bit stat and readdir
//   take); the names past 2^31 get 2^32 + n (still unique, but 32-bit
//   readers get EOVERFLOW for them).
// At most kMaxNames names are remembered; Number() then answers 0 and the
// caller numbers the name only while the kernel holds it.
// Thread-safety: none; InodeTable's mutex guards it. KeyOf() is const and
// may run outside that lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "b2ndfs/vfs/file_handle.h"

namespace b2ndfs::vfs {

class PathNumbers {
 public:
  // No member initializers: a chunk of keys is allocated without being
  // written (its pages cost nothing until names fill them).
  struct Key {
    uint64_t a;  // also the index's hash
    uint64_t b;
    bool operator==(const Key&) const = default;
  };
  static constexpr Ino kNarrowBase = Ino{1} << 31;
  static constexpr Ino kWideBase = Ino{1} << 32;
  static constexpr uint64_t kMaxNames = (uint64_t{1} << 32) - 2;

  // ino32: numbers below 2^32 for the first `narrow_names` names (2^31;
  // smaller only in tests). `max_names`: kMaxNames, smaller in tests.
  explicit PathNumbers(bool ino32, uint64_t narrow_names = kNarrowBase,
                       uint64_t max_names = kMaxNames);
  PathNumbers(const PathNumbers&) = delete;
  PathNumbers& operator=(const PathNumbers&) = delete;

  Key KeyOf(std::string_view path, bool directory) const;
  // The name's number, given now if it has none; 0 once kMaxNames are kept.
  Ino Number(const Key& key);
  // The name's number if it has one, else 0.
  Ino Find(const Key& key) const;
  // Whether `ino` is in the ranges of these numbers.
  bool Contains(Ino ino) const {
    return (ino >= kNarrowBase && ino < kNarrowBase + narrow_names_) ||
           (ino >= kWideBase && ino < kWideBase + max_names_);
  }
  size_t size() const { return size_; }
  // Memory held for the names (fingerprints and index).
  size_t bytes() const;

 private:
  static constexpr size_t kChunk = size_t{1} << 16;  // fingerprints per chunk
  const Key& KeyAt(uint32_t index) const { return chunks_[index / kChunk][index % kChunk]; }
  // The slot of `key`: its own (holding its index + 1) or the empty one
  // where it would go.
  size_t SlotOf(const Key& key) const;
  void Grow();

  uint64_t narrow_names_;
  uint64_t max_names_;
  uint64_t sip_key_[2];
  std::vector<std::unique_ptr<Key[]>> chunks_;  // fingerprints by number, append-only
  std::vector<uint32_t> slots_;                 // index + 1, 0: empty; a power of two
  size_t size_ = 0;
};

// SipHash-2-4 with a 128-bit result (Aumasson and Bernstein's reference).
PathNumbers::Key SipHash128(const uint64_t key[2], std::string_view data);

}  // namespace b2ndfs::vfs
