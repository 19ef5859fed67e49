// b2ndfs: the command-line entry point. Wires the core (cache, decompressor
// pool, workers) to the vfs and the FUSE session.
#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/cache/buffer_memory.h"
#include "b2ndfs/codec/builtin.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/fuse/session.h"
#include "b2ndfs/remote/http_client.h"
#include "b2ndfs/source/tree.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/store/pin_budget.h"
#include "b2ndfs/store/worker_pool.h"
#include "b2ndfs/stores/store_tree.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"
#include "b2ndfs/views/view.h"
#include "options.h"
#include "preflight.h"

namespace {

size_t DefaultCacheSize() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  size_t ram = pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * page_size : (1ull << 32);
  return std::clamp<size_t>(ram / 8, 64ull << 20, 4ull << 30);
}

std::string EscapeOption(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == ',' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

void ReopenLogFileOnSignal(int) { b2ndfs::ReopenLogFile(); }

// Signals, before libfuse installs its handlers (which it does only where a
// signal has its default action).
void SetUpSignals() {
  // A foreground daemon started with `&` from a script inherits an ignored
  // SIGINT, which libfuse would keep: Ctrl-C and `kill -INT` must stop it.
  signal(SIGINT, SIG_DFL);
  // logrotate's usual "postrotate kill -HUP": the log file's path is opened
  // again. Every daemon takes it so (none stops on it, as libfuse's handler
  // would), so that signalling all b2ndfs processes unmounts none.
  struct sigaction sa {};
  sa.sa_handler = ReopenLogFileOnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGHUP, &sa, nullptr);
}

// Step 1: the command line, or the exit code of a bad one, --help or
// --version.
std::optional<int> ParseArguments(int argc, char** argv, const std::string& program,
                                  b2ndfs::app::CommandLine* cl) {
  using namespace b2ndfs;
  const std::string program_name = program.substr(program.rfind('/') + 1);
  auto parsed = app::ParseCommandLine(argc, argv);
  if (!parsed.ok()) {
    // One line, not the whole help, which would scroll the error away.
    std::fprintf(stderr, "b2ndfs: %s\nsee '%s --help'\n", parsed.status().message().c_str(),
                 program_name.c_str());
    return 2;
  }
  *cl = std::move(parsed).value();
  app::HidePasswordsInArguments(argc, argv);
  if (cl->show_help) {
    std::fputs(app::Usage(program).c_str(), stdout);
    return 0;
  }
  if (cl->show_version) {
    std::printf("b2ndfs %s\nc-blosc2 %s\nlibfuse %s\n", B2NDFS_VERSION,
                codec::LibraryVersion().c_str(), fuse::LibraryVersion().c_str());
    return 0;
  }
  return std::nullopt;
}

// Step 2: the log level and file.
b2ndfs::Status SetUpLogging(b2ndfs::app::CommandLine& cl) {
  using namespace b2ndfs;
  if (cl.log_level) {
    SetLogLevel(*cl.log_level);
  } else if (cl.debug) {
    SetLogLevel(LogLevel::kDebug);
  }
  if (!cl.log_file.empty()) {
    // Absolute: the daemon changes to / (and reopens it by path on SIGHUP).
    if (cl.log_file[0] != '/') {
      char* cwd = ::getcwd(nullptr, 0);
      if (cwd != nullptr) cl.log_file = std::string(cwd) + "/" + cl.log_file;
      std::free(cwd);
    }
    B2NDFS_RETURN_IF_ERROR(SetLogFile(cl.log_file));
  }
  return b2ndfs::Status::Ok();
}

// Step 3: the source, checked (a remote one answers) before the daemon
// detaches: a remote tree (which keeps the small objects it fetches whole in
// `cache`), or null for a local directory or file (cl.source made absolute).
b2ndfs::Result<std::shared_ptr<b2ndfs::source::Tree>> OpenSource(b2ndfs::app::CommandLine& cl,
                                                                 b2ndfs::cache::BlockCache* cache) {
  using namespace b2ndfs;
  std::shared_ptr<source::Tree> tree;
  if (app::IsRemoteSource(cl.source)) {
    B2NDFS_ASSIGN_OR_RETURN(tree, app::OpenRemoteTree(cl, cache));
    return tree;
  }
  B2NDFS_RETURN_IF_ERROR(vfs::Filesystem::ValidateSource(cl.source));
  B2NDFS_RETURN_IF_ERROR(app::CheckSourceKind(cl.source));
  char* real_source = ::realpath(cl.source.c_str(), nullptr);
  if (real_source != nullptr) {
    cl.source = real_source;
    std::free(real_source);
  }
  return tree;
}

// Step 4: the mount point, and as many open files as the process may have.
b2ndfs::Status PrepareMount(b2ndfs::app::CommandLine& cl) {
  using namespace b2ndfs;
  B2NDFS_ASSIGN_OR_RETURN(cl.mountpoint, app::PrepareMountpoint(cl.mountpoint));
  if (auto limit = app::RaiseOpenFileLimit(); limit.ok()) {
    Log(LogLevel::kDebug, "open file limit: " + std::to_string(*limit));
  } else {
    Log(LogLevel::kWarning, "cannot raise the open file limit: " + limit.status().message());
  }
  return Status::Ok();
}

// Serve block and chunk buffers (up to a few MiB) from malloc's arenas
// rather than fresh mmaps: a cold read otherwise spends its time in page
// faults. Freed memory is reused by the cache, which stays in budget.
// Scaled to the cache, so that a small cache also means a small daemon;
// few arenas keep fragmentation across FUSE threads bounded.
void TuneMalloc(size_t cache_size) {
  mallopt(M_MMAP_THRESHOLD,
          static_cast<int>(std::clamp<size_t>(cache_size / 64, 1u << 20, 64u << 20)));
  mallopt(M_TRIM_THRESHOLD,
          static_cast<int>(std::clamp<size_t>(cache_size / 8, 8u << 20, 256u << 20)));
  mallopt(M_ARENA_MAX, 4);
}

// The virtual tree's options.
b2ndfs::vfs::Options FilesystemOptions(const b2ndfs::app::CommandLine& cl,
                                       std::shared_ptr<b2ndfs::source::Tree> tree,
                                       b2ndfs::store::StoreContext* store,
                                       std::shared_ptr<const b2ndfs::views::Registry> view_kinds,
                                       int connections) {
  using namespace b2ndfs;
  vfs::Options fs_options;
  fs_options.source = cl.source;
  // python-blosc2's stores (.b2z, .b2d, .b2e) shown as directories of their
  // leaves, whatever the source; a CTable's valid/ files read its leaves
  // through `store`.
  fs_options.tree = stores::MakeStoreTree(tree ? tree : source::MakeLocalTree(cl.source), store);
  fs_options.views = std::move(view_kinds);
  if (cl.readahead >= 0) fs_options.max_readahead = cl.readahead;
  fs_options.max_open = cl.max_open;
  fs_options.ino32 = cl.ino32;
  fs_options.log_readable_by_all = cl.log_access_all;
  // A background thread per four connections asks the server about known
  // names (revalidations are few; data reads have threads of their own).
  fs_options.background_threads = std::clamp(connections / 4, 2, 16);
  return fs_options;
}

// libfuse's arguments: read-only, named `fsname`, and the user's options.
std::vector<std::string> FuseArguments(const b2ndfs::app::CommandLine& cl,
                                       const std::string& program, const std::string& fsname) {
  std::vector<std::string> args;
  args.push_back(program);
  if (cl.debug) args.push_back("-d");
  std::string options = "ro,fsname=" + EscapeOption(fsname) + ",subtype=b2ndfs";
  // allow_other must never expose what the source's permissions do not.
  if (cl.allow_other && !cl.has_default_permissions) options += ",default_permissions";
  for (const auto& o : cl.fuse_options) options += "," + EscapeOption(o);
  args.push_back("-o");
  args.push_back(options);
  return args;
}

// The FUSE session's options (its on_start is main's).
b2ndfs::fuse::SessionOptions SessionOptionsFor(const b2ndfs::app::CommandLine& cl,
                                               const std::string& program,
                                               const std::string& fsname, int connections,
                                               int threads) {
  using namespace b2ndfs;
  fuse::SessionOptions session;
  session.mountpoint = cl.mountpoint;
  session.foreground = cl.foreground;
  session.single_threaded = cl.single_threaded;
  session.remote_connections = connections;
  session.max_threads =
      static_cast<unsigned>(cl.max_threads > 0 ? cl.max_threads : app::DefaultMaxThreads(threads));
  session.fuse_args = FuseArguments(cl, program, fsname);
  return session;
}

void WarnIfNoSyslog(const b2ndfs::app::CommandLine& cl) {
  using namespace b2ndfs;
  if (!cl.foreground && cl.log_file.empty() && !SyslogAvailable()) {
    // Said once, before stderr goes: otherwise every later message is lost.
    std::fprintf(stderr,
                 "b2ndfs: no syslog here (no /dev/log): messages go to %s/.b2ndfs/log (the "
                 "last %zu) once detached; -o log_file=PATH keeps them all\n",
                 cl.mountpoint.c_str(), kRecentLogCapacity);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace b2ndfs;
  const std::string program = argc > 0 ? argv[0] : "b2ndfs";
  app::CommandLine cl;
  if (auto exit_code = ParseArguments(argc, argv, program, &cl)) return *exit_code;
  if (Status s = SetUpLogging(cl); !s.ok()) {
    std::fprintf(stderr, "b2ndfs: %s\n", s.message().c_str());
    return 1;
  }
  std::shared_ptr<const views::Registry> view_kinds;
  if (!cl.views.empty()) {
    auto filtered = views::Registry::WithKinds(cl.views);
    if (!filtered.ok()) {
      std::fprintf(stderr, "b2ndfs: %s\nsee '%s --help'\n", filtered.status().message().c_str(),
                   program.substr(program.rfind('/') + 1).c_str());
      return 2;
    }
    view_kinds = std::move(filtered).value();
  }
  // Made before the source is opened: a remote tree keeps the small objects
  // it fetches whole in it.
  const size_t cache_size = cl.cache_size > 0 ? cl.cache_size : DefaultCacheSize();
  // Few shards for small caches, so that one shard still holds large blocks.
  const int shards = static_cast<int>(std::clamp<size_t>(cache_size / (64u << 20), 1, 16));
  cache::BlockCache cache(cache_size, shards);
  auto opened = OpenSource(cl, &cache);
  Status prepared = opened.ok() ? PrepareMount(cl) : opened.status();
  if (!prepared.ok()) {
    std::fprintf(stderr, "b2ndfs: %s\n", prepared.message().c_str());
    return 1;
  }
  const std::shared_ptr<source::Tree> tree = std::move(opened).value();

  const int cpus = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int threads = cl.threads > 0 ? cl.threads : cpus;
  TuneMalloc(cache_size);
  // Decoders at once: reads decode on their own FUSE threads and on the
  // workers; more than the CPUs would only take turns, and each context
  // keeps about four blocks of scratch (see DecompressorPool).
  codec::DecompressorPool decompressors(static_cast<size_t>(std::max(threads, cpus)) + 2);
  // Blocks held by readers outside the cache: bounded mount-wide, so memory
  // stays within cache_size plus this (and per-request buffers).
  const size_t pin_limit = std::clamp<size_t>(cache_size / 4, 16u << 20, 256u << 20);
  store::PinBudget pins(pin_limit);
  store::StoreContext store;
  cache::SetSlabHugePages(!cl.no_hugepages);
  // Declared after everything its tasks use (read-ahead tasks hold
  // containers, which point at `store`), so that even its destructor joins
  // them in time; Shutdown() below does it explicitly.
  // A read decompresses its misses on the calling thread plus up to
  // threads - 1 workers; read-ahead runs on the workers.
  store::WorkerPool workers(threads);
  const int connections =
      cl.connections > 0 ? cl.connections : static_cast<int>(remote::kDefaultConnections);
  // A remote source's read-ahead and chunk-head prefetches wait for the
  // network here, one at a time per connection, not on the decoders above.
  std::optional<store::WorkerPool> io_workers;
  if (tree) io_workers.emplace(connections);
  store.cache = &cache;
  store.decompressors = &decompressors;
  store.workers = &workers;
  if (io_workers) store.io_workers = &*io_workers;
  store.pins = &pins;
  store.max_pinned_bytes = pin_limit / 4;
  if (cl.prefetch_heads >= 0) store.remote_heads_max_chunks = cl.prefetch_heads;

  vfs::Filesystem filesystem(FilesystemOptions(cl, tree, &store, view_kinds, connections), &store);

  // A remote source's name without credentials (mount tables are public).
  const std::string fsname = tree ? tree->root() : cl.source;
  fuse::SessionOptions session = SessionOptionsFor(cl, program, fsname, connections, threads);
  // Worker threads and decompression contexts are made when the session
  // starts (after the fork into the background), not in the first read.
  std::atomic<bool> served{false};
  session.on_start = [&workers, &io_workers, &decompressors, threads, &fsname, &cl, &served] {
    // The kernel's INIT: from now on the mount answers.
    served = true;
    Log(LogLevel::kInfo, "mounted " + fsname + " on " + cl.mountpoint);
    workers.Start();
    if (io_workers) io_workers->Start();
    // Zeroed memory for the first reads' blocks, made while none is asked.
    workers.TrySubmit(cache::FillEmptySlabs, 1);
    decompressors.Prepare(static_cast<size_t>(threads));
  };
  WarnIfNoSyslog(cl);
  SetUpSignals();
  const int rc = fuse::Serve(filesystem, session);
  if (served) Log(LogLevel::kInfo, "unmounted " + cl.mountpoint);
  // The request threads and the background probes are gone (Serve stopped
  // them, before the invalidator); stop the read-ahead still queued or
  // running before the filesystem, the containers and the store go.
  if (io_workers) io_workers->Shutdown();
  workers.Shutdown();
  return rc;
}
