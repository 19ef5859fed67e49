#include "inode_table.h"

#include <algorithm>
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

InodeTable::InodeTable(InodeNumbering numbering)
    : counted_end_(numbering.ino32 ? PathNumbers::kNarrowBase : PathNumbers::kWideBase),
      numbers_(numbering.ino32, numbering.narrow_names, numbering.max_names),
      generations_(std::make_shared<GenerationIndex>()) {}

Ino InodeTable::PathIno(const std::string& path, mode_t type) {
  const PathNumbers::Key key = numbers_.KeyOf(path, S_ISDIR(type));
  std::lock_guard<std::mutex> lock(mutex_);
  return numbers_.Number(key);
}

Ino InodeTable::NextCounted(uint64_t count) {
  count = std::max<uint64_t>(count, 1);
  // Counted numbers stay below the path-bound ranges while they can, and go
  // on far above them once a long-lived mount used them up.
  if (next_ < counted_end_ && next_ + count > counted_end_) next_ = kCountedOverflow;
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
  const PathNumbers::Key number_key = numbers_.KeyOf(candidate->path, directory);
  const std::string key = CountedKey(candidate->path, directory);
  std::lock_guard<std::mutex> lock(mutex_);
  auto counted = counted_paths_.find(key);
  Ino ino = counted != counted_paths_.end() ? counted->second : numbers_.Number(number_key);
  auto it = ino == 0 ? paths_.end() : paths_.find(ino);
  if (ino == 0 || (it != paths_.end() && it->second->path != candidate->path)) {
    // No number of its own (the table is full), or a held path has the same
    // fingerprint: a counted number while held.
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
  const PathNumbers::Key keys[2] = {numbers_.KeyOf(path, true), numbers_.KeyOf(path, false)};
  std::lock_guard<std::mutex> lock(mutex_);
  for (const bool directory : {true, false}) {
    auto counted = counted_paths_.find(CountedKey(path, directory));
    const Ino ino =
        counted != counted_paths_.end() ? counted->second : numbers_.Find(keys[directory ? 0 : 1]);
    if (ino == 0) continue;
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

size_t InodeTable::path_numbers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return numbers_.size();
}

size_t InodeTable::path_number_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return numbers_.bytes();
}

size_t InodeTable::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return paths_.size() + unlisted_.size();
}

}  // namespace b2ndfs::vfs
