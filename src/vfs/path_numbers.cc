#include "path_numbers.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace b2ndfs::vfs {
namespace {

constexpr uint64_t Rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct SipState {
  uint64_t v0, v1, v2, v3;
  void Round() {
    v0 += v1;
    v1 = Rotl(v1, 13);
    v1 ^= v0;
    v0 = Rotl(v0, 32);
    v2 += v3;
    v3 = Rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = Rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = Rotl(v1, 17);
    v1 ^= v2;
    v2 = Rotl(v2, 32);
  }
  void Absorb(uint64_t m) {
    v3 ^= m;
    Round();
    Round();
    v0 ^= m;
  }
  uint64_t Finish(uint64_t mark) {
    v2 ^= mark;
    for (int i = 0; i < 4; ++i) Round();
    return v0 ^ v1 ^ v2 ^ v3;
  }
};

uint64_t LoadLe(const unsigned char* p, size_t n) {
  uint64_t m = 0;
  for (size_t i = 0; i < n; ++i) m |= static_cast<uint64_t>(p[i]) << (8 * i);
  return m;
}

// A key no one outside the process knows. getrandom() without blocking:
// early in boot the pool may not be ready, and numbers need no secrecy
// beyond not being chosen by whoever names the files.
void DrawKey(uint64_t key[2]) {
  if (::getrandom(key, 2 * sizeof(uint64_t), GRND_NONBLOCK) ==
      static_cast<ssize_t>(2 * sizeof(uint64_t))) {
    return;
  }
  struct timespec t[2];
  clock_gettime(CLOCK_REALTIME, &t[0]);
  clock_gettime(CLOCK_MONOTONIC, &t[1]);
  const uint64_t seed[2] = {static_cast<uint64_t>(::getpid()),
                            reinterpret_cast<uintptr_t>(&t) ^ 0x5851f42d4c957f2dULL};
  const PathNumbers::Key k =
      SipHash128(seed, std::string_view(reinterpret_cast<const char*>(t), sizeof t));
  key[0] = k.a;
  key[1] = k.b;
}

}  // namespace

PathNumbers::Key SipHash128(const uint64_t key[2], std::string_view data) {
  SipState s{0x736f6d6570736575ULL ^ key[0], 0x646f72616e646f6dULL ^ key[1] ^ 0xee,
             0x6c7967656e657261ULL ^ key[0], 0x7465646279746573ULL ^ key[1]};
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const size_t n = data.size();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) s.Absorb(LoadLe(p + i, 8));
  s.Absorb(LoadLe(p + i, n - i) | (static_cast<uint64_t>(n) << 56));
  PathNumbers::Key out{};
  out.a = s.Finish(0xee);
  s.v1 ^= 0xdd;
  for (int r = 0; r < 4; ++r) s.Round();
  out.b = s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
  return out;
}

PathNumbers::PathNumbers(bool ino32, uint64_t narrow_names, uint64_t max_names)
    : narrow_names_(ino32 ? narrow_names : 0), max_names_(std::min(max_names, kMaxNames)) {
  DrawKey(sip_key_);
  slots_.assign(1024, 0);
}

PathNumbers::Key PathNumbers::KeyOf(std::string_view path, bool directory) const {
  // The kind goes in first, so "a" as a file and as a directory differ (a
  // path that changed kind is another inode).
  std::string text;
  text.reserve(path.size() + 1);
  text += directory ? 'd' : 'f';
  text += path;
  return SipHash128(sip_key_, text);
}

size_t PathNumbers::SlotOf(const Key& key) const {
  const size_t mask = slots_.size() - 1;
  for (size_t slot = key.a & mask;; slot = (slot + 1) & mask) {
    const uint32_t held = slots_[slot];
    if (held == 0 || KeyAt(held - 1) == key) return slot;
  }
}

void PathNumbers::Grow() {
  std::vector<uint32_t> old(slots_.size() * 2, 0);
  old.swap(slots_);
  const size_t mask = slots_.size() - 1;
  for (const uint32_t held : old) {
    if (held == 0) continue;
    size_t slot = KeyAt(held - 1).a & mask;
    while (slots_[slot] != 0) slot = (slot + 1) & mask;
    slots_[slot] = held;
  }
}

Ino PathNumbers::Find(const Key& key) const {
  const uint32_t held = slots_[SlotOf(key)];
  if (held == 0) return 0;
  const uint64_t n = held - 1;
  return n < narrow_names_ ? kNarrowBase + n : kWideBase + n;
}

Ino PathNumbers::Number(const Key& key) {
  size_t slot = SlotOf(key);
  if (slots_[slot] == 0) {
    if (size_ >= max_names_) return 0;
    if (4 * (size_ + 1) > 3 * slots_.size()) {
      Grow();
      slot = SlotOf(key);
    }
    if (size_ % kChunk == 0) chunks_.push_back(std::make_unique_for_overwrite<Key[]>(kChunk));
    chunks_[size_ / kChunk][size_ % kChunk] = key;
    slots_[slot] = static_cast<uint32_t>(size_ + 1);
    ++size_;
  }
  return Find(key);
}

size_t PathNumbers::bytes() const {
  return chunks_.size() * kChunk * sizeof(Key) + slots_.size() * sizeof(uint32_t);
}

}  // namespace b2ndfs::vfs
