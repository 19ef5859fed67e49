// remote/remote_stats (private to src/remote): the "remote" object of
// .b2ndfs/stats (README, "Runtime statistics"): a remote source's requests, failures
// by kind, attempt latency and disk cache, rendered as JSON.
// Thread-safety: a function of its arguments only.
#pragma once

#include <string>

#include "b2ndfs/remote/disk_cache.h"
#include "b2ndfs/remote/http_client.h"

namespace b2ndfs::remote {

// `  "remote": {...},\n` for the source named `root` (no credentials), from
// its client's counters and its disk cache's (null: none, shown disabled).
std::string RemoteStatsJson(const std::string& root, const HttpStats& s,
                            const DiskCache* disk_cache);

}  // namespace b2ndfs::remote
