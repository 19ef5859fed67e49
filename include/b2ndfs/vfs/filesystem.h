// vfs: the SOURCE tree as a namespace of inodes, with every recognised
// container shown as a directory of virtual files (README.md, "Layout").
//
// State (who owns whom, and for how long; see inode_table.h and
// generation.h for each piece):
// - The mirrored tree (directories, plain files, container directories) is
//   bound to source paths: a path and kind get a number of their own when
//   first listed or looked up, kept for the mount's life (about 25 bytes a
//   name, README.md "Inode numbers"); the daemon keeps a record of the node
//   only while the kernel holds a reference (its lookup count), so walks
//   that the kernel forgets cost no more than that. A container directory's
//   record owns its ContainerEntry.
// - Everything inside a container directory is bound to one *generation* of
//   that container (one version of its source): a generation reserves a
//   block of inode numbers, one per listable name (views' ordinals), and a
//   number in the block is the name, recomputed on demand: no per-name state
//   however many virtual files a walk visits.
// - An open file owns its generation, its container and a hold of the
//   source's version (FileHandle), so it reads the version it opened to its
//   end, whatever happens to the container; a new open sees the new version.
// Changes. A source's change is noticed on the next lookup, stat, listing or
// open inside it (its signature: identity, size, times; a remote ETag): the
// old generation dies, its names answer ESTALE (the kernel then walks the
// path again and finds the new generation's names, or ENOENT), and the
// kernel is told to drop them; its cached blocks go when its last open file
// closes. Only a source that says the container is gone (ENOENT) or another
// version ends a generation: trouble reaching it (a server down, timeouts,
// EIO, EMFILE) is returned to the caller that met it and forgotten, and
// cached reads go on (README.md, "Containers that change").
// Sources. Everything about the source goes through a source::Tree (a local
// directory, a web server, an object store): listing, stat, containers'
// signatures and bytes, plain files' bytes. Paths below are tree paths.
// Resources. Opened containers live in an LRU bounded by `max_open` and by a
// share of the cache budget (their metadata is charged to the block cache);
// the tree bounds what it holds (descriptors, connections).
// Costs: what the tree declares (source::TreeCosts) decides where waiting
// is allowed: a tree whose requests may stall gets background probes.
// The values it hands out (Attr, DirListing, StaleNode, PagePush) are
// vfs/types.h's.
// Errors: Status with the errno to report (ENOENT, ENOTDIR, ESTALE, EIO, ...).
// Thread-safety: every method may be called from any thread.
// Lock order: ContainerEntry's before Generation's before OpenContainers'
// and InodeTable's, which are leaves; so are entries_mutex_,
// invalidate_mutex_ and ReadPattern's.
// Teardown: StopBackground() (remote probes joined), then the callbacks may
// go; the destructor stops the probes before anything they use.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "b2ndfs/source/tree.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/util/latency.h"
#include "b2ndfs/util/status.h"
#include "b2ndfs/vfs/file_handle.h"
#include "b2ndfs/vfs/types.h"

namespace b2ndfs::views {
class Node;
class Registry;
}  // namespace b2ndfs::views
namespace b2ndfs {
class TaskPool;
}  // namespace b2ndfs

namespace b2ndfs::vfs {

struct Options {
  std::string source;  // directory, or a single container (a local path)
  // The source tree; null: a local tree of `source`, holding at most
  // `max_descriptors` descriptors.
  std::shared_ptr<source::Tree> tree;
  // The kinds of virtual files in container directories (views=LIST); null:
  // views::Registry::Default(), every kind.
  std::shared_ptr<const views::Registry> views;
  double attr_timeout = 60.0;       // seconds the kernel may cache attributes inside containers
  int64_t max_readahead = 8 << 20;  // bytes of blocks decompressed ahead of a reader
  int max_open = 0;                 // containers kept open at once (LRU); 0: default
  size_t max_descriptors = 0;       // source descriptors kept open; 0: from RLIMIT_NOFILE
  // Remote sources: threads that ask the source about names and versions
  // already known, so that request threads do not wait on a server that
  // does not answer; 0: kDefaultBackgroundThreads.
  int background_threads = 0;
  // How long a request that knows an answer (a generation, a name's
  // attributes) waits for a remote source before it goes on with it: while
  // the server answers, and once it failed or kept a request waiting.
  int healthy_grace_ms = 2000;
  int suspect_grace_ms = 40;
  // Mirrored names numbered below 2^32 (for 32-bit readers); default: above
  // (README.md, "Inode numbers").
  bool ino32 = false;
  // .b2ndfs/log readable by whoever may read the root; default: by the
  // daemon's user alone (mode 0400), as it names other users' files.
  bool log_readable_by_all = false;
};

constexpr int kDefaultBackgroundThreads = 4;

// Containers kept open when Options::max_open is 0.
constexpr int kDefaultMaxOpen = 1024;

class ContainerEntry;
struct EntryContext;
struct PathNode;
class Generation;
class InodeTable;
class OpenContainers;
class ReadAheadPolicy;
class Resolver;
struct Target;

class Filesystem {
 public:
  Filesystem(Options options, store::StoreContext* store);
  ~Filesystem();

  // Checks that a local SOURCE exists and can be served.
  static Status ValidateSource(const std::string& source);

  // Looks a name up and counts one kernel reference to the result.
  Result<Attr> Lookup(Ino parent, const std::string& name);
  void Forget(Ino ino, uint64_t nlookup);
  // `open`: the file the kernel asks through (fstat of an open descriptor),
  // whose own version answers.
  Result<Attr> GetAttr(Ino ino, const FileHandle* open = nullptr);
  Result<std::shared_ptr<DirListing>> OpenDir(Ino ino);
  Result<FileHandle> Open(Ino ino, int flags);
  Result<size_t> Read(const FileHandle& handle, int64_t offset, size_t length, uint8_t* out);
  // Extended attributes (README.md, "Layout"): the user.b2nd.* names of a
  // container directory and of everything inside it, from its generation's
  // container. Any other name, any other node and an undecodable container
  // answer ENODATA, security.* and system.* EOPNOTSUPP (no labels, no ACLs;
  // `ls -l` then stops asking for every entry), both before the node is even
  // looked at.
  Result<std::string> GetXattr(Ino ino, const std::string& name);
  // The names, each followed by a NUL (empty where there are none).
  Result<std::string> ListXattr(Ino ino);
  // Records kept for kernel references (mirrored and unlisted nodes); names
  // inside containers need none.
  size_t NodeCount() const;
  // Called (from a request thread or a background probe, no lock held)
  // with the nodes whose kernel-cached attributes and names became stale
  // because their container changed on disk. The FUSE layer forwards them
  // to the kernel. May be replaced or cleared at any time: a call already
  // made keeps the callback it took alive until it returns.
  void SetInvalidateCallback(std::function<void(const std::vector<StaleNode>&)> callback);
  // Stops the background probes of a remote tree: waits for the running
  // ones; queued ones answer their waiters EIO; later probes run on their
  // caller's thread. At unmount, before whatever the invalidation callback
  // uses goes (fuse/session.cc): after it no probe calls the callback.
  // Idempotent; the destructor does it too.
  void StopBackground();
  // Called (from a request thread, no lock held) with a file to store in the
  // kernel's page cache ahead of its reader; no callback, no pushes.
  // `callback` returns whether the push was taken (or one of the same inode
  // is already on its way).
  void SetPagePushCallback(std::function<bool(PagePush)> callback);
  // The JSON document served as .b2ndfs/stats.
  std::string StatsJson() const;
  // .b2ndfs/stats, or .b2ndfs/log (the daemon's recent messages) for its number.
  std::string ControlFileText(Ino ino) const;
  const Options& options() const { return options_; }
  // What the source tree's requests cost (source::TreeCosts).
  source::TreeCosts costs() const;

 private:
  Result<Attr> Attributes(const Target& target);
  Result<struct stat> SourceStat(PathNode& node);
  std::shared_ptr<ReadPattern> PatternFor(Ino ino);
  void GenerationReplaced(const ContainerEntry& entry, const Generation& old,
                          const store::Container* fresh);

  Options options_;
  store::StoreContext* store_;
  std::shared_ptr<const views::Registry> views_;
  std::shared_ptr<source::Tree> tree_;
  std::unique_ptr<OpenContainers> open_containers_;
  std::unique_ptr<InodeTable> inodes_;
  std::unique_ptr<EntryContext> entry_context_;
  std::unique_ptr<Resolver> resolver_;
  std::unique_ptr<ReadAheadPolicy> read_ahead_;
  // Read patterns of open files, shared by every handle of one file.
  std::mutex patterns_mutex_;  // leaf lock
  std::unordered_map<Ino, std::weak_ptr<ReadPattern>> patterns_;
  size_t patterns_swept_at_ = 0;
  LatencyHistogram read_latency_;
  using InvalidateFn = std::function<void(const std::vector<StaleNode>&)>;
  std::mutex invalidate_mutex_;  // leaf lock; guards invalidate_ (not its calls)
  std::shared_ptr<const InvalidateFn> invalidate_;
  int64_t start_time_ns_ = 0;
  std::atomic<uint64_t> generations_replaced_{0};
  std::unique_ptr<TaskPool> background_;  // remote trees; stopped first
};

}  // namespace b2ndfs::vfs
