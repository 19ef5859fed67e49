// store/store_context: the services every container of a mount shares (the
// block cache, the decompressors, the workers), owned by the mount and
// outliving every container opened with them.
// Thread-safety: the services are thread-safe; the struct is filled once,
// before the first container opens.
#pragma once

#include <cstddef>
#include <cstdint>

// The services are named here, not defined: this struct only points at them.
namespace b2ndfs::cache {
class BlockCache;
}
namespace b2ndfs::codec {
class DecompressorPool;
}

namespace b2ndfs::store {

class WorkerPool;
class PinBudget;

// Services shared by every container of a mount.
struct StoreContext {
  cache::BlockCache* cache = nullptr;
  codec::DecompressorPool* decompressors = nullptr;
  WorkerPool* workers = nullptr;  // optional: parallel decompression of misses
  // Optional, for remote sources: where read-ahead and chunk-head prefetches
  // wait for the network (sized by the client's connections), so that the
  // decoders above never wait a round trip; without it they run on
  // `workers`. Local sources never use it (their reads are syscalls).
  WorkerPool* io_workers = nullptr;
  PinBudget* pins = nullptr;  // optional: mount-wide limit on pinned blocks
  // Bytes of blocks one read may pin at once before it copies them out.
  size_t max_pinned_bytes = 64u << 20;
  // A remote container of at most this many chunks has every chunk head
  // (the block offsets a read must have before it can ask for blocks)
  // fetched in the background when it opens, so that its first read waits
  // one round trip, not two; 0: each head with the first read of its chunk.
  int64_t remote_heads_max_chunks = 64;
};

}  // namespace b2ndfs::store
