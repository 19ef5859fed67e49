// Private to vfs: inode numbers, and the little the daemon keeps per number.
//
// Numbers come in four kinds, told apart by value alone:
// - fixed: the root (1), .b2ndfs (2), .b2ndfs/stats (3) and .b2ndfs/log (4);
// - path-bound (mirrored directories, plain files, container directories):
//   computed from the path and its kind (a 31-bit hash in [2^31, 2^32), so
//   that 32-bit programs can still readdir and stat), so a listing of the
//   mirrored tree gives every entry its number without remembering it; a
//   PathNode record exists only while the kernel holds a reference (lookup
//   count > 0) and goes with its last FORGET. The rare path whose hash is
//   taken by another held path gets a counted number instead (its listing
//   then shows the hash);
// - generation blocks: each generation of a container reserves a block of
//   counted numbers, one per listable name of its views (views' ordinals):
//   a number in the block *is* (generation, ordinal), so the thousands of
//   files inside a container cost nothing per name (GenerationIndex);
// - unlisted names inside a container (view/, view/EXPR): a counted number
//   each, with a record kept while the kernel holds it.
// Counted numbers are never reused, so a number names one thing for the
// mount's life (stale ones answer ESTALE).
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
#include "b2ndfs/vfs/filesystem.h"

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

class InodeTable {
 public:
  InodeTable();

  // The number a path of this kind has (S_IFDIR or S_IFREG) when it is not
  // held: what listings give.
  Ino PathIno(const std::string& path, mode_t type) const;
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
  static bool IsPathIno(Ino ino) { return ino >= kPathBase && ino < 2 * kPathBase; }

 private:
  static constexpr Ino kPathBase = Ino{1} << 31;
  Ino NextCounted(uint64_t count);  // under mutex_
  // Counted numbers start here (below are the fixed ones).
  static constexpr Ino kFirstCounted = 16;

  mutable std::mutex mutex_;  // leaf lock; guards everything below
  std::unordered_map<Ino, std::shared_ptr<PathNode>> paths_;
  // Held paths whose number is not their hash (a collision).
  std::unordered_map<std::string, Ino> counted_paths_;
  std::unordered_map<Ino, std::shared_ptr<UnlistedNode>> unlisted_;
  Ino next_ = kFirstCounted;
  std::shared_ptr<GenerationIndex> generations_;
};

}  // namespace b2ndfs::vfs
