#include "resolver.h"

#include <optional>

#include "b2ndfs/source/tree.h"
#include "b2ndfs/views/view.h"
#include "mirror.h"
#include "zarr_group_lookup.h"

namespace b2ndfs::vfs {

Resolver::Resolver(const source::Tree* tree, const views::Registry* views, InodeTable* inodes,
                   EntryContext* entries, std::shared_ptr<PathNode> root, size_t recent_entries)
    : tree_(tree),
      views_(views),
      inodes_(inodes),
      entries_context_(entries),
      root_(std::move(root)),
      recent_({std::max<size_t>(recent_entries, 1), decltype(recent_)::kUnbounded}) {}

std::shared_ptr<ContainerEntry> Resolver::EntryFor(const std::string& path) {
  decltype(recent_)::Entries dropped;  // released after the lock
  std::lock_guard<std::mutex> lock(entries_mutex_);
  auto& weak = entries_[path];
  auto entry = weak.lock();
  if (!entry) {
    entry = std::make_shared<ContainerEntry>(path, entries_context_);
    weak = entry;
  }
  // Recently used entries stay (with their generations and cached blocks)
  // after the kernel forgets them; the least recent beyond the bound go.
  if (recent_.Find(entry.get()) == nullptr) recent_.Insert(entry.get(), entry, 1, &dropped);
  // Expired names go once the map has doubled since the last sweep.
  if (entries_.size() > 2 * entries_swept_at_ + 64) {
    std::erase_if(entries_, [](const auto& kv) { return kv.second.expired(); });
    entries_swept_at_ = entries_.size();
  }
  return entry;
}

Result<struct stat> Resolver::SourceStat(PathNode* held, const std::string& path) {
  std::optional<struct stat> known;
  if (held != nullptr) {
    std::lock_guard<std::mutex> lock(held->mutex);
    known = held->last_stat;
  }
  Result<struct stat> st = Status(EIO, "unset");
  TaskPool* background = entries_context_->background;
  if (known && background != nullptr && tree_->costs().requests_may_stall) {
    const source::Tree* tree = tree_;
    bool joined = false;
    auto answer = stats_.Launch(
        path, [tree, path] { return tree->Stat(path); },
        [background](std::function<void()> task) { return background->Submit(std::move(task)); },
        &joined);
    if (!entries_context_->WaitOrSuspect(answer, joined)) return *known;
    st = answer->Wait();
  } else {
    st = tree_->Stat(path);
  }
  if (held == nullptr) return st;
  std::lock_guard<std::mutex> lock(held->mutex);
  if (st.ok()) {
    held->last_stat = *st;
  } else if (!source::IsGone(st.status()) && held->last_stat) {
    // Trouble reaching the source: the attributes it had.
    return *held->last_stat;
  }
  return st;
}

Status Resolver::Stale(const Generation& generation) {
  stale_replies_.fetch_add(1, std::memory_order_relaxed);
  return Status(ESTALE, generation.path() +
                            " changed: a newer version replaced the one this name belonged to");
}

Result<std::shared_ptr<Generation>> Resolver::LiveGeneration(const Target& target) {
  if (target.type == NodeType::kContainer) return target.path->entry->Current();
  const std::shared_ptr<Generation>& generation = target.generation;
  if (generation->dead()) return Stale(*generation);
  auto entry = generation->entry();
  if (entry == nullptr) return Stale(*generation);
  auto current = entry->Current();
  if (generation->dead() || (current.ok() && *current != generation)) return Stale(*generation);
  if (!current.ok()) return current.status();
  return current;
}

Result<Target> Resolver::Find(Ino ino, bool allow_dead) {
  Target target;
  target.ino = ino;
  if (ino == kRootIno) {
    target.type = root_->type;
    target.path = root_;
    return target;
  }
  if (ino == kControlDirIno || ino == kStatsFileIno || ino == kLogFileIno) {
    target.type = ino == kControlDirIno ? NodeType::kControlDir : NodeType::kStatsFile;
    return target;
  }
  if (inodes_->IsPathIno(ino) || !inodes_->generations().Find(ino)) {
    if (auto path = inodes_->FindPath(ino)) {
      target.type = path->type;
      target.path = std::move(path);
      return target;
    }
    if (auto unlisted = inodes_->FindUnlisted(ino)) {
      target.type = NodeType::kInside;
      target.generation = unlisted->generation.lock();
      target.view = unlisted->view;
      if (target.generation == nullptr) return Status(ESTALE, "stale handle");
    } else {
      return Status(ESTALE, "stale handle");
    }
  } else {
    target.type = NodeType::kInside;
    target.generation = inodes_->generations().Find(ino);
    if (target.generation == nullptr) return Status(ESTALE, "stale handle");
  }
  if (!allow_dead) B2NDFS_RETURN_IF_ERROR(LiveGeneration(target).status());
  B2NDFS_ASSIGN_OR_RETURN(target.container, target.generation->Container());
  if (target.view == nullptr) {
    auto view = views_->NodeAt(*target.container, ino - target.generation->ino_base());
    // A number of the block that names nothing was never handed out.
    if (!view.ok()) return Status(ESTALE, "stale handle");
    target.view = std::move(view).value();
  }
  return target;
}

Result<Target> Resolver::Lookup(const Target& parent, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return NotFound(name);
  }
  if (parent.ino == kRootIno && name == kControlDirName) {
    Target target;
    target.type = NodeType::kControlDir;
    target.ino = kControlDirIno;
    return target;
  }
  switch (parent.type) {
    case NodeType::kControlDir: {
      if (name != "stats" && name != "log") return NotFound(name);
      Target target;
      target.type = NodeType::kStatsFile;
      target.ino = name == "log" ? kLogFileIno : kStatsFileIno;
      return target;
    }
    case NodeType::kDir:
      return LookupMirrored(parent, name);
    case NodeType::kContainer:
      return LookupInside(parent, name);
    case NodeType::kInside:
      if (!parent.view->IsDirectory()) return Status(ENOTDIR, name);
      return LookupInside(parent, name);
    case NodeType::kFile:
    case NodeType::kStatsFile:
      return Status(ENOTDIR, name);
  }
  return NotFound(name);
}

Result<Target> Resolver::LookupMirrored(const Target& parent, const std::string& name) {
  const std::string path = parent.path->path + "/" + name;
  // A name the kernel holds is looked up again when its dentry expires:
  // while the source is down it answers with what was known of it.
  auto held = inodes_->FindPathByName(path);
  auto st = SourceStat(held.get(), path);
  if (!st.ok()) {
    // Only a name that is not there is ENOENT: a source that cannot be
    // reached (a remote one) must not make the kernel cache a negative entry.
    const int e = st.status().error_number();
    // A name that is not there may be the directory's Zarr group's.
    if (e == ENOENT) {
      B2NDFS_ASSIGN_OR_RETURN(GroupName group,
                              LookupDirGroup([this](const std::string& p) { return EntryFor(p); },
                                             *tree_, *views_, parent.path->path, name));
      Target target;
      target.type = NodeType::kInside;
      target.ino = inodes_->AddUnlisted(group.generation, group.view);
      target.generation = std::move(group.generation);
      target.container = std::move(group.container);
      target.view = std::move(group.view);
      return target;
    }
    if (e == ENOTDIR || e == ENAMETOOLONG) return NotFound(path);
    return st.status();
  }
  const auto kind = MirroredKind(*tree_, path, name, *st);
  if (!kind) return NotFound(path);  // devices, fifos, sockets are not mirrored
  auto candidate = std::make_shared<PathNode>();
  candidate->path = path;
  candidate->type = *kind == MirroredType::kContainer ? NodeType::kContainer
                    : *kind == MirroredType::kDir     ? NodeType::kDir
                                                      : NodeType::kFile;
  if (candidate->type == NodeType::kContainer) candidate->entry = EntryFor(path);
  auto node = inodes_->RefPath(std::move(candidate));
  Target target;
  target.type = node->type;
  target.ino = node->ino;
  target.path = std::move(node);
  return target;
}

Result<Target> Resolver::LookupInside(const Target& parent, const std::string& name) {
  std::shared_ptr<Generation> generation;
  std::shared_ptr<const store::Container> container;
  if (parent.type == NodeType::kInside) {
    // Find() has just checked that the parent's generation is current.
    generation = parent.generation;
    container = parent.container;
  } else {
    B2NDFS_ASSIGN_OR_RETURN(generation, LiveGeneration(parent));
    B2NDFS_ASSIGN_OR_RETURN(container, generation->Container());
  }
  const views::Node& view_parent =
      parent.type == NodeType::kContainer ? *views_->Root() : *parent.view;
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const views::Node> view,
                          view_parent.Lookup(*container, name));
  Target target;
  target.type = NodeType::kInside;
  target.ino = view->ordinal() == views::kNoOrdinal ? inodes_->AddUnlisted(generation, view)
                                                    : generation->ino_base() + view->ordinal();
  target.generation = std::move(generation);
  target.container = std::move(container);
  target.view = std::move(view);
  return target;
}

}  // namespace b2ndfs::vfs
