// Unit tests of the block cache's lookup table (src/cache/key_index.h):
// random inserts, finds and erases against std::unordered_map, with hashes
// that collide heavily so that probe runs wrap around the table and deletion
// shifts entries back across the wrap.
#include "key_index.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

namespace b2ndfs::cache {
namespace {

// The handle is the key itself here.
struct Identity {
  uint64_t operator()(uint64_t handle) const { return handle; }
};
using Index = KeyIndex<uint64_t, uint64_t, Identity>;

uint64_t Mixed(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return key;
}

// Runs `steps` random operations on keys below `key_range`, checking every
// answer against a reference map; `hash` may collide as much as it likes.
template <typename Hash>
void CheckAgainstReference(Hash hash, uint64_t key_range, int steps, uint32_t seed) {
  Index index;
  std::unordered_map<uint64_t, bool> reference;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint64_t> key_of(0, key_range - 1);
  for (int step = 0; step < steps; ++step) {
    const uint64_t key = key_of(rng);
    const bool present = reference.count(key) != 0;
    switch (rng() % 3) {
      case 0:
        if (!present) {
          index.Insert(hash(key), key);
          reference[key] = true;
        }
        break;
      case 1:
        REQUIRE(index.Erase(key, hash(key)) == present);
        reference.erase(key);
        break;
      default: {
        const uint64_t* found = index.Find(key, hash(key));
        REQUIRE((found != nullptr) == present);
        if (found != nullptr) REQUIRE(*found == key);
      }
    }
    REQUIRE(index.size() == reference.size());
    REQUIRE(index.size() * 8 <= index.capacity() * 5);
  }
  // Every key still answers as the reference says.
  for (uint64_t key = 0; key < key_range; ++key) {
    const uint64_t* found = index.Find(key, hash(key));
    REQUIRE((found != nullptr) == (reference.count(key) != 0));
  }
}

TEST_CASE("KeyIndex: empty index finds and erases nothing", "[key_index]") {
  Index index;
  CHECK(index.Find(7, Mixed(7)) == nullptr);
  CHECK_FALSE(index.Erase(7, Mixed(7)));
  CHECK(index.size() == 0);
}

TEST_CASE("KeyIndex: well mixed hashes, against a reference map", "[key_index]") {
  CheckAgainstReference(Mixed, 5000, 60000, 1);
}

TEST_CASE("KeyIndex: a few hash values for many keys (long runs, wrap-around)", "[key_index]") {
  // Every key hashes to one of the 3 last slots of the table, so runs
  // cross its end; tags match often, so keys are compared.
  CheckAgainstReference([](uint64_t key) { return uint64_t{0x7fffffff} - key % 3; }, 300, 20000, 2);
}

TEST_CASE("KeyIndex: hashes equal in their low 31 bits only", "[key_index]") {
  // The tag keeps 31 bits: keys whose hashes differ above them share tags.
  CheckAgainstReference([](uint64_t key) { return (key << 40) | 0x1234U; }, 200, 20000, 3);
}

TEST_CASE("KeyIndex: grows, and clear empties it", "[key_index]") {
  Index index;
  for (uint64_t key = 0; key < 10000; ++key) index.Insert(Mixed(key), key);
  CHECK(index.size() == 10000);
  CHECK(index.capacity() >= 16384);
  for (uint64_t key = 0; key < 10000; ++key) REQUIRE(index.Find(key, Mixed(key)) != nullptr);
  for (uint64_t key = 0; key < 10000; key += 2) REQUIRE(index.Erase(key, Mixed(key)));
  for (uint64_t key = 0; key < 10000; ++key) {
    REQUIRE((index.Find(key, Mixed(key)) != nullptr) == (key % 2 == 1));
  }
  index.clear();
  CHECK(index.size() == 0);
  CHECK(index.Find(1, Mixed(1)) == nullptr);
  index.Insert(Mixed(1), 1);
  CHECK(index.Find(1, Mixed(1)) != nullptr);
}

}  // namespace
}  // namespace b2ndfs::cache
