// Private to vfs: inode numbers, and the little the daemon keeps per number.
//
// Numbers come in four kinds, told apart by value alone:
// - fixed: the root (1), .b2ndfs (2), .b2ndfs/stats (3) and .b2ndfs/log (4);
// - path-bound (mirrored directories, plain files, container directories):
//   each path and kind gets a number of its own the first time a listing or
//   lookup meets it, kept for the mount's life (path_numbers.h: about 25
//   bytes a name, above 2^32, or in [2^31, 2^32) with ino32), so numbers
//   are stable across FORGET and never shared by two paths. A PathNode
//   record exists only while the kernel holds a reference (lookup count >
//   0) and goes with its last FORGET. A path that cannot have its own number
//   (a fingerprint shared with a held path, or the table full) gets a
//   counted number while held;
// - generation blocks: each generation of a container reserves a block of
//   counted numbers, one per listable name of its views (views' ordinals):
//   a number in the block *is* (generation, ordinal), so the thousands of
//   files inside a container cost nothing per name (GenerationIndex);
// - unlisted names inside a container (view/, view/EXPR): a counted number
//   each, with a record kept while the kernel holds it.
// Counted numbers start at 16, below the path-bound ones (below 2^32, or
// 2^31 with ino32), and go on at 2^62 once a long-lived mount used those up.
// They are never reused, so a number names one thing for the mount's life
// (stale ones answer ESTALE).
// Thread-safety: every method may be called from any thread; the mutexes
// here are leaf locks.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/vfs/types.h"
#include "path_numbers.h"

namespace b2ndfs::views {
class Node;
}  // namespace b2ndfs::views

namespace b2ndfs::vfs {

class ContainerEntry;
class Generation;

constexpr Ino kControlDirIno = 2;
constexpr Ino kStatsFileIno = 3;
constexpr Ino kLogFileIno = 4;

enum class NodeType {
  kDir,         // a mirrored directory
  kFile,        // a mirrored plain file
  kContainer,   // a container directory (bound to its path)
  kInside,      // a file or directory inside a container (bound to a generation)
  kControlDir,  // .b2ndfs at the root: looked up, never listed
  kStatsFile,   // .b2ndfs/stats or .b2ndfs/log (told apart by number)
};

// A mirrored node the kernel holds.
struct PathNode {
  Ino ino = 0;
  NodeType type = NodeType::kDir;         // kDir, kFile or kContainer
  std::string path;                       // tree path
  std::shared_ptr<ContainerEntry> entry;  // kContainer
  uint64_t nlookup = 0;                   // guarded by InodeTable's mutex
  std::mutex mutex;                       // leaf lock; guards what follows
  // kFile: the version the kernel's cached pages are of.
  source::Signature cached_version;
  // The source's attributes when last asked: what stat answers while the
  // source cannot be reached (a server down).
  std::optional<struct stat> last_stat;
};

// An unlisted name inside a container the kernel holds.
struct UnlistedNode {
  Ino ino = 0;
  std::weak_ptr<Generation> generation;
  std::shared_ptr<const views::Node> view;
  uint64_t nlookup = 0;  // guarded by InodeTable's mutex
};

// The live generations' blocks of numbers. Shared (a generation unregisters
// its block when it goes, which may be after the filesystem is gone).
class GenerationIndex {
 public:
  void Add(Ino base, uint64_t count, const std::weak_ptr<Generation>& generation);
  void Remove(Ino base);
  // The generation whose block holds `ino`, if it still lives.
  std::shared_ptr<Generation> Find(Ino ino) const;
  size_t size() const;

 private:
  struct Block {
    uint64_t count = 0;
    std::weak_ptr<Generation> generation;
  };
  mutable std::mutex mutex_;     // leaf lock
  std::map<Ino, Block> blocks_;  // by first number
};

// How path-bound numbers are made (Options::ino32); the limits are
// smaller only in tests.
struct InodeNumbering {
  bool ino32 = false;
  uint64_t narrow_names = PathNumbers::kNarrowBase;
  uint64_t max_names = PathNumbers::kMaxNames;
};

class InodeTable {
 public:
  explicit InodeTable(InodeNumbering numbering = {});

  // The number of a path of this kind (S_IFDIR or S_IFREG), given now if it
  // has none: what listings give (0: the table is full, README.md "Inode
  // numbers").
  Ino PathIno(const std::string& path, mode_t type);
  // Counts one kernel reference to the path node `candidate` describes (its
  // ino is set here), and returns the held node (an existing one keeps its
  // record: cached_version, entry).
  std::shared_ptr<PathNode> RefPath(std::shared_ptr<PathNode> candidate);
  std::shared_ptr<PathNode> FindPath(Ino ino) const;
  // The held node of `path`, if any (nullptr otherwise).
  std::shared_ptr<PathNode> FindPathByName(const std::string& path) const;

  // A new unlisted node with one reference.
  Ino AddUnlisted(std::weak_ptr<Generation> generation, std::shared_ptr<const views::Node> view);
  std::shared_ptr<const UnlistedNode> FindUnlisted(Ino ino) const;

  // `count` fresh consecutive numbers (at least one).
  Ino Reserve(uint64_t count);
  GenerationIndex& generations() { return *generations_; }
  const std::shared_ptr<GenerationIndex>& generation_index() const { return generations_; }

  // Gives back `nlookup` kernel references; a record with none left goes.
  void Forget(Ino ino, uint64_t nlookup);
  // Records held for the kernel (path and unlisted nodes).
  size_t size() const;
  bool IsPathIno(Ino ino) const { return numbers_.Contains(ino); }
  // Mirrored names numbered so far, and the bytes that costs.
  size_t path_numbers() const;
  size_t path_number_bytes() const;

 private:
  Ino NextCounted(uint64_t count);  // under mutex_
  // Counted numbers start here (below are the fixed ones).
  static constexpr Ino kFirstCounted = 16;
  // ... and once they reach counted_end_, go on here.
  static constexpr Ino kCountedOverflow = Ino{1} << 62;
  const Ino counted_end_;

  mutable std::mutex mutex_;  // leaf lock; guards everything below
  PathNumbers numbers_;       // (Contains() needs no lock)
  std::unordered_map<Ino, std::shared_ptr<PathNode>> paths_;
  // Held paths whose number is not their own (see above).
  std::unordered_map<std::string, Ino> counted_paths_;
  std::unordered_map<Ino, std::shared_ptr<UnlistedNode>> unlisted_;
  Ino next_ = kFirstCounted;
  std::shared_ptr<GenerationIndex> generations_;
};

}  // namespace b2ndfs::vfs
