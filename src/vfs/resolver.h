// Private to vfs: what an inode number or a name denotes right now.
//
// The Resolver turns numbers into Targets (a mirrored node, or a generation
// and one of its views) and names in a directory into new Targets. Numbers
// inside a container are decoded from the generation's block
// (views::Registry::NodeAt), not remembered. Every use of a name inside a
// container checks that its generation is still the container's current
// one (one probe of the source: ContainerEntry::Current); a dead
// generation's names answer ESTALE.
// Container entries are kept by the kernel-held container directories and by
// a short LRU of recently used ones (so a container forgotten by the kernel
// and looked up again finds its generation, and its cached blocks, again).
// Thread-safety: any thread. Lock order: entries_mutex_ is a leaf lock.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "b2ndfs/util/status.h"
#include "b2ndfs/util/weighted_lru.h"
#include "generation.h"
#include "inode_table.h"

namespace b2ndfs::vfs {

// What an inode number names.
struct Target {
  NodeType type = NodeType::kDir;
  Ino ino = 0;
  std::shared_ptr<PathNode> path;  // kDir, kFile, kContainer
  // kInside: the generation, its opened container and the view.
  std::shared_ptr<Generation> generation;
  std::shared_ptr<const store::Container> container;
  std::shared_ptr<const views::Node> view;
};

class Resolver {
 public:
  // `root` is the mount's root node (never forgotten). The others outlive
  // the resolver.
  Resolver(const source::Tree* tree, const views::Registry* views, InodeTable* inodes,
           EntryContext* entries, std::shared_ptr<PathNode> root, size_t recent_entries);

  // What `ino` names. Inside a container the generation must be current
  // (ESTALE otherwise) unless `allow_dead` (an open file's own node).
  Result<Target> Find(Ino ino, bool allow_dead = false);
  // `name` in directory `parent`, counted as one kernel reference where the
  // daemon keeps a record (mirrored and unlisted nodes).
  Result<Target> Lookup(const Target& parent, const std::string& name);
  // The current generation of a container directory, or the generation of a
  // node inside one when it is still current (ESTALE otherwise).
  Result<std::shared_ptr<Generation>> LiveGeneration(const Target& target);
  // The entry of a container path (one per path while anything keeps it).
  std::shared_ptr<ContainerEntry> EntryFor(const std::string& path);
  uint64_t stale_replies() const { return stale_replies_.load(std::memory_order_relaxed); }
  // The source's attributes of `path`, remembered in `held` (a node the
  // kernel holds, or null). While the source cannot be reached, or (remote)
  // keeps the caller waiting past a grace period, a held node answers with
  // its last attributes.
  Result<struct stat> SourceStat(PathNode* held, const std::string& path);

 private:
  Result<Target> LookupMirrored(const Target& parent, const std::string& name);
  Result<Target> LookupInside(const Target& parent, const std::string& name);
  Status Stale(const Generation& generation);

  const source::Tree* const tree_;
  const views::Registry* const views_;
  InodeTable* const inodes_;
  EntryContext* const entries_context_;
  const std::shared_ptr<PathNode> root_;
  std::mutex entries_mutex_;  // leaf lock; guards entries_, recent_
  std::unordered_map<std::string, std::weak_ptr<ContainerEntry>> entries_;
  size_t entries_swept_at_ = 0;
  // Most recent first, at most recent_entries of them.
  util::WeightedLru<const ContainerEntry*, std::shared_ptr<ContainerEntry>> recent_;
  std::atomic<uint64_t> stale_replies_{0};
  // Remote: one stat per path at a time, on EntryContext::background.
  SingleFlight<std::string, Result<struct stat>> stats_{"stat"};
};

}  // namespace b2ndfs::vfs
