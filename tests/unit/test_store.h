#pragma once
// What a container reads through in unit tests, set up as the mount sets it
// up, and a local container opened through it.
#include <catch2/catch.hpp>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/source/descriptor_cache.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/store/worker_pool.h"

namespace b2ndfs::testing {

// A block cache of `cache_bytes` (in `shards`), decompressors, `threads`
// workers (none: reads run on the caller) and a descriptor cache.
struct TestStore {
  TestStore(size_t cache_bytes, int shards, int threads)
      : cache(cache_bytes, shards),
        decompressors(4),
        workers(threads > 0 ? std::make_unique<store::WorkerPool>(threads) : nullptr),
        descriptors(16) {
    ctx.cache = &cache;
    ctx.decompressors = &decompressors;
    ctx.workers = workers.get();
  }
  cache::BlockCache cache;
  codec::DecompressorPool decompressors;
  std::unique_ptr<store::WorkerPool> workers;
  source::DescriptorCache descriptors;
  store::StoreContext ctx;

  // The local container at `path`, opened as the mount opens it.
  std::shared_ptr<const store::Container> OpenLocal(const std::string& path) {
    auto opened = source::OpenLocal(path, &descriptors);
    REQUIRE(opened.ok());
    auto container = store::Container::Open(std::move(opened).value(), &ctx, 1, nullptr);
    REQUIRE(container->ok());
    return container;
  }
};

}  // namespace b2ndfs::testing
