// vfs: the SOURCE tree as a namespace of inodes, with every recognised
// container shown as a directory of virtual files (SPEC.md "Layout").
//
// Ownership: Filesystem owns the inode table (nodes are created by Lookup and
// freed by Forget, as the FUSE low-level protocol counts them) and one
// ContainerEntry per container path, which opens the container lazily (the
// first time something inside it is looked at) and reopens it when the
// source's mtime, size or inode changed (checked on every open of a file in
// it). Listing a directory never decodes the containers in it.
// Errors: Status with the errno to report (ENOENT, ENOTDIR, EIO, ...).
// Thread-safety: every method may be called from any thread.
// Lock order: Filesystem::mutex_ before nothing; ContainerEntry::mutex_ is a
// leaf lock taken without mutex_ held.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "b2ndfs/store/container.h"
#include "b2ndfs/util/file.h"
#include "b2ndfs/util/latency.h"
#include "b2ndfs/util/status.h"

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

struct DirEntry {
  std::string name;
  mode_t type = 0;  // S_IFDIR / S_IFREG
  Ino ino = 0;      // the node's inode if it has one, else a stable stand-in
};

// An open directory: a stable, sorted snapshot, or a generated sequence for
// chunk and slice directories (which may hold millions of names).
class DirListing {
 public:
  virtual ~DirListing() = default;
  virtual size_t size() const = 0;
  virtual DirEntry at(size_t index) const = 0;
};

// How one file is being read, shared by all its handles (and so by mmap
// faults, which the kernel sends through any handle): detects sequential
// reading and how far ahead blocks have been requested.
struct ReadPattern {
  std::mutex mutex;  // leaf lock
  int64_t next_offset = -1;
  int64_t window = 0;            // current read-ahead distance in bytes
  int64_t prefetched_until = 0;  // read-ahead was requested up to here
};

// An open regular file.
struct FileHandle {
  std::shared_ptr<store::Container> container;  // virtual files
  store::VirtualFile file;
  std::shared_ptr<File> passthrough;  // ordinary source files
  std::shared_ptr<ReadPattern> pattern;
  std::shared_ptr<const std::string> snapshot;  // generated files (stats)
  bool keep_cache = true;                       // false when the source changed since the last open
  bool direct_io = false;                       // for generated files whose size is not fixed
};

class ContainerEntry;

// Attributes plus how long the kernel may cache them: names inside a
// container are fixed for its generation; the mirrored tree may change.
struct Attr {
  struct stat st {};
  double timeout = 1.0;
};

struct Options {
  std::string source;               // directory, or a single container
  double attr_timeout = 60.0;       // seconds the kernel may cache attributes
  int64_t max_readahead = 8 << 20;  // bytes of blocks decompressed ahead of a reader
  int max_open = 0;                 // containers kept open at once (LRU); 0: default
};

// The hidden directory at the mount root with runtime statistics.
constexpr const char* kControlDirName = ".b2ndfs";

class Filesystem {
 public:
  Filesystem(Options options, store::StoreContext* store);
  ~Filesystem();

  // Checks that SOURCE exists and can be served.
  static Status ValidateSource(const std::string& source);

  // Looks a name up and counts one kernel reference to the result.
  Result<Attr> Lookup(Ino parent, const std::string& name);
  void Forget(Ino ino, uint64_t nlookup);
  Result<Attr> GetAttr(Ino ino);
  Result<std::shared_ptr<DirListing>> OpenDir(Ino ino);
  Result<FileHandle> Open(Ino ino, int flags);
  Result<size_t> Read(const FileHandle& handle, int64_t offset, size_t length, uint8_t* out);
  size_t NodeCount() const;
  // Called (from a request thread, no lock held) with the nodes whose
  // kernel-cached attributes, pages and names became stale because their
  // container changed on disk. The FUSE layer forwards them to the kernel.
  void SetInvalidateCallback(std::function<void(const std::vector<StaleNode>&)> callback) {
    invalidate_ = std::move(callback);
  }
  // The JSON document served as .b2ndfs/stats.
  std::string StatsJson() const;
  const Options& options() const { return options_; }

 private:
  struct Node;
  std::shared_ptr<Node> Find(Ino ino) const;
  std::shared_ptr<Node> Child(const std::shared_ptr<Node>& parent, const std::string& name,
                              Status* status);
  Result<std::shared_ptr<Node>> Resolve(const std::shared_ptr<Node>& parent,
                                        const std::string& name);
  Result<Attr> Attributes(const Node& node);
  std::shared_ptr<Node> Intern(std::shared_ptr<Node> node);
  void PlanReadAhead(const FileHandle& handle, int64_t offset, size_t length);
  uint64_t RevalidateEntry(const std::shared_ptr<ContainerEntry>& entry);

  Options options_;
  store::StoreContext* store_;
  mutable std::mutex mutex_;  // guards nodes_, children_, next_ino_, entries_
  std::unordered_map<Ino, std::shared_ptr<Node>> nodes_;
  std::unordered_map<std::string, Ino> children_;  // parent ino + '/' + name -> ino
  std::unordered_map<std::string, std::weak_ptr<ContainerEntry>> entries_;
  Ino next_ino_ = kRootIno + 1;
  LatencyHistogram read_latency_;
  std::function<void(const std::vector<StaleNode>&)> invalidate_;
  int64_t start_time_ns_ = 0;
  bool single_container_ = false;
};

}  // namespace b2ndfs::vfs
