#include "b2ndfs/cache/cache_id.h"

#include <atomic>

#include "key_index.h"

namespace b2ndfs::cache {
namespace {

std::atomic<uint64_t> g_next_cache_id{1};

// FNV-1a over the text, then splitmix64's finalizer: two seeds give two
// independent 64-bit halves of the key.
uint64_t HashText(std::string_view text, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return Mix(h);
}

}  // namespace

uint64_t NewCacheId() { return g_next_cache_id.fetch_add(1, std::memory_order_relaxed); }

Key NamedKey(EntryKind kind, std::string_view identity, int64_t index) {
  Key key;
  key.container_id = HashText(identity, 0x9e3779b97f4a7c15ULL) | (uint64_t{1} << 63);
  key.block = static_cast<int64_t>(HashText(identity, 0xc2b2ae3d27d4eb4fULL));
  key.chunk = index;
  key.kind = kind;
  return key;
}

}  // namespace b2ndfs::cache
