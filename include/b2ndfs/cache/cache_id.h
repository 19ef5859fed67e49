// cache/cache_id: the one allocator of block cache ids, and keys named by
// what a value was made from.
//
// Every entry of the block cache (block_cache.h) is keyed by a container id.
// Two sorts exist, in disjoint ranges:
// - NewCacheId(): a fresh id per opened container generation (vfs
//   generations, carrier operands, a CTable's valid/ files), counted up
//   from 1; an entry with it lives until EraseContainer(id) or eviction.
// - NamedKey(): an id and key derived from a text that names the value's
//   origin and version (a store's path and signature, a remote object's URL
//   and ETag), so that every reader of the same version finds the same
//   entry and a changed source (another signature, another text) never
//   finds an old one. It is a 128-bit hash (the id with bit 63 set, and the
//   `block` field), so two texts share a key with probability ~2^-127; users
//   that hold a typed value still check the text it was made for.
// Thread-safety: both may be called from any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "b2ndfs/cache/block_cache.h"

namespace b2ndfs::cache {

// An id no other caller of NewCacheId() in this process got; never 0, and
// below 2^63 (the named ids' range).
uint64_t NewCacheId();

// The key of entry `index` (a chunk number, or 0) of the value named
// `identity`, of `kind`.
Key NamedKey(EntryKind kind, std::string_view identity, int64_t index = 0);

}  // namespace b2ndfs::cache
