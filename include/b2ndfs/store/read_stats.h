// store/read_stats: the mount-wide read statistics (the .b2ndfs/stats
// document, README.md "Statistics"), bumped by every read of every
// container.
// Counters are sharded per thread (stat_counter.h) and read with load().
// Thread-safety: every counter from any thread.
#pragma once

#include <cstdint>

#include "b2ndfs/store/stat_counter.h"

namespace b2ndfs::store {

// Mount-wide read statistics, bumped by every
// read: counters sharded per thread (stat_counter.h), read with load().
struct ReadStats {
  StatCounter<uint64_t> reads;
  StatCounter<uint64_t> bytes_served;
  StatCounter<uint64_t> read_errors;
  StatCounter<uint64_t> blocks_decompressed;
  StatCounter<uint64_t> bytes_decompressed;
  // Chunks decompressed whole (delta, dictionaries): once per chunk, shared
  // by every reader that waits for one of its blocks.
  StatCounter<uint64_t> whole_chunk_decodes;
  // Chunks whose compressed bytes were read whole (for a whole-chunk
  // decode); blocks decoded alone are fetched by their own spans, counted
  // only in bytes_fetched.
  StatCounter<uint64_t> whole_chunks_fetched;
  StatCounter<uint64_t> bytes_fetched;
  // Block bytes a plan took from another plan's read of them in flight
  // (store/span_flights.h) instead of fetching them again.
  StatCounter<uint64_t> bytes_shared;
  // Every read a container made of its source (metadata, chunk heads, block
  // bytes): for remote sources, requests and bytes transferred.
  StatCounter<uint64_t> source_reads;
  StatCounter<uint64_t> source_bytes_read;
  // Blocks whose bytes came in a read shared with other blocks
  // (store/read_plan.h), and such reads.
  StatCounter<uint64_t> coalesced_reads;
  StatCounter<uint64_t> coalesced_blocks;
  StatCounter<uint64_t> prefetch_requests;
  // Blocks read-ahead tasks were queued for, and those a task then loaded
  // into the cache (the rest were cached or loading by then, or failed):
  // loaded ones are also in blocks_decompressed.
  StatCounter<uint64_t> readahead_blocks_queued;
  StatCounter<uint64_t> readahead_blocks_loaded;
  // Blocks of computed pyramid levels made (store/pyramid.h); cache hits
  // are not counted.
  StatCounter<uint64_t> blocks_computed;
  // Blocks of computed levels read from where an earlier mount kept them
  // (source/derived_store.h: disk_cache=) instead of computed.
  StatCounter<uint64_t> blocks_computed_from_disk;
  // Blocks held by readers outside the cache's accounting right now: a cold
  // read's batch (PinBudget); a warm read holds one cached block at a time
  // by its cache handle and is not counted.
  StatCounter<int64_t> pinned_bytes;
  StatCounter<int64_t> metadata_bytes;  // held by open containers (charged to the cache)
  StatCounter<int64_t> containers_open;
  StatCounter<uint64_t> containers_opened;
};
ReadStats& GlobalReadStats();

}  // namespace b2ndfs::store
