#include "b2ndfs/vfs/filesystem.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <utility>

#include "b2ndfs/source/tree.h"
#include "b2ndfs/util/file.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/views/view.h"
#include "generation.h"
#include "mirror.h"
#include "xattr.h"

namespace b2ndfs::vfs {

enum class NodeType {
  kDir,         // a mirrored directory
  kFile,        // a mirrored plain file
  kContainer,   // a container directory (bound to its path)
  kInside,      // a file or directory inside a container (bound to a generation)
  kControlDir,  // .b2ndfs at the root: looked up, never listed
  kStatsFile,   // .b2ndfs/stats
};

struct Filesystem::Node {
  Ino ino = 0;
  Ino parent = 0;
  NodeType type = NodeType::kDir;
  std::string name;
  std::string path;                         // tree path: kDir, kFile, kContainer
  std::shared_ptr<ContainerEntry> entry;    // kContainer, kInside
  std::shared_ptr<Generation> generation;   // kInside
  std::shared_ptr<const views::Node> view;  // kInside
  std::shared_ptr<ReadPattern> pattern;     // kInside files
  uint64_t nlookup = 0;                     // guarded by Filesystem::mutex_
  // kFile: the version the kernel's cached pages are of; guarded by mutex_.
  source::Signature cached_version;
};

namespace {

// A remote file's read-ahead window is this many times max_readahead.
constexpr int64_t kRemoteReadaheadFactor = 4;
// Read-ahead goes on into at most this many files (the one read included).
constexpr int kReadAheadMaxFiles = 16;
// Files pushed into the kernel's page cache ahead of their reader are at
// most this big (each is rendered whole into one buffer).
constexpr int64_t kPushMaxBytes = 16 << 20;
// How many files ahead of a reader are pushed: two, so that the FUSE layer
// renders and stores one while its reader reads the file before it, and is
// still a file ahead when rendering takes longer than reading.
constexpr int kPushAheadFiles = 2;

void SetPushed(ReadPattern& pattern, bool pushed) {
  std::lock_guard<std::mutex> lock(pattern.mutex);
  pattern.pushed = pushed;
}

bool StatPath(const std::string& path, struct stat* st) { return ::stat(path.c_str(), st) == 0; }

Status Errno(const std::string& what) {
  const int e = errno;
  return Status(e, what + ": " + std::strerror(e));
}

// Pseudo paths for the control files (no real path starts with NUL).
const std::string kControlDirKey = std::string(1, '\0') + "control";
const std::string kStatsFileKey = std::string(1, '\0') + "stats";

// A view directory's listing, numbered from its generation's inode block.
class ViewListing : public DirListing {
 public:
  ViewListing(std::shared_ptr<const views::Listing> listing, Ino ino_base)
      : listing_(std::move(listing)), ino_base_(ino_base) {}
  size_t size() const override { return listing_->size(); }
  DirEntry at(size_t index) const override {
    views::ListEntry e = listing_->at(index);
    return DirEntry{std::move(e.name), static_cast<mode_t>(e.directory ? S_IFDIR : S_IFREG),
                    e.ordinal == views::kNoOrdinal ? 0 : ino_base_ + e.ordinal};
  }
  bool cheap_lookups() const override { return true; }

 private:
  std::shared_ptr<const views::Listing> listing_;
  Ino ino_base_;
};

}  // namespace

Filesystem::Filesystem(Options options, store::StoreContext* store)
    : options_(std::move(options)), store_(store), views_(views::Registry::Default()) {
  tree_ = options_.tree ? options_.tree
                        : source::MakeLocalTree(options_.source, options_.max_descriptors);
  // Opened containers may hold up to a quarter of the cache in metadata.
  const int64_t cache_bytes =
      store_->cache != nullptr ? static_cast<int64_t>(store_->cache->capacity_bytes()) : 0;
  open_containers_ = std::make_unique<OpenContainers>(
      options_.max_open > 0 ? static_cast<size_t>(options_.max_open) : kDefaultMaxOpen,
      std::max<int64_t>(cache_bytes / 4, 1 << 20));
  auto root = std::make_shared<Node>();
  root->ino = kRootIno;
  root->parent = kRootIno;
  root->path = tree_->root();
  auto st = tree_->Stat(root->path);
  if (st.ok() && (S_ISREG(st->st_mode) || HasContainerExtension(root->path))) {
    root->type = NodeType::kContainer;
    root->entry = std::make_shared<ContainerEntry>(root->path, tree_.get());
  }
  root->nlookup = 1;  // the root is never forgotten
  nodes_[kRootIno] = root;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  start_time_ns_ = now.tv_sec * 1000000000LL + now.tv_nsec;
}

Filesystem::~Filesystem() = default;

Status Filesystem::ValidateSource(const std::string& source) {
  struct stat st;
  if (!StatPath(source, &st)) return Errno("source " + source);
  if (S_ISDIR(st.st_mode)) {
    if (::access(source.c_str(), R_OK | X_OK) != 0) {
      return Errno("source " + source + " cannot be listed");
    }
    return Status::Ok();
  }
  if (S_ISREG(st.st_mode)) {
    if (::access(source.c_str(), R_OK) != 0) return Errno("source " + source + " cannot be read");
    return Status::Ok();
  }
  return InvalidArgument("source " + source + " is neither a directory nor a container file");
}

std::shared_ptr<Filesystem::Node> Filesystem::Find(Ino ino) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? nullptr : it->second;
}

size_t Filesystem::NodeCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return nodes_.size();
}

Ino Filesystem::ReserveInos(uint64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Ino base = next_ino_;
  next_ino_ += std::max<uint64_t>(count, 1);
  return base;
}

Ino Filesystem::InoForPath(const std::string& path, mode_t type) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = path_inos_.try_emplace(path, PathIno{0, type});
  // A path that changed kind (a file replaced by a directory) is a new inode.
  if (inserted || it->second.type != type) it->second = PathIno{next_ino_++, type};
  return it->second.ino;
}

std::shared_ptr<ContainerEntry> Filesystem::EntryFor(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& weak = entries_[path];
  auto entry = weak.lock();
  if (!entry) {
    entry = std::make_shared<ContainerEntry>(path, tree_.get());
    weak = entry;
  }
  return entry;
}

// Registers `node` under its inode number, or counts one more lookup of the
// node already there.
std::shared_ptr<Filesystem::Node> Filesystem::Intern(std::shared_ptr<Node> node) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = nodes_.try_emplace(node->ino, node);
  ++it->second->nlookup;
  return it->second;
}

void Filesystem::Forget(Ino ino, uint64_t nlookup) {
  std::shared_ptr<Node> dropped;  // released after the lock
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end() || ino == kRootIno) return;
  auto& node = it->second;
  node->nlookup = nlookup >= node->nlookup ? 0 : node->nlookup - nlookup;
  if (node->nlookup == 0) {
    if (node->type == NodeType::kContainer) {
      auto entry = entries_.find(node->path);
      if (entry != entries_.end() && entry->second.use_count() <= 1) entries_.erase(entry);
    }
    dropped = std::move(node);
    nodes_.erase(it);
  }
}

Result<std::shared_ptr<Filesystem::Node>> Filesystem::Resolve(const std::shared_ptr<Node>& parent,
                                                              const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return NotFound(name);
  }
  if (parent->ino == kRootIno && name == kControlDirName) {
    auto node = std::make_shared<Node>();
    node->type = NodeType::kControlDir;
    node->parent = parent->ino;
    node->name = name;
    node->ino = InoForPath(kControlDirKey, S_IFDIR);
    return node;
  }
  switch (parent->type) {
    case NodeType::kControlDir: {
      if (name != "stats") return NotFound(name);
      auto node = std::make_shared<Node>();
      node->type = NodeType::kStatsFile;
      node->parent = parent->ino;
      node->name = name;
      node->ino = InoForPath(kStatsFileKey, S_IFREG);
      return node;
    }
    case NodeType::kDir:
      return ResolveMirrored(parent, name);
    case NodeType::kContainer:
      return ResolveInside(parent, name);
    case NodeType::kInside:
      if (!parent->view->IsDirectory()) return Status(ENOTDIR, name);
      return ResolveInside(parent, name);
    case NodeType::kFile:
    case NodeType::kStatsFile:
      return Status(ENOTDIR, name);
  }
  return NotFound(name);
}

Result<std::shared_ptr<Filesystem::Node>> Filesystem::ResolveMirrored(
    const std::shared_ptr<Node>& parent, const std::string& name) {
  const std::string path = parent->path + "/" + name;
  auto st = tree_->Stat(path);
  if (!st.ok()) {
    // Only a name that is not there is ENOENT: a source that cannot be
    // reached (a remote one) must not make the kernel cache a negative entry.
    const int e = st.status().error_number();
    if (e == ENOENT || e == ENOTDIR || e == ENAMETOOLONG) return NotFound(path);
    return st.status();
  }
  auto node = std::make_shared<Node>();
  node->parent = parent->ino;
  node->name = name;
  node->path = path;
  const auto kind = MirroredKind(name, *st);
  if (!kind) return NotFound(path);  // devices, fifos, sockets are not mirrored
  node->type = *kind == MirroredType::kContainer ? NodeType::kContainer
               : *kind == MirroredType::kDir     ? NodeType::kDir
                                                 : NodeType::kFile;
  node->ino = InoForPath(path, *kind == MirroredType::kFile ? S_IFREG : S_IFDIR);
  if (node->type == NodeType::kContainer) node->entry = EntryFor(path);
  return node;
}

Result<std::shared_ptr<Generation>> Filesystem::LiveGeneration(const Node& node) {
  auto current = node.entry->Current(*this);
  if (node.generation->dead() || (current.ok() && *current != node.generation)) {
    stale_replies_++;
    return Status(ESTALE, node.entry->path() + " changed on disk");
  }
  if (!current.ok()) return current.status();
  return current;
}

Result<std::shared_ptr<Filesystem::Node>> Filesystem::ResolveInside(
    const std::shared_ptr<Node>& parent, const std::string& name) {
  std::shared_ptr<Generation> generation;
  if (parent->type == NodeType::kContainer) {
    B2NDFS_ASSIGN_OR_RETURN(generation, parent->entry->Current(*this));
  } else {
    B2NDFS_ASSIGN_OR_RETURN(generation, LiveGeneration(*parent));
  }
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const store::Container> container,
                          generation->Container(*this));
  const views::Node& view_parent =
      parent->type == NodeType::kContainer ? *views_->Root() : *parent->view;
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const views::Node> view,
                          view_parent.Lookup(*container, name));
  auto node = std::make_shared<Node>();
  node->type = NodeType::kInside;
  node->parent = parent->ino;
  node->name = view->name();  // canonical: "7" is looked up as "007"
  node->entry = parent->entry;
  node->generation = generation;
  node->ino = view->ordinal() == views::kNoOrdinal ? ReserveInos(1)
                                                   : generation->ino_base() + view->ordinal();
  if (!view->IsDirectory()) node->pattern = std::make_shared<ReadPattern>();
  node->view = std::move(view);
  return node;
}

void Filesystem::GenerationReplaced(const ContainerEntry& entry,
                                    const std::shared_ptr<Generation>& old) {
  generations_replaced_++;
  if (auto container = old->IfOpen()) open_containers_->Remove(container.get());
  // Tell the kernel to forget the dead generation's names and pages, and the
  // container directory's attributes.
  std::vector<StaleNode> stale;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [ino, n] : nodes_) {
      if (n->entry.get() != &entry) continue;
      if (n->type == NodeType::kContainer) {
        stale.push_back(StaleNode{ino, n->parent, n->name, false});
      } else if (n->generation == old) {
        stale.push_back(StaleNode{ino, n->parent, n->name, true});
      }
    }
  }
  if (invalidate_ && !stale.empty()) invalidate_(stale);
  // No lock held: other lookups go on while the dead blocks are dropped.
  if (store_->cache != nullptr) store_->cache->EraseContainer(old->cache_id());
}

Result<Attr> Filesystem::ContainerAttributes(Node& node) {
  // Inside a container: owner, group, permissions and times of the source.
  Attr attr;
  struct stat& st = attr.st;
  B2NDFS_ASSIGN_OR_RETURN(struct stat src, node.entry->SourceStat());
  st.st_ino = node.ino;
  st.st_uid = src.st_uid;
  st.st_gid = src.st_gid;
  st.st_atim = src.st_atim;
  st.st_mtim = src.st_mtim;
  st.st_ctim = src.st_ctim;
  st.st_blksize = 128 * 1024;
  const mode_t read_bits = src.st_mode & 0444;
  const bool is_file = node.type == NodeType::kInside && !node.view->IsDirectory();
  if (is_file) {
    std::shared_ptr<const store::Container> container;
    auto generation = LiveGeneration(node);
    if (generation.ok()) {
      B2NDFS_ASSIGN_OR_RETURN(container, (*generation)->Container(*this));
    } else if (generation.status().error_number() == ESTALE &&
               (container = node.generation->IfOpen())) {
      // A file of a dead generation that is still open somewhere (fstat of
      // an open descriptor): its own attributes, as for an unlinked file,
      // not to be cached. Lookups of the name no longer reach this inode.
      attr.timeout = 0;
    } else {
      return generation.status();
    }
    st.st_mode = S_IFREG | read_bits;
    st.st_nlink = 1;
    st.st_size = node.view->Size(*container);
    st.st_blocks = (st.st_size + 511) / 512;
  } else {
    if (node.type == NodeType::kInside) B2NDFS_RETURN_IF_ERROR(LiveGeneration(node).status());
    // Directories get x wherever the source had r.
    st.st_mode = S_IFDIR | read_bits | (read_bits >> 2);
    st.st_nlink = 2;
  }
  // A container directory's attributes come from the source and may change
  // with it; names inside are fixed for their generation.
  if (attr.timeout != 0)
    attr.timeout = node.type == NodeType::kContainer ? 1.0 : options_.attr_timeout;
  return attr;
}

Result<Attr> Filesystem::Attributes(Node& node) {
  Attr attr;
  struct stat& st = attr.st;
  switch (node.type) {
    case NodeType::kControlDir:
    case NodeType::kStatsFile: {
      // Owned like the mount's root; readable by whoever may read the root.
      B2NDFS_ASSIGN_OR_RETURN(st, tree_->Stat(tree_->root()));
      st.st_ino = node.ino;
      st.st_nlink = node.type == NodeType::kControlDir ? 2 : 1;
      if (node.type == NodeType::kControlDir) {
        st.st_mode = S_IFDIR | 0555;
        st.st_size = 0;
      } else {
        st.st_mode = S_IFREG | 0444;
        st.st_size = static_cast<off_t>(StatsJson().size());
      }
      attr.timeout = 0;
      return attr;
    }
    case NodeType::kDir:
    case NodeType::kFile: {
      B2NDFS_ASSIGN_OR_RETURN(st, tree_->Stat(node.path));
      if ((node.type == NodeType::kDir) != S_ISDIR(st.st_mode)) return NotFound(node.path);
      st.st_ino = node.ino;
      st.st_mode &= ~static_cast<mode_t>(0222);  // read-only mount
      attr.timeout = 1.0;
      return attr;
    }
    case NodeType::kContainer:
    case NodeType::kInside:
      return ContainerAttributes(node);
  }
  return Status(EIO, "unknown node type");
}

Result<Attr> Filesystem::Lookup(Ino parent_ino, const std::string& name) {
  auto parent = Find(parent_ino);
  if (!parent) return Status(ESTALE, "stale directory handle");
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<Node> candidate, Resolve(parent, name));
  auto node = Intern(std::move(candidate));
  auto attributes = Attributes(*node);
  if (!attributes.ok()) Forget(node->ino, 1);
  return attributes;
}

Result<Attr> Filesystem::GetAttr(Ino ino) {
  auto node = Find(ino);
  if (!node) return Status(ESTALE, "stale handle");
  return Attributes(*node);
}

Result<std::shared_ptr<const store::Container>> Filesystem::ContainerOf(const Node& node) {
  std::shared_ptr<Generation> generation;
  if (node.type == NodeType::kContainer) {
    B2NDFS_ASSIGN_OR_RETURN(generation, node.entry->Current(*this));
  } else {
    B2NDFS_ASSIGN_OR_RETURN(generation, LiveGeneration(node));
  }
  return generation->Container(*this);
}

Result<std::string> Filesystem::GetXattr(Ino ino, const std::string& name) {
  // First, before any lock or stat. `ls -l` asks for security.selinux and
  // system.posix_acl_access of every entry until an answer is EOPNOTSUPP
  // (ENODATA would cost two requests per entry): that is what the kernel
  // answered for us before getxattr was implemented, and this mount has
  // neither labels nor ACLs.
  if (IsUnsupportedXattr(name)) return Status(EOPNOTSUPP, name);
  if (!IsB2ndXattr(name)) return Status(ENODATA, name);
  auto node = Find(ino);
  if (!node) return Status(ESTALE, "stale handle");
  if (node->type != NodeType::kContainer && node->type != NodeType::kInside) {
    return Status(ENODATA, name);
  }
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const store::Container> container, ContainerOf(*node));
  return ContainerXattr(*container, name);
}

Result<std::string> Filesystem::ListXattr(Ino ino) {
  auto node = Find(ino);
  if (!node) return Status(ESTALE, "stale handle");
  if (node->type != NodeType::kContainer && node->type != NodeType::kInside) {
    return std::string();
  }
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const store::Container> container, ContainerOf(*node));
  // An undecodable container has no shape to tell.
  if (!container->ok()) return std::string();
  return ContainerXattrNames();
}

Result<std::shared_ptr<DirListing>> Filesystem::OpenDir(Ino ino) {
  auto node = Find(ino);
  if (!node) return Status(ESTALE, "stale handle");
  switch (node->type) {
    case NodeType::kFile:
    case NodeType::kStatsFile:
      return Status(ENOTDIR, node->name);
    case NodeType::kControlDir:
      return std::shared_ptr<DirListing>(std::make_shared<VectorListing>(
          std::vector<DirEntry>{DirEntry{"stats", S_IFREG, InoForPath(kStatsFileKey, S_IFREG)}}));
    case NodeType::kDir: {
      B2NDFS_ASSIGN_OR_RETURN(std::vector<source::TreeEntry> entries, tree_->List(node->path));
      std::vector<DirEntry> out;
      out.reserve(entries.size());
      for (auto& e : entries) {
        const auto kind = MirroredKind(e.name, e.st);
        if (!kind) continue;
        const std::string path = node->path + "/" + e.name;
        const mode_t type = *kind == MirroredType::kFile ? S_IFREG : S_IFDIR;
        out.push_back(DirEntry{std::move(e.name), type, InoForPath(path, type)});
      }
      return std::shared_ptr<DirListing>(std::make_shared<VectorListing>(std::move(out)));
    }
    case NodeType::kContainer:
    case NodeType::kInside: {
      std::shared_ptr<Generation> generation;
      if (node->type == NodeType::kContainer) {
        B2NDFS_ASSIGN_OR_RETURN(generation, node->entry->Current(*this));
      } else {
        if (!node->view->IsDirectory()) return Status(ENOTDIR, node->name);
        B2NDFS_ASSIGN_OR_RETURN(generation, LiveGeneration(*node));
      }
      B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const store::Container> container,
                              generation->Container(*this));
      const views::Node& view = node->type == NodeType::kContainer ? *views_->Root() : *node->view;
      B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const views::Listing> listing, view.List(*container));
      return std::shared_ptr<DirListing>(
          std::make_shared<ViewListing>(std::move(listing), generation->ino_base()));
    }
  }
  return Status(EIO, "unknown node type");
}

bool Filesystem::remote() const { return tree_->remote(); }

Result<FileHandle> Filesystem::Open(Ino ino, int flags) {
  auto node = Find(ino);
  if (!node) return Status(ESTALE, "stale handle");
  if ((flags & O_ACCMODE) != O_RDONLY) return Status(EROFS, "read-only file system");
  FileHandle handle;
  handle.remote = tree_->remote();
  switch (node->type) {
    case NodeType::kFile: {
      B2NDFS_ASSIGN_OR_RETURN(handle.passthrough, tree_->OpenFile(node->path));
      // The kernel keeps its cached pages only if the file is the version
      // they came from.
      {
        std::lock_guard<std::mutex> lock(mutex_);
        handle.keep_cache = node->cached_version == handle.passthrough->version();
        node->cached_version = handle.passthrough->version();
      }
      return handle;
    }
    case NodeType::kStatsFile:
      handle.snapshot = std::make_shared<const std::string>(StatsJson());
      handle.remote = false;    // made here, in memory
      handle.direct_io = true;  // its size changes between opens
      return handle;
    case NodeType::kInside: {
      if (node->view->IsDirectory()) return Status(EISDIR, node->name);
      B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<Generation> generation, LiveGeneration(*node));
      B2NDFS_ASSIGN_OR_RETURN(handle.container, generation->Container(*this));
      handle.view = node->view;
      handle.pattern = node->pattern;
      handle.ino_base = generation->ino_base();
      // The inode belongs to one generation: its cached pages are always right.
      handle.keep_cache = true;
      // A reader going through pushed files sends no reads that would plan
      // read-ahead: the open of one carries the push on to the next.
      bool was_pushed = false;
      if (handle.pattern) {
        std::lock_guard<std::mutex> lock(handle.pattern->mutex);
        was_pushed = std::exchange(handle.pattern->pushed, false);
      }
      if (was_pushed) {
        // Files up to kPushAheadFiles on were pushed before: the one after them.
        std::shared_ptr<const views::Node> file = handle.view;
        for (int i = 0; i < kPushAheadFiles && file != nullptr; ++i) {
          file = file->Next(*handle.container);
        }
        if (file != nullptr) {
          file->ReadAhead(*handle.container, 0, file->Size(*handle.container));
          PushAhead(handle, file);
        }
      }
      return handle;
    }
    case NodeType::kDir:
    case NodeType::kContainer:
    case NodeType::kControlDir:
      return Status(EISDIR, node->name);
  }
  return Status(EIO, "unknown node type");
}

Result<size_t> Filesystem::Read(const FileHandle& handle, int64_t offset, size_t length,
                                uint8_t* out) {
  if (handle.snapshot) {
    const auto& text = *handle.snapshot;
    if (offset < 0 || offset >= static_cast<int64_t>(text.size())) return size_t{0};
    const size_t n = std::min(length, text.size() - static_cast<size_t>(offset));
    std::memcpy(out, text.data() + offset, n);
    return n;
  }
  if (handle.passthrough) return handle.passthrough->ReadUpTo(offset, out, length);
  // A remote reader's read-ahead is planned before its read is served: its
  // requests then go out while this read waits for its own.
  const bool ahead_first = handle.remote && handle.pattern != nullptr;
  if (ahead_first) PlanReadAhead(handle, offset, length);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  auto n = handle.view->Read(*handle.container, offset, length, out);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  read_latency_.Record(static_cast<uint64_t>(
      ((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec)) / 1000));
  if (!ahead_first && n.ok() && *n > 0 && handle.pattern) PlanReadAhead(handle, offset, *n);
  return n;
}

// A reader whose next request starts near where the previous one ended is
// sequential (the kernel's concurrent read-ahead reorders requests a little,
// mmap faults arrive through any handle): decompress a growing window of
// blocks ahead of it on the background workers.
void Filesystem::PlanReadAhead(const FileHandle& handle, int64_t offset, size_t length) {
  const int64_t n = static_cast<int64_t>(length);
  const int64_t end = offset + n;
  // Remote: a longer window, so that its batches (below) make requests of a
  // few MiB, which a server answers at a fraction of the per-request cost.
  int64_t max_window = options_.max_readahead * (handle.remote ? kRemoteReadaheadFactor : 1);
  if (store_->cache != nullptr) {
    max_window =
        std::min<int64_t>(max_window, static_cast<int64_t>(store_->cache->capacity_bytes() / 8));
  }
  if (max_window <= 0) return;
  int64_t from = 0, to = 0;
  {
    ReadPattern& p = *handle.pattern;
    std::lock_guard<std::mutex> lock(p.mutex);
    const int64_t slack = 2 * std::max<int64_t>(n, 128 << 10);
    // A reader that starts at the file's start is taken as sequential from
    // its first read (most readers of a file start there and go on): a
    // remote reader's next blocks then go out in the same round trip as this
    // read's, and a file read in one request (a slice of slices/0/ that an
    // image-sequence tool opens, reads and closes) still reads ahead into
    // the next file.
    const bool from_start = offset == 0;
    if (from_start) {
      // A new pass from the start (the file reopened and read again, its
      // pages dropped): what an earlier pass asked for is no guide, its
      // blocks may be gone, and its push must be made again.
      p.next_offset = -1;
      p.window = 0;
      p.prefetched_until = 0;
    }
    const bool sequential = from_start || (p.next_offset >= 0 && offset >= p.next_offset - slack &&
                                           offset <= p.next_offset + slack);
    if (sequential) {
      p.window = std::min(max_window, std::max(p.window * 2, 2 * n));
      from = std::max(end, p.prefetched_until);
      to = end + p.window;
      // A remote reader's read-ahead goes out in batches of half the window:
      // the blocks of a batch come in few large requests, where topping the
      // window up after every read would ask for a little at a time.
      if (handle.remote && to - from < p.window / 2) to = from;
      if (to > from) p.prefetched_until = to;
      p.next_offset = std::max(p.next_offset, end);
    } else {
      p.window = 0;
      p.prefetched_until = 0;
      p.next_offset = end;
    }
  }
  if (to <= from) return;
  // What lies past the end is in the files a reader in name order reads
  // next (slices/0/), where there are such: [from, to) runs on through them.
  const store::Container& container = *handle.container;
  int64_t begin = 0;  // where a file starts in that run
  int files = 0;
  for (auto file = handle.view; file != nullptr && begin < to && files < kReadAheadMaxFiles;
       file = file->Next(container), ++files) {
    const int64_t size = file->Size(container);
    const int64_t a = std::max(from, begin), b = std::min(to, begin + size);
    if (b > a) {
      file->ReadAhead(container, a - begin, b - a);
      // The window has just reached one of the next files: its reader will
      // open it and read it whole, so its pages can be waiting in the kernel.
      if (files >= 1 && files <= kPushAheadFiles && a == begin) PushAhead(handle, file);
    }
    begin += size;
  }
}

void Filesystem::PushAhead(const FileHandle& handle,
                           const std::shared_ptr<const views::Node>& file) {
  if (!push_ || handle.remote || handle.ino_base == 0) return;
  if (file->ordinal() == views::kNoOrdinal) return;
  const int64_t size = file->Size(*handle.container);
  if (size <= 0 || size > kPushMaxBytes) return;
  const Ino ino = handle.ino_base + file->ordinal();
  // An inode the kernel never looked up would refuse the pages.
  const std::shared_ptr<Node> node = Find(ino);
  if (node == nullptr || node->pattern == nullptr) return;
  PagePush push;
  push.ino = ino;
  push.size = size;
  push.render = [container = handle.container, file, size](uint8_t* out) -> Status {
    // Only from cached blocks: decoding here would compete with the
    // reader's own requests and read-ahead (a cold reader is not helped).
    if (!file->Cached(*container)) return Status(EAGAIN, file->name() + " is not decompressed yet");
    B2NDFS_ASSIGN_OR_RETURN(const size_t n,
                            file->Read(*container, 0, static_cast<size_t>(size), out));
    if (static_cast<int64_t>(n) != size) return Status(EIO, "short read of " + file->name());
    return Status::Ok();
  };
  push.done = [this, size, pattern = node->pattern](bool stored) {
    if (!stored) {
      SetPushed(*pattern, false);
      return;
    }
    pushed_files_.fetch_add(1, std::memory_order_relaxed);
    pushed_bytes_.fetch_add(static_cast<uint64_t>(size), std::memory_order_relaxed);
  };
  // Marked when queued, not when stored: a reader that opens the file while
  // its pages are still on their way carries the push on all the same (its
  // reads of pages not yet there reach the daemon as usual).
  SetPushed(*node->pattern, true);
  if (!push_(std::move(push))) SetPushed(*node->pattern, false);
}

}  // namespace b2ndfs::vfs
