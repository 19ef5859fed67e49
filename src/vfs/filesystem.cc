#include "b2ndfs/vfs/filesystem.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "b2ndfs/util/log.h"

namespace b2ndfs::vfs {

using store::Container;
using store::FileKind;

namespace {

constexpr const char* kExtensions[] = {".b2nd", ".b2frame", ".b2f", ".b2", ".caterva", ".cat"};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool StatPath(const std::string& path, struct stat* st) { return ::stat(path.c_str(), st) == 0; }

int DecimalWidth(int64_t value) {
  int width = 1;
  while (value >= 10) {
    value /= 10;
    ++width;
  }
  return width;
}

// Parses a non-negative decimal without sign or spaces; nullopt otherwise.
std::optional<int64_t> ParseIndex(const std::string& text) {
  const size_t digits = text.size() - std::min(text.find_first_not_of('0'), text.size() - 1);
  if (text.empty() || digits > 18 || text.size() > 255) return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::string Padded(int64_t value, int width) {
  std::string digits = std::to_string(value);
  if (static_cast<int>(digits.size()) < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

struct Signature {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  struct timespec mtime {};
  struct timespec ctime {};
  bool operator==(const Signature& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec &&
           ctime.tv_nsec == o.ctime.tv_nsec;
  }
};

Signature SignatureOf(const struct stat& st) {
  return Signature{st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
}

}  // namespace

bool HasContainerExtension(const std::string& name) {
  for (const char* ext : kExtensions) {
    if (EndsWith(name, ext)) return true;
  }
  return false;
}

// One container path; opens its Container lazily and reopens it on change.
class ContainerEntry {
 public:
  ContainerEntry(std::string path, store::StoreContext* store)
      : path_(std::move(path)), store_(store) {}

  const std::string& path() const { return path_; }

  // Stat of the container's source (its directory for a sparse frame).
  Result<struct stat> SourceStat() const {
    struct stat st;
    if (!StatPath(path_, &st)) {
      int e = errno;
      return Status(e, path_ + ": " + std::strerror(e));
    }
    return st;
  }

  std::shared_ptr<Container> Get() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!container_) {
      signature_ = CurrentSignature();
      container_ = Container::Open(path_, store_);
    }
    return container_;
  }

  // Drops the opened container if the source changed. Returns the generation
  // (bumped on every change).
  uint64_t Revalidate(bool* changed = nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (changed != nullptr) *changed = false;
    if (container_ && !(CurrentSignature() == signature_)) {
      Log(LogLevel::kInfo, path_ + " changed on disk; reloading");
      ForgetLogOnce("open:" + path_);
      // Readers holding the old generation finish with it; its cached blocks
      // go when the last of them lets go (~Container).
      container_.reset();
      ++generation_;
      if (changed != nullptr) *changed = true;
    }
    return generation_;
  }

 private:
  // For a sparse frame, the index file changes whenever chunks do.
  Signature CurrentSignature() const {
    struct stat st;
    std::string probe = path_;
    if (StatPath(path_, &st) && S_ISDIR(st.st_mode)) probe += "/chunks.b2frame";
    if (!StatPath(probe, &st)) return Signature{};
    return SignatureOf(st);
  }

  const std::string path_;
  store::StoreContext* store_;
  std::mutex mutex_;  // leaf lock
  std::shared_ptr<Container> container_;
  Signature signature_;
  uint64_t generation_ = 0;
};

enum class NodeType {
  kDir,
  kFile,
  kContainer,
  kChunksDir,
  kSlicesDir,
  kSliceAxisDir,
  kVirtual,
  kControlDir,  // .b2ndfs at the root: looked up, never listed
  kStatsFile,   // .b2ndfs/stats
};

struct Filesystem::Node {
  Ino ino = 0;
  Ino parent = 0;
  NodeType type = NodeType::kDir;
  std::string name;
  std::string path;  // source path: kDir, kFile, kContainer
  std::shared_ptr<ContainerEntry> entry;
  int axis = 0;  // kSliceAxisDir
  store::VirtualFile file;
  std::shared_ptr<ReadPattern> pattern = std::make_shared<ReadPattern>();
  uint64_t nlookup = 0;  // guarded by Filesystem::mutex_
  std::atomic<uint64_t> opened_generation{UINT64_MAX};
};

Filesystem::Filesystem(Options options, store::StoreContext* store)
    : options_(std::move(options)), store_(store) {
  auto root = std::make_shared<Node>();
  root->ino = kRootIno;
  root->parent = kRootIno;
  root->path = options_.source;
  struct stat st;
  if (StatPath(options_.source, &st) &&
      (S_ISREG(st.st_mode) || HasContainerExtension(options_.source))) {
    single_container_ = true;
    root->type = NodeType::kContainer;
    root->entry = std::make_shared<ContainerEntry>(options_.source, store_);
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
  if (!StatPath(source, &st)) {
    int e = errno;
    return Status(e, "source " + source + ": " + std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    if (::access(source.c_str(), R_OK | X_OK) != 0) {
      int e = errno;
      return Status(e, "source " + source + " cannot be listed: " + std::strerror(e));
    }
    return Status::Ok();
  }
  if (S_ISREG(st.st_mode)) {
    if (::access(source.c_str(), R_OK) != 0) {
      int e = errno;
      return Status(e, "source " + source + " cannot be read: " + std::strerror(e));
    }
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

// Returns the existing node for (parent, name) or registers `node`; either
// way counts one lookup.
std::shared_ptr<Filesystem::Node> Filesystem::Intern(std::shared_ptr<Node> node) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string key = std::to_string(node->parent) + "/" + node->name;
  auto it = children_.find(key);
  if (it != children_.end()) {
    auto existing = nodes_.find(it->second);
    if (existing != nodes_.end()) {
      auto& n = existing->second;
      // A source path that changed kind (file replaced by a directory) gets
      // a fresh node.
      if (n->type == node->type && n->path == node->path) {
        ++n->nlookup;
        return n;
      }
    }
  }
  node->ino = next_ino_++;
  node->nlookup = 1;
  nodes_[node->ino] = node;
  children_[key] = node->ino;
  return node;
}

void Filesystem::Forget(Ino ino, uint64_t nlookup) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end() || ino == kRootIno) return;
  auto& node = it->second;
  node->nlookup = nlookup >= node->nlookup ? 0 : node->nlookup - nlookup;
  if (node->nlookup == 0) {
    const std::string key = std::to_string(node->parent) + "/" + node->name;
    auto child = children_.find(key);
    if (child != children_.end() && child->second == ino) children_.erase(child);
    nodes_.erase(it);
  }
}

// Builds (without registering) the node for `name` inside `parent`.
Result<std::shared_ptr<Filesystem::Node>> Filesystem::Resolve(const std::shared_ptr<Node>& parent,
                                                              const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return NotFound(name);
  }
  auto node = std::make_shared<Node>();
  node->parent = parent->ino;
  node->name = name;
  node->entry = parent->entry;
  node->path = parent->path;
  if (parent->ino == kRootIno && name == kControlDirName) {
    node->type = NodeType::kControlDir;
    return node;
  }
  switch (parent->type) {
    case NodeType::kControlDir:
      if (name != "stats") return NotFound(name);
      node->type = NodeType::kStatsFile;
      return node;
    case NodeType::kStatsFile:
      return Status(ENOTDIR, name);
    case NodeType::kFile:
    case NodeType::kVirtual:
      return Status(ENOTDIR, name);
    case NodeType::kDir: {
      const std::string path = parent->path + "/" + name;
      struct stat st;
      if (!StatPath(path, &st)) return NotFound(path);
      node->path = path;
      if (S_ISDIR(st.st_mode)) {
        // A directory with a container's extension is a sparse frame (SPEC:
        // names are recognised by extension, without opening anything); one
        // without chunks.b2frame shows as a broken container saying so.
        if (HasContainerExtension(name)) {
          node->type = NodeType::kContainer;
        } else {
          node->type = NodeType::kDir;
        }
      } else if (S_ISREG(st.st_mode)) {
        node->type = HasContainerExtension(name) ? NodeType::kContainer : NodeType::kFile;
      } else {
        return NotFound(path);  // devices, fifos, sockets are not mirrored
      }
      if (node->type == NodeType::kContainer) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& weak = entries_[path];
        node->entry = weak.lock();
        if (!node->entry) {
          node->entry = std::make_shared<ContainerEntry>(path, store_);
          weak = node->entry;
        }
      }
      return node;
    }
    case NodeType::kContainer: {
      auto container = parent->entry->Get();
      if (name == "meta.json") {
        node->type = NodeType::kVirtual;
        node->file.kind = FileKind::kMetaJson;
        return node;
      }
      if (!container->ok()) return NotFound(name);
      const int ndim = container->layout().ndim();
      if (name == "data" || name == "data.npy") {
        node->type = NodeType::kVirtual;
        node->file.kind = name == "data" ? FileKind::kData : FileKind::kDataNpy;
        return node;
      }
      if (ndim > 0 && name == "chunks") {
        node->type = NodeType::kChunksDir;
        return node;
      }
      if (ndim > 0 && name == "slices") {
        node->type = NodeType::kSlicesDir;
        return node;
      }
      return NotFound(name);
    }
    case NodeType::kChunksDir: {
      auto container = parent->entry->Get();
      if (!container->ok()) return NotFound(name);
      const auto& layout = container->layout();
      std::vector<int64_t> coords;
      size_t pos = 0;
      while (true) {
        size_t dot = name.find('.', pos);
        auto index = ParseIndex(name.substr(pos, dot == std::string::npos ? dot : dot - pos));
        if (!index) return NotFound(name);
        coords.push_back(*index);
        if (dot == std::string::npos) break;
        pos = dot + 1;
      }
      if (static_cast<int>(coords.size()) != layout.ndim()) return NotFound(name);
      const int64_t chunk = layout.ChunkIndex(coords);
      if (chunk < 0) return NotFound(name);
      node->type = NodeType::kVirtual;
      node->file.kind = FileKind::kChunk;
      node->file.index = chunk;
      std::string canonical;
      for (size_t i = 0; i < coords.size(); ++i) {
        if (i) canonical += '.';
        canonical += std::to_string(coords[i]);
      }
      node->name = canonical;
      return node;
    }
    case NodeType::kSlicesDir: {
      auto container = parent->entry->Get();
      if (!container->ok()) return NotFound(name);
      auto axis = ParseIndex(name);
      if (!axis || *axis >= container->layout().ndim() || std::to_string(*axis) != name) {
        return NotFound(name);
      }
      node->type = NodeType::kSliceAxisDir;
      node->axis = static_cast<int>(*axis);
      return node;
    }
    case NodeType::kSliceAxisDir: {
      auto container = parent->entry->Get();
      if (!container->ok()) return NotFound(name);
      const int64_t extent = container->layout().shape()[parent->axis];
      const int width = DecimalWidth(extent > 0 ? extent - 1 : 0);
      auto index = ParseIndex(name);
      // Padded and unpadded (and over-padded) spellings all name the same
      // file; the canonical, listed name is padded to the axis's width.
      if (!index || *index >= extent) return NotFound(name);
      node->type = NodeType::kVirtual;
      node->file.kind = FileKind::kSlice;
      node->file.axis = parent->axis;
      node->file.index = *index;
      node->name = Padded(*index, width);
      return node;
    }
  }
  return NotFound(name);
}

uint64_t Filesystem::RevalidateEntry(const std::shared_ptr<ContainerEntry>& entry) {
  bool changed = false;
  const uint64_t generation = entry->Revalidate(&changed);
  if (changed && invalidate_) {
    // Tell the kernel to forget attributes and pages of everything inside,
    // and the names below the container (the new shape may lack them).
    std::vector<StaleNode> stale;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& [ino, n] : nodes_) {
        if (n->entry != entry) continue;
        const bool inside = n->type != NodeType::kContainer;
        stale.push_back(StaleNode{ino, n->parent, n->name, inside});
      }
    }
    invalidate_(stale);
  }
  return generation;
}

Result<Attr> Filesystem::Attributes(const Node& node) {
  Attr attr;
  struct stat& st = attr.st;
  if (node.type == NodeType::kControlDir || node.type == NodeType::kStatsFile) {
    // Owned like the mount's root; readable by whoever may read the root.
    if (!StatPath(options_.source, &st)) {
      int e = errno;
      return Status(e, options_.source + ": " + std::strerror(e));
    }
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
  if (node.type == NodeType::kDir || node.type == NodeType::kFile) {
    if (!StatPath(node.path, &st)) {
      int e = errno;
      return Status(e, node.path + ": " + std::strerror(e));
    }
    if ((node.type == NodeType::kDir) != S_ISDIR(st.st_mode)) return NotFound(node.path);
    st.st_ino = node.ino;
    st.st_mode &= ~static_cast<mode_t>(0222);  // read-only mount
    attr.timeout = 1.0;
    return attr;
  }
  // Inside a container: owner, group, permissions and times of the source.
  // A changed source is noticed here too, so sizes are never stale.
  RevalidateEntry(node.entry);
  B2NDFS_ASSIGN_OR_RETURN(struct stat src, node.entry->SourceStat());
  std::memset(&st, 0, sizeof st);
  st.st_ino = node.ino;
  st.st_uid = src.st_uid;
  st.st_gid = src.st_gid;
  st.st_atim = src.st_atim;
  st.st_mtim = src.st_mtim;
  st.st_ctim = src.st_ctim;
  st.st_blksize = 128 * 1024;
  const mode_t read_bits = src.st_mode & 0444;
  if (node.type == NodeType::kVirtual) {
    st.st_mode = S_IFREG | read_bits;
    st.st_nlink = 1;
    auto container = node.entry->Get();
    st.st_size = container->FileSize(node.file);
    if (node.file.kind != FileKind::kMetaJson && !container->ok()) return NotFound(node.name);
    st.st_blocks = (st.st_size + 511) / 512;
  } else {
    // Directories get x wherever the source had r.
    st.st_mode = S_IFDIR | read_bits | (read_bits >> 2);
    st.st_nlink = 2;
    st.st_size = 0;
  }
  attr.timeout = options_.attr_timeout;
  return attr;
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

namespace {

class VectorListing : public DirListing {
 public:
  explicit VectorListing(std::vector<DirEntry> entries) : entries_(std::move(entries)) {}
  size_t size() const override { return entries_.size(); }
  DirEntry at(size_t index) const override { return entries_[index]; }

 private:
  std::vector<DirEntry> entries_;
};

// Synthetic inode numbers for names the kernel has not looked up yet; the
// top bit keeps them apart from real node numbers.
Ino StandIn(Ino parent, size_t index) {
  return (parent * 0x9E3779B97F4A7C15ull + index + 1) | (1ull << 63);
}

class GeneratedListing : public DirListing {
 public:
  GeneratedListing(Ino parent, size_t count, mode_t type,
                   std::function<std::string(size_t)> name_of)
      : parent_(parent), count_(count), type_(type), name_of_(std::move(name_of)) {}
  size_t size() const override { return count_; }
  DirEntry at(size_t index) const override {
    return DirEntry{name_of_(index), type_, StandIn(parent_, index)};
  }

 private:
  Ino parent_;
  size_t count_;
  mode_t type_;
  std::function<std::string(size_t)> name_of_;
};

}  // namespace

Result<std::shared_ptr<DirListing>> Filesystem::OpenDir(Ino ino) {
  auto node = Find(ino);
  if (!node) return Status(ESTALE, "stale handle");
  switch (node->type) {
    case NodeType::kFile:
    case NodeType::kVirtual:
    case NodeType::kStatsFile:
      return Status(ENOTDIR, node->name);
    case NodeType::kControlDir:
      return std::shared_ptr<DirListing>(std::make_shared<VectorListing>(
          std::vector<DirEntry>{DirEntry{"stats", S_IFREG, StandIn(ino, 0)}}));
    case NodeType::kDir: {
      // Boost.Filesystem lists; stat() (which follows symbolic links) decides
      // what each entry is shown as, without opening any container.
      boost::system::error_code ec;
      boost::filesystem::directory_iterator it(node->path, ec);
      if (ec) return Status(ec.value() > 0 ? ec.value() : EIO, node->path + ": " + ec.message());
      std::vector<DirEntry> entries;
      for (; it != boost::filesystem::directory_iterator(); it.increment(ec)) {
        if (ec) return Status(ec.value() > 0 ? ec.value() : EIO, node->path + ": " + ec.message());
        const std::string name = it->path().filename().string();
        struct stat st;
        if (!StatPath(it->path().string(), &st)) continue;  // vanished or a dangling link
        mode_t type;
        if (S_ISDIR(st.st_mode)) {
          type = S_IFDIR;
        } else if (S_ISREG(st.st_mode)) {
          type = HasContainerExtension(name) ? S_IFDIR : S_IFREG;
        } else {
          continue;  // devices, fifos and sockets are not mirrored
        }
        entries.push_back(DirEntry{name, type, 0});
      }
      std::sort(entries.begin(), entries.end(),
                [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
      for (size_t i = 0; i < entries.size(); ++i) entries[i].ino = StandIn(ino, i);
      return std::shared_ptr<DirListing>(std::make_shared<VectorListing>(std::move(entries)));
    }
    case NodeType::kContainer: {
      auto container = node->entry->Get();
      std::vector<DirEntry> entries;
      auto add = [&](const char* name, mode_t type) {
        entries.push_back(DirEntry{name, type, StandIn(ino, entries.size())});
      };
      if (container->ok()) {
        const int ndim = container->layout().ndim();
        if (ndim > 0) add("chunks", S_IFDIR);
        add("data", S_IFREG);
        add("data.npy", S_IFREG);
        add("meta.json", S_IFREG);
        if (ndim > 0) add("slices", S_IFDIR);
      } else {
        add("meta.json", S_IFREG);
      }
      return std::shared_ptr<DirListing>(std::make_shared<VectorListing>(std::move(entries)));
    }
    case NodeType::kChunksDir: {
      auto container = node->entry->Get();
      if (!container->ok()) return Status(EIO, container->error());
      auto keep = container;
      return std::shared_ptr<DirListing>(std::make_shared<GeneratedListing>(
          ino, static_cast<size_t>(container->layout().NumChunks()), S_IFREG, [keep](size_t i) {
            auto coords = keep->layout().ChunkCoords(static_cast<int64_t>(i));
            std::string name;
            for (size_t k = 0; k < coords.size(); ++k) {
              if (k) name += '.';
              name += std::to_string(coords[k]);
            }
            return name;
          }));
    }
    case NodeType::kSlicesDir: {
      auto container = node->entry->Get();
      if (!container->ok()) return Status(EIO, container->error());
      return std::shared_ptr<DirListing>(
          std::make_shared<GeneratedListing>(ino, static_cast<size_t>(container->layout().ndim()),
                                             S_IFDIR, [](size_t i) { return std::to_string(i); }));
    }
    case NodeType::kSliceAxisDir: {
      auto container = node->entry->Get();
      if (!container->ok()) return Status(EIO, container->error());
      const int64_t extent = container->layout().shape()[node->axis];
      const int width = DecimalWidth(extent > 0 ? extent - 1 : 0);
      return std::shared_ptr<DirListing>(std::make_shared<GeneratedListing>(
          ino, static_cast<size_t>(extent), S_IFREG,
          [width](size_t i) { return Padded(static_cast<int64_t>(i), width); }));
    }
  }
  return Status(EIO, "unknown node type");
}

Result<FileHandle> Filesystem::Open(Ino ino, int flags) {
  auto node = Find(ino);
  if (!node) return Status(ESTALE, "stale handle");
  if ((flags & O_ACCMODE) != O_RDONLY) return Status(EROFS, "read-only file system");
  FileHandle handle;
  if (node->type == NodeType::kFile) {
    B2NDFS_ASSIGN_OR_RETURN(File file, File::OpenReadOnly(node->path));
    handle.passthrough = std::make_shared<File>(std::move(file));
    return handle;
  }
  if (node->type == NodeType::kStatsFile) {
    handle.snapshot = std::make_shared<const std::string>(StatsJson());
    handle.direct_io = true;  // its size changes between opens
    return handle;
  }
  if (node->type != NodeType::kVirtual) return Status(EISDIR, node->name);
  handle.pattern = node->pattern;
  const uint64_t generation = RevalidateEntry(node->entry);
  if (auto source = node->entry->SourceStat(); !source.ok()) return source.status();  // deleted
  handle.container = node->entry->Get();
  handle.file = node->file;
  if (node->file.kind != FileKind::kMetaJson && !handle.container->ok()) {
    return Status(EIO, handle.container->error());
  }
  // The kernel may keep cached pages only if the source is unchanged since
  // this file was last opened.
  const uint64_t previous = node->opened_generation.exchange(generation);
  handle.keep_cache = previous == generation;
  return handle;
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
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  auto n = handle.container->Read(handle.file, offset, length, out);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  read_latency_.Record(static_cast<uint64_t>(
      ((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec)) / 1000));
  if (n.ok() && *n > 0 && handle.pattern) PlanReadAhead(handle, offset, *n);
  return n;
}

// A reader whose next request starts near where the previous one ended is
// sequential (the kernel's concurrent read-ahead reorders requests a little,
// mmap faults arrive through any handle): decompress a growing window of
// blocks ahead of it on the background workers.
void Filesystem::PlanReadAhead(const FileHandle& handle, int64_t offset, size_t length) {
  const int64_t n = static_cast<int64_t>(length);
  const int64_t end = offset + n;
  int64_t max_window = options_.max_readahead;
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
    const bool sequential =
        p.next_offset >= 0 && offset >= p.next_offset - slack && offset <= p.next_offset + slack;
    if (sequential) {
      p.window = std::min(max_window, std::max(p.window * 2, 2 * n));
      from = std::max(end, p.prefetched_until);
      to = end + p.window;
      if (to > from) p.prefetched_until = to;
      p.next_offset = std::max(p.next_offset, end);
    } else {
      p.window = 0;
      p.prefetched_until = 0;
      p.next_offset = end;
    }
  }
  if (to > from) handle.container->Prefetch(handle.file, from, to - from);
}

std::string Filesystem::StatsJson() const {
  const cache::CacheStats c =
      store_->cache != nullptr ? store_->cache->stats() : cache::CacheStats{};
  const store::ReadStats& r = store::GlobalReadStats();
  const LatencyHistogram::Summary lat = read_latency_.Summarize();
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const double uptime =
      static_cast<double>(now.tv_sec * 1000000000LL + now.tv_nsec - start_time_ns_) / 1e9;
  size_t open_containers = 0;
  size_t inodes = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [path, weak] : entries_) open_containers += weak.expired() ? 0 : 1;
    inodes = nodes_.size();
  }
  const uint64_t lookups = c.hits + c.misses;
  char hit_ratio[32];
  std::snprintf(hit_ratio, sizeof hit_ratio, "%.4f",
                lookups ? static_cast<double>(c.hits) / static_cast<double>(lookups) : 0.0);
  char mean[32];
  std::snprintf(mean, sizeof mean, "%.1f", lat.mean_us);
  char up[32];
  std::snprintf(up, sizeof up, "%.1f", uptime);
  auto kv = [](const char* key, auto value, bool last = false) {
    return std::string("    \"") + key + "\": " + std::to_string(value) + (last ? "\n" : ",\n");
  };
  std::string out = "{\n";
  out += "  \"uptime_s\": " + std::string(up) + ",\n";
  out += "  \"containers_referenced\": " + std::to_string(open_containers) + ",\n";
  out += "  \"inodes\": " + std::to_string(inodes) + ",\n";
  out += "  \"cache\": {\n";
  out += kv("capacity_bytes", c.capacity_bytes);
  out += kv("bytes_cached", c.bytes_cached);
  out += kv("entries", c.entries);
  out += kv("hits", c.hits);
  out += kv("misses", c.misses);
  out += "    \"hit_ratio\": " + std::string(hit_ratio) + ",\n";
  out += kv("shared_waits", c.shared_waits);
  out += kv("evictions", c.evictions);
  out += kv("inserts", c.inserts);
  out += kv("load_errors", c.load_errors);
  out += kv("bytes_loaded", c.bytes_loaded, true);
  out += "  },\n";
  out += "  \"reads\": {\n";
  out += kv("requests", r.reads.load());
  out += kv("bytes_served", r.bytes_served.load());
  out += kv("errors", r.read_errors.load());
  out += kv("blocks_decompressed", r.blocks_decompressed.load());
  out += kv("bytes_decompressed", r.bytes_decompressed.load());
  out += kv("whole_chunk_decodes", r.whole_chunk_decodes.load());
  out += kv("chunks_fetched", r.chunks_fetched.load());
  out += kv("compressed_bytes_fetched", r.bytes_fetched.load());
  out += kv("readahead_requests", r.prefetch_requests.load());
  out += kv("readahead_blocks", r.prefetched_blocks.load());
  out += kv("pinned_bytes", r.pinned_bytes.load(), true);
  out += "  },\n";
  out += "  \"read_latency_us\": {\n";
  out += kv("count", lat.count);
  out += "    \"mean\": " + std::string(mean) + ",\n";
  out += kv("p50", lat.p50_us);
  out += kv("p90", lat.p90_us);
  out += kv("p99", lat.p99_us);
  out += kv("max", lat.max_us, true);
  out += "  }\n";
  out += "}\n";
  return out;
}

}  // namespace b2ndfs::vfs
