// app/options: the b2ndfs command line (README.md, "Command line").
// Parses before anything is mounted, so every error is reported and exits
// non-zero before the process daemonizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/util/log.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::app {

struct CommandLine {
  std::string source;
  std::string mountpoint;
  size_t cache_size = 0;              // 0: default
  int threads = 0;                    // 0: default
  int64_t readahead = -1;             // -1: default
  int max_threads = 0;                // FUSE request threads; 0: DefaultMaxThreads()
  int max_open = 0;                   // containers kept open at once; 0: the vfs default
  bool no_hugepages = false;          // block memory in 4 KiB pages only
  std::optional<LogLevel> log_level;  // unset: info, or debug with -d
  std::string log_file;               // log_file=PATH: messages appended there; empty: none
  bool log_access_all = false;        // log_access=all: .b2ndfs/log readable as stats is
  bool ino32 = false;                 // mirrored names numbered below 2^32
  // views=LIST: the kinds of virtual files in container directories
  // (views::Registry::Kinds() names); empty: every kind.
  std::vector<std::string> views;
  // Remote sources (http://, https://, s3://, az://).
  double timeout = 0;   // seconds a remote request may take, retries included; 0: default
  int retries = -1;     // further attempts after a transient failure; -1: default
  int connections = 0;  // to a remote server (requests in flight); 0: default
  int64_t prefetch_heads =
      -1;  // chunk heads fetched with a first read, up to this many chunks; -1: default
  double revalidate = -1;        // seconds a listing or HEAD answer is reused; -1: default
  std::string endpoint;          // s3: the service URL (path-style addressing)
  std::string region;            // s3: the SigV4 region
  std::string profile;           // s3: the ~/.aws/credentials profile
  std::string credentials;       // s3: AWS credentials file; http(s): a .netrc file
  std::string ca_file;           // https: PEM certificates of the trusted authorities
  bool no_sign = false;          // s3: anonymous requests
  std::string disk_cache;        // a directory for fetched ranges; empty: none
  uint64_t disk_cache_size = 0;  // its bound in bytes; 0: default
  bool foreground = false;
  bool debug = false;
  bool single_threaded = false;
  bool show_help = false;
  bool show_version = false;
  bool allow_other = false;
  bool has_default_permissions = false;
  std::vector<std::string> fuse_options;  // passed on to libfuse as -o
};

// libfuse's own limit on request threads is 10; readers that wait for
// decompression or for the pin budget hold a thread each, so more readers
// than that would queue in the kernel while the workers idle. Twice the
// decompression workers, at least libfuse's 10, at most 64 (each thread keeps
// a receive buffer of about 1 MiB).
int DefaultMaxThreads(int decompression_threads);

// Defaults of the remote options.
constexpr double kDefaultTimeout = 30.0;
constexpr int kDefaultRetries = 3;

// Blanks the password of a user:password@ URL among the arguments, in
// place: the process list shows the arguments as they are in memory (the
// daemon has its own copy by then). credentials=FILE keeps it out entirely.
void HidePasswordsInArguments(int argc, char** argv);

// True for SOURCE URLs with a scheme the remote options apply to (http://,
// https://, s3://, az://).
bool IsRemoteSource(const std::string& source);

// Parses a size with an optional K, M, G or T suffix (powers of 1024).
std::optional<uint64_t> ParseSize(const std::string& text);
Result<CommandLine> ParseCommandLine(int argc, char** argv);
// The --help text (usage.cc).
std::string Usage(const std::string& program);

}  // namespace b2ndfs::app
