// vfs: the SOURCE tree as a namespace of inodes, with every recognised
// container shown as a directory of virtual files (SPEC.md "Layout").
//
// Lifetimes. The mirrored tree (directories, plain files, container
// directories) is bound to source paths: its inode numbers stay while the
// path keeps its kind. Everything inside a container directory is bound to
// one *generation* of that container (one version of its source): a
// generation reserves a block of inode numbers, one per listable name (views'
// ordinals), so readdir and lookup agree without remembering names, and a new
// generation gets new numbers. When a source changes (noticed on the next
// lookup, stat or open inside it, by its signature: identity, size, times),
// the old generation dies: its names answer ESTALE (the kernel then walks the
// path again and finds the new generation's names, or ENOENT), the kernel is
// told to forget them, and its cached blocks are dropped. An already-open
// file keeps reading the generation it opened as far as that version's bytes
// can still be read (cached blocks, an old file still held open); where they
// cannot, reads fail with EIO. It never returns bytes of another generation.
// Sources. Everything about the source goes through a source::Tree (a local
// directory, a web server, an object store): listing, stat, containers'
// signatures and bytes, plain files' bytes. Paths below are tree paths.
// Resources. Opened containers live in an LRU bounded by `max_open` and by a
// share of the cache budget (their metadata is charged to the block cache);
// the tree bounds what it holds (descriptors, connections); a closed container
// of a live generation is reopened on demand (after checking its signature).
// Errors that come from reading the source (EMFILE, a vanished file, EIO from
// the disk) are returned, never remembered as the container's state.
// Errors: Status with the errno to report (ENOENT, ENOTDIR, ESTALE, EIO, ...).
// Thread-safety: every method may be called from any thread.
// Lock order: ContainerEntry::mutex_ before Filesystem::mutex_ before
// OpenContainers::mutex_; ReadPattern::mutex is a leaf.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "b2ndfs/store/container.h"
#include "b2ndfs/util/latency.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::views {
class Node;
class Registry;
}  // namespace b2ndfs::views
namespace b2ndfs::source {
class PlainFile;
class Tree;
}  // namespace b2ndfs::source

namespace b2ndfs::vfs {

using Ino = uint64_t;
constexpr Ino kRootIno = 1;

// True for names that b2ndfs shows as containers (.b2nd, .b2frame, .b2f, .b2,
// .caterva, .cat).
bool HasContainerExtension(const std::string& name);

// A node the kernel may have cached, and the name it has in its parent.
struct StaleNode {
  Ino ino = 0;
  Ino parent = 0;
  std::string name;
  bool forget_name = false;  // the name itself may be gone
};

// A whole file to hand to the kernel's page cache before its reader asks for
// it (read-ahead across the files of slices/0/, which image-sequence tools
// open one after another): the FUSE layer fills `size` bytes with `render`
// and stores them as inode `ino`'s pages, which the kernel keeps only for an
// inode it knows; it then calls `done` with whether they were stored.
struct PagePush {
  Ino ino = 0;
  int64_t size = 0;
  std::function<Status(uint8_t* out)> render;
  std::function<void(bool stored)> done;
};

struct DirEntry {
  std::string name;
  mode_t type = 0;  // S_IFDIR / S_IFREG
  Ino ino = 0;      // the inode number lookup gives (0: not known yet)
};

// An open directory: a stable snapshot, or a generated sequence for chunk
// and slice directories (which may hold millions of names).
class DirListing {
 public:
  virtual ~DirListing() = default;
  virtual size_t size() const = 0;
  virtual DirEntry at(size_t index) const = 0;
  // Looking its entries up costs no source I/O and opens no container (the
  // views of an open container): the FUSE layer may hand the kernel their
  // attributes with their names (READDIRPLUS).
  virtual bool cheap_lookups() const { return false; }
};

// How one file is being read, shared by all its handles (and so by mmap
// faults, which the kernel sends through any handle): detects sequential
// reading and how far ahead blocks have been requested.
struct ReadPattern {
  std::mutex mutex;  // leaf lock
  int64_t next_offset = -1;
  int64_t window = 0;            // current read-ahead distance in bytes
  int64_t prefetched_until = 0;  // read-ahead was requested up to here
  // The file's pages are being or were pushed to the kernel ahead of its
  // reader, who may read them without a request: its open passes the push on
  // to the files after it.
  bool pushed = false;
};

// An open regular file.
struct FileHandle {
  // Virtual files: the generation's container (held while open) and the view.
  std::shared_ptr<const store::Container> container;
  std::shared_ptr<const views::Node> view;
  std::shared_ptr<const source::PlainFile> passthrough;  // ordinary source files
  std::shared_ptr<ReadPattern> pattern;
  std::shared_ptr<const std::string> snapshot;  // generated files (stats)
  Ino ino_base = 0;        // virtual files: their generation's first inode number
  bool keep_cache = true;  // false when a plain file changed since
  bool direct_io = false;  // for generated files whose size is not fixed
  // Reads may wait on the network (a remote tree's file): the FUSE layer
  // answers them off its request threads.
  bool remote = false;
};

// Attributes plus how long the kernel may cache them: names inside a
// container are fixed for its generation; the mirrored tree may change.
struct Attr {
  struct stat st {};
  double timeout = 1.0;
};

struct Options {
  std::string source;  // directory, or a single container (a local path)
  // The source tree; null: a local tree of `source`, holding at most
  // `max_descriptors` descriptors.
  std::shared_ptr<source::Tree> tree;
  double attr_timeout = 60.0;       // seconds the kernel may cache attributes inside containers
  int64_t max_readahead = 8 << 20;  // bytes of blocks decompressed ahead of a reader
  int max_open = 0;                 // containers kept open at once (LRU); 0: default
  size_t max_descriptors = 0;       // source descriptors kept open; 0: from RLIMIT_NOFILE
};

// Containers kept open when Options::max_open is 0.
constexpr int kDefaultMaxOpen = 1024;

// The hidden directory at the mount root with runtime statistics.
constexpr const char* kControlDirName = ".b2ndfs";

class ContainerEntry;
class Generation;
class OpenContainers;

class Filesystem {
 public:
  Filesystem(Options options, store::StoreContext* store);
  ~Filesystem();

  // Checks that a local SOURCE exists and can be served.
  static Status ValidateSource(const std::string& source);

  // Looks a name up and counts one kernel reference to the result.
  Result<Attr> Lookup(Ino parent, const std::string& name);
  void Forget(Ino ino, uint64_t nlookup);
  Result<Attr> GetAttr(Ino ino);
  Result<std::shared_ptr<DirListing>> OpenDir(Ino ino);
  Result<FileHandle> Open(Ino ino, int flags);
  Result<size_t> Read(const FileHandle& handle, int64_t offset, size_t length, uint8_t* out);
  // Extended attributes (SPEC.md "Layout"): the user.b2nd.* names of a
  // container directory and of everything inside it, from its generation's
  // container. Any other name, any other node and an undecodable container
  // answer ENODATA, security.* and system.* EOPNOTSUPP (no labels, no ACLs;
  // `ls -l` then stops asking for every entry), both before the node is even
  // looked at.
  Result<std::string> GetXattr(Ino ino, const std::string& name);
  // The names, each followed by a NUL (empty where there are none).
  Result<std::string> ListXattr(Ino ino);
  size_t NodeCount() const;
  // Called (from a request thread, no lock held) with the nodes whose
  // kernel-cached attributes, pages and names became stale because their
  // container changed on disk. The FUSE layer forwards them to the kernel.
  void SetInvalidateCallback(std::function<void(const std::vector<StaleNode>&)> callback) {
    invalidate_ = std::move(callback);
  }
  // Called (from a request thread, no lock held) with a file to store in the
  // kernel's page cache ahead of its reader; no callback, no pushes.
  // `callback` returns whether the push was taken (or one of the same inode
  // is already on its way).
  void SetPagePushCallback(std::function<bool(PagePush)> callback) { push_ = std::move(callback); }
  // The JSON document served as .b2ndfs/stats.
  std::string StatsJson() const;
  const Options& options() const { return options_; }
  // Reads may wait on the network (Tree::remote()).
  bool remote() const;

 private:
  friend class ContainerEntry;
  friend class Generation;
  struct Node;
  std::shared_ptr<Node> Find(Ino ino) const;
  Result<std::shared_ptr<Node>> Resolve(const std::shared_ptr<Node>& parent,
                                        const std::string& name);
  Result<std::shared_ptr<Node>> ResolveMirrored(const std::shared_ptr<Node>& parent,
                                                const std::string& name);
  Result<std::shared_ptr<Node>> ResolveInside(const std::shared_ptr<Node>& parent,
                                              const std::string& name);
  Result<Attr> Attributes(Node& node);
  Result<Attr> ContainerAttributes(Node& node);
  // The container a node inside (or a container directory) shows, or an
  // error (ESTALE for a dead generation, errors reading the source).
  Result<std::shared_ptr<const store::Container>> ContainerOf(const Node& node);
  Result<std::shared_ptr<DirListing>> ListMirrored(const Node& node);
  std::shared_ptr<Node> Intern(std::shared_ptr<Node> node);
  std::shared_ptr<ContainerEntry> EntryFor(const std::string& path);
  Ino InoForPath(const std::string& path, mode_t type);
  Ino ReserveInos(uint64_t count);
  // The live generation of a node inside a container, or ESTALE.
  Result<std::shared_ptr<Generation>> LiveGeneration(const Node& node);
  void GenerationReplaced(const ContainerEntry& entry, const std::shared_ptr<Generation>& old);
  void PlanReadAhead(const FileHandle& handle, int64_t offset, size_t length);
  void PushAhead(const FileHandle& handle, const std::shared_ptr<const views::Node>& file);

  Options options_;
  store::StoreContext* store_;
  std::shared_ptr<const views::Registry> views_;
  std::shared_ptr<source::Tree> tree_;
  std::unique_ptr<OpenContainers> open_containers_;
  mutable std::mutex mutex_;  // guards nodes_, path_inos_, entries_, next_ino_
  std::unordered_map<Ino, std::shared_ptr<Node>> nodes_;
  struct PathIno {
    Ino ino;
    mode_t type;
  };
  std::unordered_map<std::string, PathIno> path_inos_;
  std::unordered_map<std::string, std::weak_ptr<ContainerEntry>> entries_;
  Ino next_ino_ = kRootIno + 1;
  LatencyHistogram read_latency_;
  std::function<void(const std::vector<StaleNode>&)> invalidate_;
  std::function<bool(PagePush)> push_;
  std::atomic<uint64_t> pushed_files_{0};
  std::atomic<uint64_t> pushed_bytes_{0};
  int64_t start_time_ns_ = 0;
  std::atomic<uint64_t> generations_replaced_{0};
  std::atomic<uint64_t> stale_replies_{0};
};

}  // namespace b2ndfs::vfs
