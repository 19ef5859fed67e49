// .b2ndfs/stats: the runtime statistics document; .b2ndfs/log: the recent
// messages util/log keeps.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <utility>

#include "b2ndfs/cache/buffer_memory.h"
#include "b2ndfs/source/tree.h"
#include "b2ndfs/store/pin_budget.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"
#include "generation.h"
#include "inode_table.h"
#include "read_ahead.h"
#include "resolver.h"

namespace b2ndfs::vfs {

std::string Filesystem::ControlFileText(Ino ino) const {
  return ino == kLogFileIno ? RecentLogText() : StatsJson();
}

std::string Filesystem::StatsJson() const {
  const cache::CacheStats c =
      store_->cache != nullptr ? store_->cache->stats() : cache::CacheStats{};
  const store::ReadStats& r = store::GlobalReadStats();
  const LatencyHistogram::Summary lat = read_latency_.Summarize();
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const double uptime =
      static_cast<double>(now.tv_sec * 1000000000LL + now.tv_nsec - start_time_ns_) / 1e9;
  const size_t inodes = inodes_->size();
  const uint64_t lookups = c.hits + c.misses;
  char hit_ratio[32];
  std::snprintf(hit_ratio, sizeof hit_ratio, "%.4f",
                lookups ? static_cast<double>(c.hits) / static_cast<double>(lookups) : 0.0);
  char mean[32];
  std::snprintf(mean, sizeof mean, "%.1f", lat.mean_us);
  char up[32];
  std::snprintf(up, sizeof up, "%.1f", uptime);
  auto kv = [](const char* key, auto value, bool last = false) {
    return std::string("    \"") + key + "\": " + std::to_string(value) + (last ? "\n" : ",\n");
  };
  // A member object of counters only (not the document's last member).
  auto section = [&kv](const char* name,
                       std::initializer_list<std::pair<const char*, uint64_t>> counters) {
    std::string text = std::string("  \"") + name + "\": {\n";
    size_t left = counters.size();
    for (const auto& [key, value] : counters) text += kv(key, value, --left == 0);
    return text + "  },\n";
  };
  std::string out = "{\n";
  out += "  \"uptime_s\": " + std::string(up) + ",\n";
  // Records kept for the kernel's references (names inside containers need
  // none), and the container versions alive (current, or held by open files).
  out += "  \"inodes\": " + std::to_string(inodes) + ",\n";
  out += "  \"generations\": " + std::to_string(inodes_->generations().size()) + ",\n";
  // Mirrored names numbered for the mount's life, and what they hold.
  out += section("inode_numbers",
                 {{"paths", inodes_->path_numbers()}, {"bytes", inodes_->path_number_bytes()}});
  out += "  \"containers\": {\n";
  out += kv("open", r.containers_open.load());
  out += kv("kept_open", open_containers_->size());
  out += kv("max_open", options_.max_open > 0 ? options_.max_open : kDefaultMaxOpen);
  out += kv("opened", r.containers_opened.load());
  out += kv("metadata_bytes", r.metadata_bytes.load());
  out += kv("generations_replaced", generations_replaced_.load());
  out += kv("stale_replies", resolver_->stale_replies());
  // Probes of the source that failed (a server down) and were forgotten.
  out += kv("transient_errors", entry_context_->transient_errors.load());
  // Answers that went on with what was known instead of waiting for a
  // remote source past a grace period (a server down or slow).
  out += kv("served_known", entry_context_->served_known.load(), true);
  out += "  },\n";
  out += tree_->StatsJson();
  out += "  \"cache\": {\n";
  out += kv("capacity_bytes", c.capacity_bytes);
  out += kv("bytes_cached", c.bytes_cached);
  out += kv("entries", c.entries);
  out += kv("hits", c.hits);
  out += kv("misses", c.misses);
  out += "    \"hit_ratio\": " + std::string(hit_ratio) + ",\n";
  out += kv("shared_waits", c.shared_waits);
  out += kv("evictions", c.evictions);
  out += kv("inserts", c.inserts);
  out += kv("load_errors", c.load_errors);
  out += kv("bytes_loaded", c.bytes_loaded);
  out += kv("external_bytes", c.external_bytes);
  // One figure for what the daemon holds, and the bound it stays within.
  const size_t pin_limit = store_->pins != nullptr ? store_->pins->limit() : 0;
  const size_t pinned = static_cast<size_t>(std::max<int64_t>(0, r.pinned_bytes.load()));
  out += kv("memory_held_bytes", c.bytes_cached + c.external_bytes + pinned);
  out += kv("pin_limit_bytes", pin_limit);
  out += kv("memory_bound_bytes", c.capacity_bytes + pin_limit + cache::kDaemonOverheadBytes, true);
  out += "  },\n";
  // Where block memory lives (process-wide): what RSS holds beyond the cache.
  const cache::BufferMemoryStats m = cache::GetBufferMemoryStats();
  out += section("buffer_memory", {{"slab_bytes", m.slabs * cache::kSlabBytes},
                                   {"slab_bytes_empty", m.slabs_empty * cache::kSlabBytes},
                                   {"slab_bytes_used", m.slab_bytes_used},
                                   {"slab_buffers", m.slab_slots_used},
                                   {"slabs_unmapped", m.slabs_unmapped},
                                   {"slab_fallbacks", m.slab_fallbacks}});
  out += "  \"reads\": {\n";
  out += kv("requests", r.reads.load());
  out += kv("bytes_served", r.bytes_served.load());
  out += kv("errors", r.read_errors.load());
  out += kv("blocks_decompressed", r.blocks_decompressed.load());
  out += kv("bytes_decompressed", r.bytes_decompressed.load());
  out += kv("whole_chunk_decodes", r.whole_chunk_decodes.load());
  out += kv("whole_chunks_fetched", r.whole_chunks_fetched.load());
  out += kv("compressed_bytes_fetched", r.bytes_fetched.load());
  out += kv("compressed_bytes_shared", r.bytes_shared.load());
  out += kv("source_reads", r.source_reads.load());
  out += kv("source_bytes_read", r.source_bytes_read.load());
  out += kv("coalesced_reads", r.coalesced_reads.load());
  out += kv("coalesced_blocks", r.coalesced_blocks.load());
  out += kv("readahead_requests", r.prefetch_requests.load());
  out += kv("readahead_blocks_queued", r.readahead_blocks_queued.load());
  out += kv("readahead_blocks", r.readahead_blocks_loaded.load());
  out += kv("blocks_computed", r.blocks_computed.load());
  out += kv("blocks_computed_from_disk", r.blocks_computed_from_disk.load());
  out += kv("pushed_files", read_ahead_->pushed_files());
  out += kv("pushed_bytes", read_ahead_->pushed_bytes());
  out += kv("pinned_bytes", r.pinned_bytes.load(), true);
  out += "  },\n";
  out += "  \"read_latency_us\": {\n";
  out += kv("count", lat.count);
  out += "    \"mean\": " + std::string(mean) + ",\n";
  out += kv("p50", lat.p50_us);
  out += kv("p90", lat.p90_us);
  out += kv("p99", lat.p99_us);
  out += kv("max", lat.max_us, true);
  out += "  }\n";
  out += "}\n";
  return out;
}

}  // namespace b2ndfs::vfs
