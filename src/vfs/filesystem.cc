#include "b2ndfs/vfs/filesystem.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <set>
#include <utility>

#include "attributes.h"
#include "b2ndfs/source/declared_file.h"
#include "b2ndfs/source/tree.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/util/task_pool.h"
#include "b2ndfs/views/view.h"
#include "carrier_operands.h"
#include "computed_file.h"
#include "generation.h"
#include "inode_table.h"
#include "listings.h"
#include "mirror.h"
#include "read_ahead.h"
#include "resolver.h"
#include "xattr.h"

namespace b2ndfs::vfs {
namespace {

// Entries of the recently used list of containers (beyond the ones the
// kernel holds): a container forgotten and looked up again within that many
// others finds its generation and cached blocks again.
constexpr size_t kRecentEntriesMin = 64;

}  // namespace

Filesystem::Filesystem(Options options, store::StoreContext* store)
    : options_(std::move(options)),
      store_(store),
      views_(options_.views ? options_.views : views::Registry::Default()) {
  tree_ = options_.tree ? options_.tree
                        : source::MakeLocalTree(options_.source, options_.max_descriptors);
  // Opened containers may hold up to a quarter of the cache in metadata.
  const int64_t cache_bytes =
      store_->cache != nullptr ? static_cast<int64_t>(store_->cache->capacity_bytes()) : 0;
  const size_t max_open =
      options_.max_open > 0 ? static_cast<size_t>(options_.max_open) : kDefaultMaxOpen;
  open_containers_ =
      std::make_unique<OpenContainers>(max_open, std::max<int64_t>(cache_bytes / 4, 1 << 20));
  inodes_ = std::make_unique<InodeTable>(InodeNumbering{options_.ino32});
  entry_context_ = std::make_unique<EntryContext>();
  entry_context_->tree = tree_.get();
  entry_context_->services =
      GenerationServices{store_, views_.get(), open_containers_.get(), inodes_->generation_index()};
  // (The resolver is made below; operands are opened only after.)
  entry_context_->services.operands = MakeMountOperands(
      tree_.get(), [this](const std::string& path) { return resolver_->EntryFor(path); });
  entry_context_->inodes = inodes_.get();
  entry_context_->replaced = [this](const ContainerEntry& entry, const Generation& old,
                                    const store::Container* fresh) {
    GenerationReplaced(entry, old, fresh);
  };
  auto root = std::make_shared<PathNode>();
  root->ino = kRootIno;
  root->path = tree_->root();
  root->nlookup = 1;  // the root is never forgotten
  auto st = tree_->Stat(root->path);
  const bool root_container =
      st.ok() && (S_ISREG(st->st_mode) || HasContainerExtension(root->path));
  root->type = root_container ? NodeType::kContainer : NodeType::kDir;
  resolver_ =
      std::make_unique<Resolver>(tree_.get(), views_.get(), inodes_.get(), entry_context_.get(),
                                 root, std::max(kRecentEntriesMin, max_open));
  if (root_container) root->entry = resolver_->EntryFor(root->path);
  if (tree_->costs().requests_may_stall) {
    background_ = std::make_unique<TaskPool>("background probe", options_.background_threads > 0
                                                                     ? options_.background_threads
                                                                     : kDefaultBackgroundThreads);
    entry_context_->background = background_.get();
    entry_context_->healthy_grace = std::chrono::milliseconds(options_.healthy_grace_ms);
    entry_context_->suspect_grace = std::chrono::milliseconds(options_.suspect_grace_ms);
  }
  read_ahead_ = std::make_unique<ReadAheadPolicy>(
      ReadAheadPolicy::Options{options_.max_readahead, cache_bytes});
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  start_time_ns_ = now.tv_sec * 1000000000LL + now.tv_nsec;
}

Filesystem::~Filesystem() {
  // Background calls hold entries: they end first.
  StopBackground();
}

void Filesystem::StopBackground() {
  if (background_) background_->Stop();
}

void Filesystem::SetInvalidateCallback(
    std::function<void(const std::vector<StaleNode>&)> callback) {
  std::shared_ptr<const InvalidateFn> made;
  if (callback) made = std::make_shared<const InvalidateFn>(std::move(callback));
  std::lock_guard<std::mutex> lock(invalidate_mutex_);
  invalidate_.swap(made);
  // The old callback goes with `made`, after the unlock (unless a call in
  // progress still holds it).
}

Status Filesystem::ValidateSource(const std::string& source) { return ValidateLocalSource(source); }

size_t Filesystem::NodeCount() const { return inodes_->size(); }

source::TreeCosts Filesystem::costs() const { return tree_->costs(); }

void Filesystem::SetPagePushCallback(std::function<bool(PagePush)> callback) {
  read_ahead_->SetPush(std::move(callback));
}

void Filesystem::Forget(Ino ino, uint64_t nlookup) {
  if (ino == kRootIno) return;
  inodes_->Forget(ino, nlookup);
}

void Filesystem::GenerationReplaced(const ContainerEntry& entry, const Generation& old,
                                    const store::Container* fresh) {
  generations_replaced_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<const InvalidateFn> invalidate;
  {
    std::lock_guard<std::mutex> lock(invalidate_mutex_);
    invalidate = invalidate_;
  }
  if (!invalidate) return;
  // The kernel holds names inside the container only below a container
  // directory it holds: tell it to drop the directory's attributes and its
  // names (each with everything below it), which the next use looks up
  // again in the new generation. No walk over what the kernel holds.
  Ino dir = 0;
  if (entry.path() == tree_->root()) {
    dir = kRootIno;
  } else if (auto node = inodes_->FindPathByName(entry.path())) {
    dir = node->ino;
  }
  if (dir == 0) return;
  std::set<std::string> names;
  if (auto container = old.IfOpen()) {
    for (auto& name : views_->RootNames(*container)) names.insert(std::move(name));
  }
  if (fresh != nullptr) {
    for (auto& name : views_->RootNames(*fresh)) names.insert(std::move(name));
  }
  std::vector<StaleNode> stale;
  stale.push_back(StaleNode{dir, 0, std::string(), false});
  for (const std::string& name : names) stale.push_back(StaleNode{0, dir, name, true});
  (*invalidate)(stale);
}

Result<struct stat> Filesystem::SourceStat(PathNode& node) {
  // A name the kernel holds keeps the attributes it had while the source
  // cannot be reached (its container may well serve from the cache).
  return resolver_->SourceStat(&node, node.path);
}

Result<Attr> Filesystem::Attributes(const Target& target) {
  Attr attr;
  struct stat& st = attr.st;
  switch (target.type) {
    case NodeType::kControlDir:
    case NodeType::kStatsFile: {
      B2NDFS_ASSIGN_OR_RETURN(const struct stat root, tree_->Stat(tree_->root()));
      const bool directory = target.type == NodeType::kControlDir;
      // The log names other users' files: the daemon's user's alone unless
      // log_access=all (README.md, "Logs").
      const bool private_log = target.ino == kLogFileIno && !options_.log_readable_by_all;
      return ControlAttributes(
          root, target.ino, directory, private_log,
          directory ? 0 : static_cast<int64_t>(ControlFileText(target.ino).size()));
    }
    case NodeType::kDir:
    case NodeType::kFile: {
      B2NDFS_ASSIGN_OR_RETURN(st, SourceStat(*target.path));
      if ((target.type == NodeType::kDir) != S_ISDIR(st.st_mode)) {
        return NotFound(target.path->path);
      }
      st.st_ino = target.ino;
      st.st_mode &= ~static_cast<mode_t>(0222);  // read-only mount
      attr.timeout = 1.0;
      return attr;
    }
    case NodeType::kContainer: {
      // The source's attributes, which may change with it (a short timeout).
      B2NDFS_ASSIGN_OR_RETURN(const struct stat src, SourceStat(*target.path));
      st = ContainerStat(src, target.ino, /*directory=*/true, 0);
      attr.timeout = 1.0;
      return attr;
    }
    case NodeType::kInside:
      return InsideAttributes(*target.generation, *target.container, *target.view, target.ino,
                              options_.attr_timeout);
  }
  return Status(EIO, "unknown node type");
}

Result<Attr> Filesystem::Lookup(Ino parent_ino, const std::string& name) {
  B2NDFS_ASSIGN_OR_RETURN(Target parent, resolver_->Find(parent_ino));
  B2NDFS_ASSIGN_OR_RETURN(Target target, resolver_->Lookup(parent, name));
  auto attributes = Attributes(target);
  if (!attributes.ok()) Forget(target.ino, 1);
  return attributes;
}

Result<Attr> Filesystem::GetAttr(Ino ino, const FileHandle* open) {
  if (open != nullptr && open->view() != nullptr && open->view()->ino == ino) {
    // An open file's own version, as for an unlinked file; not to be cached
    // once its version is no longer the container's.
    const ViewHandle& h = *open->view();
    return InsideAttributes(*h.generation, *h.container, *h.view, ino,
                            h.generation->dead() ? 0 : options_.attr_timeout);
  }
  auto target = resolver_->Find(ino);
  if (!target.ok() && target.status().error_number() == ESTALE) {
    // A file of a replaced version that is still open somewhere: its own
    // attributes, not to be cached. Lookups of its name no longer reach it.
    auto held = resolver_->Find(ino, /*allow_dead=*/true);
    if (held.ok() && held->type == NodeType::kInside && held->generation->dead()) {
      return InsideAttributes(*held->generation, *held->container, *held->view, ino, 0);
    }
  }
  if (!target.ok()) return target.status();
  return Attributes(*target);
}

namespace {

// The container whose attributes the xattrs of `ino` show: a container's
// directory's (its live generation's) or that of a file inside one; null for
// other nodes.
Result<std::shared_ptr<const store::Container>> XattrContainer(Resolver& resolver, Ino ino) {
  B2NDFS_ASSIGN_OR_RETURN(Target target, resolver.Find(ino));
  if (target.type == NodeType::kInside) return target.container;
  if (target.type != NodeType::kContainer) return std::shared_ptr<const store::Container>();
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<Generation> generation, resolver.LiveGeneration(target));
  return generation->Container();
}

}  // namespace

Result<std::string> Filesystem::GetXattr(Ino ino, const std::string& name) {
  // First, before any lock or stat. `ls -l` asks for security.selinux and
  // system.posix_acl_access of every entry until an answer is EOPNOTSUPP
  // (ENODATA would cost two requests per entry): that is what the kernel
  // answered for us before getxattr was implemented, and this mount has
  // neither labels nor ACLs.
  if (IsUnsupportedXattr(name)) return Status(EOPNOTSUPP, name);
  if (!IsB2ndXattr(name)) return Status(ENODATA, name);
  B2NDFS_ASSIGN_OR_RETURN(const auto container, XattrContainer(*resolver_, ino));
  if (container == nullptr) return Status(ENODATA, name);
  return ContainerXattr(*container, name);
}

Result<std::string> Filesystem::ListXattr(Ino ino) {
  B2NDFS_ASSIGN_OR_RETURN(const auto container, XattrContainer(*resolver_, ino));
  // Other nodes, and an undecodable container, have no shape to tell.
  if (container == nullptr || !container->ok()) return std::string();
  return ContainerXattrNames();
}

Result<std::shared_ptr<DirListing>> Filesystem::OpenDir(Ino ino) {
  B2NDFS_ASSIGN_OR_RETURN(Target target, resolver_->Find(ino));
  switch (target.type) {
    case NodeType::kFile:
    case NodeType::kStatsFile:
      return Status(ENOTDIR, "not a directory");
    case NodeType::kControlDir:
      return std::shared_ptr<DirListing>(std::make_shared<VectorListing>(std::vector<DirEntry>{
          DirEntry{"stats", S_IFREG, kStatsFileIno}, DirEntry{"log", S_IFREG, kLogFileIno}}));
    case NodeType::kDir:
      return ListMirroredDir(tree_, inodes_.get(), target.path->path);
    case NodeType::kContainer:
    case NodeType::kInside: {
      std::shared_ptr<const views::Node> directory;
      if (target.type == NodeType::kContainer) {
        B2NDFS_ASSIGN_OR_RETURN(target.generation, resolver_->LiveGeneration(target));
        B2NDFS_ASSIGN_OR_RETURN(target.container, target.generation->Container());
        directory = views_->Root();
      } else {
        if (!target.view->IsDirectory()) return Status(ENOTDIR, target.view->name());
        directory = target.view;
      }
      return ListViewDir(std::move(target.generation), std::move(target.container),
                         std::move(directory), options_.attr_timeout);
    }
  }
  return Status(EIO, "unknown node type");
}

std::shared_ptr<ReadPattern> Filesystem::PatternFor(Ino ino) {
  std::lock_guard<std::mutex> lock(patterns_mutex_);
  auto& weak = patterns_[ino];
  auto pattern = weak.lock();
  if (!pattern) {
    pattern = std::make_shared<ReadPattern>();
    weak = pattern;
  }
  // Closed files' patterns go once the map has doubled since the last sweep.
  if (patterns_.size() > 2 * patterns_swept_at_ + 64) {
    std::erase_if(patterns_, [](const auto& kv) { return kv.second.expired(); });
    patterns_swept_at_ = patterns_.size();
  }
  return pattern;
}

Result<FileHandle> Filesystem::Open(Ino ino, int flags) {
  if ((flags & O_ACCMODE) != O_RDONLY) return Status(EROFS, "read-only file system");
  B2NDFS_ASSIGN_OR_RETURN(Target target, resolver_->Find(ino));
  FileHandle handle;
  handle.remote = tree_->costs().requests_may_stall;
  switch (target.type) {
    case NodeType::kFile: {
      PlainHandle plain;
      B2NDFS_ASSIGN_OR_RETURN(plain.file, tree_->OpenFile(target.path->path));
      // A file the tree declares is computed here from containers of the
      // mount (a CTable's valid/NAME.npy: computed_file.h).
      if (const auto* declared = dynamic_cast<const source::DeclaredFile*>(plain.file.get())) {
        B2NDFS_ASSIGN_OR_RETURN(plain.file, OpenComputedFile(*declared, target.path->path, store_,
                                                             [this](const std::string& path) {
                                                               return resolver_->EntryFor(path);
                                                             }));
      }
      // The kernel keeps its cached pages only if the file is the version
      // they came from.
      {
        std::lock_guard<std::mutex> lock(target.path->mutex);
        handle.keep_cache = target.path->cached_version == plain.file->version();
        target.path->cached_version = plain.file->version();
      }
      handle.file = std::move(plain);
      return handle;
    }
    case NodeType::kStatsFile:
      handle.file =
          SnapshotHandle{std::make_shared<const std::string>(ControlFileText(target.ino))};
      handle.remote = false;    // made here, in memory
      handle.direct_io = true;  // its size changes between opens
      return handle;
    case NodeType::kInside: {
      if (target.view->IsDirectory()) return Status(EISDIR, target.view->name());
      ViewHandle view;
      view.version_hold = target.generation->Hold();
      view.ino = ino;
      view.ino_base = target.generation->ino_base();
      view.pattern = PatternFor(ino);
      view.generation = std::move(target.generation);
      view.container = std::move(target.container);
      view.view = std::move(target.view);
      read_ahead_->OnOpen(view, handle.remote);
      // The inode belongs to one generation: its cached pages are always right.
      handle.keep_cache = true;
      handle.file = std::move(view);
      return handle;
    }
    case NodeType::kDir:
    case NodeType::kContainer:
    case NodeType::kControlDir:
      return Status(EISDIR, "is a directory");
  }
  return Status(EIO, "unknown node type");
}

Result<size_t> Filesystem::Read(const FileHandle& handle, int64_t offset, size_t length,
                                uint8_t* out) {
  if (const auto* snapshot = std::get_if<SnapshotHandle>(&handle.file)) {
    const std::string& text = *snapshot->text;
    if (offset < 0 || offset >= static_cast<int64_t>(text.size())) return size_t{0};
    const size_t n = std::min(length, text.size() - static_cast<size_t>(offset));
    std::memcpy(out, text.data() + offset, n);
    return n;
  }
  if (const auto* plain = std::get_if<PlainHandle>(&handle.file)) {
    return plain->file->ReadUpTo(offset, out, length);
  }
  const ViewHandle& view = std::get<ViewHandle>(handle.file);
  // A remote reader's read-ahead is planned before its read is served: its
  // requests then go out while this read waits for its own.
  if (handle.remote) read_ahead_->OnRead(view, offset, length, true);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  auto n = view.view->Read(*view.container, offset, length, out);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  read_latency_.Record(static_cast<uint64_t>(
      ((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec)) / 1000));
  if (!handle.remote && n.ok() && *n > 0) read_ahead_->OnRead(view, offset, *n, false);
  return n;
}

}  // namespace b2ndfs::vfs
