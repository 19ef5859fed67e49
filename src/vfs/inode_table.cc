#include "inode_table.h"

#include <algorithm>
#include <functional>
#include <vector>

namespace b2ndfs::vfs {

void GenerationIndex::Add(Ino base, uint64_t count, const std::weak_ptr<Generation>& generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  blocks_[base] = Block{count, generation};
}

void GenerationIndex::Remove(Ino base) {
  std::lock_guard<std::mutex> lock(mutex_);
  blocks_.erase(base);
}

std::shared_ptr<Generation> GenerationIndex::Find(Ino ino) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.upper_bound(ino);
  if (it == blocks_.begin()) return nullptr;
  --it;
  if (ino - it->first >= it->second.count) return nullptr;
  return it->second.generation.lock();
}

size_t GenerationIndex::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return blocks_.size();
}

InodeTable::InodeTable() : generations_(std::make_shared<GenerationIndex>()) {}

Ino InodeTable::PathIno(const std::string& path, mode_t type) const {
  // A path that changed kind (a file replaced by a directory) is another
  // inode. std::hash is stable for the process's life, which is all that
  // numbers need.
  const uint64_t h = std::hash<std::string>{}(path) ^ (S_ISDIR(type) ? 0x9e3779b97f4a7c15ULL : 0);
  return kPathBase + ((h ^ (h >> 31)) & (kPathBase - 1));
}

Ino InodeTable::NextCounted(uint64_t count) {
  count = std::max<uint64_t>(count, 1);
  // Counted numbers stay below the path-bound range while they can, and go
  // on above it (numbers past 32 bits) once a long-lived mount used them up.
  if (next_ < kPathBase && next_ + count > kPathBase) next_ = 2 * kPathBase;
  const Ino base = next_;
  next_ += count;
  return base;
}

namespace {

// counted_paths_'s key: a path and its kind.
std::string CountedKey(const std::string& path, bool directory) {
  return path + '\0' + (directory ? 'd' : 'f');
}

}  // namespace

std::shared_ptr<PathNode> InodeTable::RefPath(std::shared_ptr<PathNode> candidate) {
  const bool directory = candidate->type != NodeType::kFile;
  const Ino hashed = PathIno(candidate->path, directory ? S_IFDIR : S_IFREG);
  const std::string key = CountedKey(candidate->path, directory);
  std::lock_guard<std::mutex> lock(mutex_);
  auto counted = counted_paths_.find(key);
  Ino ino = counted != counted_paths_.end() ? counted->second : hashed;
  auto it = paths_.find(ino);
  if (it != paths_.end() && it->second->path != candidate->path) {
    // Another held path has this hash: this one is counted while held.
    ino = NextCounted(1);
    counted_paths_[key] = ino;
    it = paths_.end();
  }
  if (it == paths_.end()) {
    candidate->ino = ino;
    candidate->nlookup = 0;
    it = paths_.emplace(ino, std::move(candidate)).first;
  }
  ++it->second->nlookup;
  return it->second;
}

std::shared_ptr<PathNode> InodeTable::FindPath(Ino ino) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = paths_.find(ino);
  return it == paths_.end() ? nullptr : it->second;
}

std::shared_ptr<PathNode> InodeTable::FindPathByName(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const bool directory : {true, false}) {
    auto counted = counted_paths_.find(CountedKey(path, directory));
    const Ino ino = counted != counted_paths_.end() ? counted->second
                                                    : PathIno(path, directory ? S_IFDIR : S_IFREG);
    auto it = paths_.find(ino);
    if (it != paths_.end() && it->second->path == path) return it->second;
  }
  return nullptr;
}

Ino InodeTable::AddUnlisted(std::weak_ptr<Generation> generation,
                            std::shared_ptr<const views::Node> view) {
  auto node = std::make_shared<UnlistedNode>();
  node->generation = std::move(generation);
  node->view = std::move(view);
  node->nlookup = 1;
  std::lock_guard<std::mutex> lock(mutex_);
  node->ino = NextCounted(1);
  const Ino ino = node->ino;
  unlisted_.emplace(ino, std::move(node));
  return ino;
}

std::shared_ptr<const UnlistedNode> InodeTable::FindUnlisted(Ino ino) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = unlisted_.find(ino);
  return it == unlisted_.end() ? nullptr : it->second;
}

Ino InodeTable::Reserve(uint64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  return NextCounted(count);
}

void InodeTable::Forget(Ino ino, uint64_t nlookup) {
  // Released after the lock: a container entry may go with its node.
  std::shared_ptr<PathNode> dropped_path;
  std::shared_ptr<UnlistedNode> dropped_unlisted;
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = paths_.find(ino); it != paths_.end()) {
    PathNode& node = *it->second;
    node.nlookup = nlookup >= node.nlookup ? 0 : node.nlookup - nlookup;
    if (node.nlookup == 0) {
      auto counted = counted_paths_.find(CountedKey(node.path, node.type != NodeType::kFile));
      if (counted != counted_paths_.end() && counted->second == ino) counted_paths_.erase(counted);
      dropped_path = std::move(it->second);
      paths_.erase(it);
    }
    return;
  }
  if (auto it = unlisted_.find(ino); it != unlisted_.end()) {
    UnlistedNode& node = *it->second;
    node.nlookup = nlookup >= node.nlookup ? 0 : node.nlookup - nlookup;
    if (node.nlookup == 0) {
      dropped_unlisted = std::move(it->second);
      unlisted_.erase(it);
    }
  }
  // Numbers in a generation's block hold nothing to forget.
}

size_t InodeTable::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return paths_.size() + unlisted_.size();
}

}  // namespace b2ndfs::vfs
