// app/options: the b2ndfs command line (SPEC.md "Command line").
// Parses before anything is mounted, so every error is reported and exits
// non-zero before the process daemonizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::app {

struct CommandLine {
  std::string source;
  std::string mountpoint;
  size_t cache_size = 0;   // 0: default
  int threads = 0;         // 0: default
  int64_t readahead = -1;  // -1: default
  bool foreground = false;
  bool debug = false;
  bool single_threaded = false;
  bool show_help = false;
  bool show_version = false;
  bool allow_other = false;
  bool has_default_permissions = false;
  std::vector<std::string> fuse_options;  // passed on to libfuse as -o
};

// Parses a size with an optional K, M, G or T suffix (powers of 1024).
std::optional<uint64_t> ParseSize(const std::string& text);
Result<CommandLine> ParseCommandLine(int argc, char** argv);
std::string Usage(const std::string& program);

}  // namespace b2ndfs::app
