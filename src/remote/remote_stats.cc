#include "remote_stats.h"

#include <cstdio>
#include <iterator>
#include <utility>

#include "b2ndfs/util/json.h"

namespace b2ndfs::remote {
std::string RemoteStatsJson(const std::string& root, const HttpStats& s,
                            const DiskCache* disk_cache) {
  auto kv = [](const std::string& indent, const char* key, uint64_t value, bool last = false) {
    return indent + "\"" + key + "\": " + std::to_string(value) + (last ? "\n" : ",\n");
  };
  const std::string in = "    ", in2 = "      ";
  std::string out = "  \"remote\": {\n";
  out += in + "\"source\": " + json::Quote(root) + ",\n";
  out += kv(in, "requests", s.requests);
  out += kv(in, "retries", s.retries);
  out += kv(in, "peak_requests_in_flight", s.peak_in_flight);
  out += kv(in, "errors", s.errors);
  out += in + "\"errors_by_kind\": {\n";
  for (int k = 0; k < static_cast<int>(ErrorKind::kCount); ++k) {
    out += kv(in2, ErrorKindName(static_cast<ErrorKind>(k)), s.errors_by_kind[k],
              k + 1 == static_cast<int>(ErrorKind::kCount));
  }
  out += in + "},\n";
  out += kv(in, "bytes_fetched", s.bytes_fetched);
  out += in + "\"latency_us\": {\n";
  out += kv(in2, "count", s.latency.count);
  out += kv(in2, "p50", s.latency.p50_us);
  out += kv(in2, "p90", s.latency.p90_us);
  out += kv(in2, "p99", s.latency.p99_us);
  out += kv(in2, "max", s.latency.max_us, true);
  out += in + "},\n";
  out += in + "\"disk_cache\": {\n";
  const DiskCacheStats d = disk_cache ? disk_cache->stats() : DiskCacheStats{};
  const std::pair<const char*, uint64_t> counters[] = {
      {"enabled", disk_cache ? 1 : 0},
      {"capacity_bytes", d.capacity_bytes},
      {"bytes_on_disk", d.bytes_on_disk},
      {"entries", d.entries},
      {"hits", d.hits},
      {"misses", d.misses},
      {"bytes_hit", d.bytes_hit},
      {"bytes_missed", d.bytes_missed},
      {"bytes_stored", d.bytes_stored},
      {"evictions", d.evictions},
      {"invalidations", d.invalidations},
      {"computed_hits", d.computed_hits},
      {"computed_stored", d.computed_stored},
      {"corrupt", d.corrupt},
      {"write_errors", d.write_errors},
  };
  for (size_t i = 0; i < std::size(counters); ++i) {
    out += kv(in2, counters[i].first, counters[i].second, i + 1 == std::size(counters));
  }
  out += in + "}\n";
  out += "  },\n";
  return out;
}

}  // namespace b2ndfs::remote
