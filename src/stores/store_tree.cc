// The store tree: a source::Tree decorator that shows python-blosc2's stores
// as directories (store_tree.h).
#include "b2ndfs/stores/store_tree.h"

#include <sys/stat.h>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/cache/cache_id.h"
#include "b2ndfs/source/declared_file.h"
#include "b2ndfs/source/provenance.h"
#include "b2ndfs/store/store_context.h"
#include "b2ndfs/util/log.h"
#include "ctable.h"
#include "index_budget.h"
#include "leaf_sources.h"
#include "store_entries.h"
#include "store_index.h"

namespace b2ndfs::stores {
namespace {

using internal::AsDirectory;
using internal::AsFile;
using internal::EndsWith;
using internal::kDirectoryFiles;
using internal::KindByName;
using internal::KindMatches;
using internal::Leaf;
using internal::Node;
using internal::StoreFilesAsDirectories;
using internal::StoreIndex;
using internal::StoreKind;
using internal::TextFile;

struct Located {
  std::string store;  // the store's path
  StoreKind kind = StoreKind::kZip;
  struct stat st {};  // the store's
  std::string rel;    // below the store ("": the store itself)
};

// What the block cache holds for one version of one store: the text its key
// was named by (checked on every use: a key is a hash), and the index.
struct CachedIndex {
  std::string identity;
  std::shared_ptr<const StoreIndex> index;
};

// The size a file node (a leaf, or a CTable's valid/NAME.npy) shows.
int64_t FileSize(const Node& node) {
  return node.leaf ? node.leaf->length : node.valid_file->size();
}

class StoreTree final : public source::Tree {
 public:
  StoreTree(std::shared_ptr<source::Tree> base, store::StoreContext* context)
      : base_(std::move(base)),
        own_cache_(context != nullptr && context->cache != nullptr
                       ? nullptr
                       : std::make_unique<cache::BlockCache>(kOwnCacheBytes, 1)),
        cache_(own_cache_ ? own_cache_.get() : context->cache),
        identity_("stores" + std::to_string(cache::NewCacheId()) + "|") {}

  const std::string& root() const override { return base_->root(); }
  std::string StatsJson() const override {
    const internal::StoreIndexStats& i = internal::GlobalStoreIndexStats();
    const EmbedStats& e = GlobalEmbedStats();
    auto kv = [](const char* key, uint64_t value, bool last = false) {
      return std::string("    \"") + key + "\": " + std::to_string(value) + (last ? "\n" : ",\n");
    };
    std::string out = base_->StatsJson();
    out += "  \"stores\": {\n";
    out += kv("indexes_parsed", i.parsed.load(std::memory_order_relaxed));
    out += kv("indexes_oversize", i.oversize.load(std::memory_order_relaxed));
    out += kv("embed_units_decompressed", e.units_decompressed.load(std::memory_order_relaxed));
    out +=
        kv("embed_bytes_decompressed", e.bytes_decompressed.load(std::memory_order_relaxed), true);
    out += "  },\n";
    return out;
  }
  source::TreeCosts costs() const override { return base_->costs(); }
  double revalidate_seconds() const override { return base_->revalidate_seconds(); }

  Result<struct stat> Stat(const std::string& path) const override {
    B2NDFS_ASSIGN_OR_RETURN(std::optional<Located> at, Locate(path));
    if (!at) return base_->Stat(path);
    if (at->rel.empty()) return AsDirectory(at->st);
    B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const StoreIndex> index, Index(*at));
    B2NDFS_ASSIGN_OR_RETURN(const Node* node, Find(*index, at->rel, path));
    if (node != nullptr) {
      B2NDFS_ASSIGN_OR_RETURN(const struct stat readers, Readers(*at, *index, at->rel, *node));
      if (node->directory) return AsDirectory(readers);
      return AsFile(readers, FileSize(*node));
    }
    B2NDFS_ASSIGN_OR_RETURN(const std::string* meta, MetaJson(*index, at->rel, path));
    const size_t slash = at->rel.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : at->rel.substr(0, slash);
    B2NDFS_ASSIGN_OR_RETURN(const struct stat readers,
                            Readers(*at, *index, dir, index->nodes.at(dir)));
    return AsFile(readers, static_cast<int64_t>(meta->size()));
  }

  // Outside a store, as the base says; below one, as Stat() (whose answer
  // already binds a .b2d's members by the directories they lie in), bound
  // by the directories above the store too.
  Result<struct stat> StatBeneath(const std::string& path, bool confined) const override {
    B2NDFS_ASSIGN_OR_RETURN(std::optional<Located> at, Locate(path));
    if (!at) return base_->StatBeneath(path, confined);
    B2NDFS_ASSIGN_OR_RETURN(struct stat above, base_->StatBeneath(at->store, confined));
    B2NDFS_ASSIGN_OR_RETURN(const struct stat own, Stat(path));
    const struct stat inputs[] = {own, source::SearchedAs(AsDirectory(above))};
    return source::BoundBy(inputs);
  }

  // A directory outside the stores is read page by page, as its tree gives
  // it; one inside a store is listed whole (its index is in memory).
  Result<std::unique_ptr<source::ListCursor>> OpenList(const std::string& path) const override {
    B2NDFS_ASSIGN_OR_RETURN(std::optional<Located> at, Locate(path));
    if (at) return source::Tree::OpenList(path);
    B2NDFS_ASSIGN_OR_RETURN(std::unique_ptr<source::ListCursor> base, base_->OpenList(path));
    return std::unique_ptr<source::ListCursor>(
        std::make_unique<StoreFilesAsDirectories>(std::move(base)));
  }

  Result<std::vector<source::TreeEntry>> List(const std::string& path) const override {
    B2NDFS_ASSIGN_OR_RETURN(std::optional<Located> at, Locate(path));
    if (!at) {
      B2NDFS_ASSIGN_OR_RETURN(std::vector<source::TreeEntry> entries, base_->List(path));
      for (auto& e : entries) {
        auto kind = KindByName(e.name);
        if (kind && KindMatches(*kind, e.st)) e.st = AsDirectory(e.st);
      }
      return entries;
    }
    B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const StoreIndex> index, Index(*at));
    B2NDFS_ASSIGN_OR_RETURN(const Node* node, Find(*index, at->rel, path));
    if (node == nullptr) return Status(ENOTDIR, path + ": not a directory");
    if (!node->directory) return Status(ENOTDIR, path + ": not a directory");
    std::vector<source::TreeEntry> out;
    B2NDFS_ASSIGN_OR_RETURN(const struct stat own, Readers(*at, *index, at->rel, *node));
    if (!node->meta_json.empty()) {
      out.push_back({"meta.json", AsFile(own, static_cast<int64_t>(node->meta_json.size()))});
    }
    if (!node->columns_json.empty()) {
      out.push_back({"columns.json", AsFile(own, static_cast<int64_t>(node->columns_json.size()))});
    }
    if (node->problem.empty()) {
      const std::string prefix = at->rel.empty() ? "" : at->rel + "/";
      for (const auto& name : node->children) {
        const Node& child = index->nodes.at(prefix + name);
        // A member that cannot be reached beneath SOURCE (a link out of it)
        // is not shown.
        auto readers = Readers(*at, *index, prefix + name, child);
        if (!readers.ok()) continue;
        out.push_back(
            {name, child.directory ? AsDirectory(*readers) : AsFile(*readers, FileSize(child))});
      }
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
  }

  // Below a store, the regular files this tree shows are its leaves, the
  // directories' meta.json and columns.json, and a CTable's valid/NAME.npy:
  // no index needs to be parsed to tell them apart (and a store that cannot
  // be reached now still has its leaves called containers). A leaf named
  // like a valid file (KEY "/t/valid/x.npy") is told apart by the store's
  // index when it is kept.
  bool IsContainer(const std::string& path) const override {
    const size_t slash = path.rfind('/');
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    for (const char* file : kDirectoryFiles) {
      if (name == file) return false;
    }
    auto at = Locate(path);
    if (!at.ok()) return true;
    if (!*at || (*at)->rel.empty()) return false;
    const std::string& rel = (*at)->rel;
    if (EndsWith(rel, ".npy") &&
        (rel.rfind("valid/", 0) == 0 || rel.find("/valid/") != std::string::npos)) {
      if (auto kept = Kept(**at)) {
        auto it = kept->nodes.find(rel);
        return it != kept->nodes.end() && it->second.leaf.has_value();
      }
      return false;
    }
    return true;
  }

  Result<source::Signature> Probe(const std::string& path) const override {
    B2NDFS_ASSIGN_OR_RETURN(std::optional<Located> at, Locate(path));
    if (!at) return base_->Probe(path);
    B2NDFS_ASSIGN_OR_RETURN(LeafAt leaf, FindLeaf(*at, path));
    if (leaf.leaf.where == Leaf::Where::kFile)
      return base_->Probe(at->store + "/" + leaf.leaf.file);
    return LeafSignature(*leaf.index, at->rel);
  }

  Result<std::shared_ptr<const source::ByteSource>> OpenContainer(
      const std::string& path, const source::Signature* probed) const override {
    B2NDFS_ASSIGN_OR_RETURN(std::optional<Located> at, Locate(path));
    if (!at) return base_->OpenContainer(path, probed);
    // The store is opened, then its index checked against the version
    // opened: a store replaced in between is parsed again (twice at most).
    for (int attempt = 0;; ++attempt) {
      B2NDFS_ASSIGN_OR_RETURN(LeafAt found, FindLeaf(*at, path));
      const Leaf& leaf = found.leaf;
      if (leaf.where == Leaf::Where::kFile) {
        return base_->OpenContainer(at->store + "/" + leaf.file, nullptr);
      }
      const bool embed_file = at->kind == StoreKind::kDir;
      B2NDFS_ASSIGN_OR_RETURN(
          std::shared_ptr<const source::ByteSource> src,
          base_->OpenContainer(embed_file ? internal::EmbedFilePath(at->store) : at->store,
                               nullptr));
      if (!(src->signature() == found.index->signature)) {
        cache_->EraseContainer(found.key.container_id);
        if (attempt < 2) continue;
        return Status(EAGAIN, at->store + ": changed while being opened");
      }
      source::Signature signature = LeafSignature(*found.index, at->rel);
      if (leaf.where == Leaf::Where::kMember) {
        return internal::MakeSliceSource(std::move(src), leaf.offset, leaf.length,
                                         std::move(signature), at->store + "/" + at->rel);
      }
      return internal::MakeEmbedLeafSource(
          std::move(src), found.index->embed_offset, found.index->embed_size, found.index->embed,
          leaf.offset, leaf.length, std::move(signature), at->store + "/" + at->rel);
    }
  }

  Result<std::shared_ptr<const source::PlainFile>> OpenFile(
      const std::string& path) const override {
    B2NDFS_ASSIGN_OR_RETURN(std::optional<Located> at, Locate(path));
    if (!at) return base_->OpenFile(path);
    B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const StoreIndex> index, Index(*at));
    if (auto it = index->nodes.find(at->rel); it != index->nodes.end() && it->second.valid_file) {
      return DeclareValidFile(*at, it->second.valid_file);
    }
    B2NDFS_ASSIGN_OR_RETURN(const std::string* meta, MetaJson(*index, at->rel, path));
    // The index's version (a .b2d's includes its directory's times, which
    // change with its leaf files, and so does meta.json).
    auto version = Version(*at);
    return std::shared_ptr<const source::PlainFile>(
        std::make_shared<TextFile>(*meta, version.ok() ? *version : index->signature));
  }

 private:
  struct LeafAt {
    std::shared_ptr<const StoreIndex> index;
    Leaf leaf;
    cache::Key key;  // the index's in the block cache
  };

  // A CTable's valid/NAME.npy, declared: the mount opens its two leaves as
  // containers of this tree and computes it (source/declared_file.h); its
  // version is the index's, to which the mount adds both leaves' (a .b2d's
  // leaf files are versioned on their own).
  Result<std::shared_ptr<const source::PlainFile>> DeclareValidFile(
      const Located& at, std::shared_ptr<const internal::ValidFileSpec> spec) const {
    B2NDFS_ASSIGN_OR_RETURN(source::Signature version, Version(at));
    const std::string store_dir = at.store + "/";
    return std::shared_ptr<const source::PlainFile>(std::make_shared<source::DeclaredFile>(
        store_dir + spec->column, store_dir + spec->valid_rows, std::move(spec),
        std::move(version)));
  }

  // The index of the store's current version when the cache holds it
  // (nullptr: none, or the version cannot be told now).
  std::shared_ptr<const StoreIndex> Kept(const Located& at) const {
    auto version = Version(at);
    if (!version.ok()) return nullptr;
    const std::string identity = IndexIdentity(at, *version);
    auto kept = std::static_pointer_cast<const CachedIndex>(
        cache_->TryGetObject(cache::NamedKey(cache::EntryKind::kObject, identity)));
    return kept != nullptr && kept->identity == identity ? kept->index : nullptr;
  }

  // The store `path` lies in, if any: its first component named like a
  // store whose kind agrees (a regular .b2z or .b2e, a .b2d directory).
  // SOURCE itself may be a store (b2ndfs run.b2z /mnt): its root is then the
  // store's directory.
  Result<std::optional<Located>> Locate(const std::string& path) const {
    const std::string& root = base_->root();
    if (path.compare(0, root.size(), root) != 0 ||
        (path.size() > root.size() && path[root.size()] != '/')) {
      return std::optional<Located>();
    }
    if (auto kind = KindByName(root)) {
      auto st = base_->Stat(root);
      if (st.ok() && KindMatches(*kind, *st)) {
        Located at;
        at.store = root;
        at.kind = *kind;
        at.st = *st;
        at.rel = path.size() > root.size() ? path.substr(root.size() + 1) : "";
        return std::optional<Located>(std::move(at));
      }
    }
    if (path.size() <= root.size() + 1) return std::optional<Located>();
    size_t start = root.size() + 1;
    while (start < path.size()) {
      size_t end = path.find('/', start);
      if (end == std::string::npos) end = path.size();
      const std::string name = path.substr(start, end - start);
      if (auto kind = KindByName(name)) {
        const std::string store = path.substr(0, end);
        auto st = base_->Stat(store);
        if (!st.ok()) {
          // The store's own path: the base answers for it.
          if (end == path.size()) return std::optional<Located>();
          return st.status();
        }
        if (KindMatches(*kind, *st)) {
          Located at;
          at.store = store;
          at.kind = *kind;
          at.st = *st;
          at.rel = end == path.size() ? "" : path.substr(end + 1);
          return std::optional<Located>(std::move(at));
        }
      }
      start = end + 1;
    }
    return std::optional<Located>();
  }

  // The node at `rel`; nullptr when `rel` names a file of a directory
  // (meta.json, columns.json) instead.
  static Result<const Node*> Find(const StoreIndex& index, const std::string& rel,
                                  const std::string& path) {
    auto it = index.nodes.find(rel);
    if (it != index.nodes.end()) return &it->second;
    for (const char* file : kDirectoryFiles) {
      if (rel == file || EndsWith(rel, (std::string("/") + file).c_str())) {
        return static_cast<const Node*>(nullptr);
      }
    }
    return Status(ENOENT, path);
  }

  // The text of the directory file `rel` names (DIR/meta.json, DIR/columns.json).
  static Result<const std::string*> MetaJson(const StoreIndex& index, const std::string& rel,
                                             const std::string& path) {
    const size_t slash = rel.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : rel.substr(0, slash);
    const std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
    auto it = index.nodes.find(dir);
    if (it == index.nodes.end() || !it->second.directory) return Status(ENOENT, path);
    if (name != "meta.json" && name != "columns.json") return Status(ENOENT, path);
    const std::string& text = name == "meta.json" ? it->second.meta_json : it->second.columns_json;
    if (text.empty()) return Status(ENOENT, path);
    return &text;
  }

  // Who may read the node at `rel` (README.md, "Permissions"): in a .b2z or
  // .b2e, whoever may read the store file; in a .b2d, whoever may read the
  // file or directory it is (its leaf file, or embed.b2e for an embedded
  // leaf), searching every directory above it, reached without a link out
  // of SOURCE (EXDEV then); a CTable's valid/NAME.npy, whoever may read both
  // leaves it is made from. A group only the embed file knows is the store's.
  Result<struct stat> Readers(const Located& at, const StoreIndex& index, const std::string& rel,
                              const Node& node) const {
    if (at.kind != StoreKind::kDir || base_->costs().uniform_attributes) return at.st;
    auto beneath = [&](const std::string& below) -> Result<struct stat> {
      B2NDFS_ASSIGN_OR_RETURN(struct stat st,
                              base_->StatBeneath(at.store + "/" + below, /*confined=*/true));
      return st;
    };
    if (node.leaf) {
      if (node.leaf->where == Leaf::Where::kFile) return beneath(node.leaf->file);
      return beneath(internal::EmbedFilePath(at.store).substr(at.store.size() + 1));
    }
    if (node.valid_file) {
      std::vector<struct stat> inputs;
      for (const std::string* leaf : {&node.valid_file->column, &node.valid_file->valid_rows}) {
        auto it = index.nodes.find(*leaf);
        if (it == index.nodes.end()) return Status(ENOENT, at.store + "/" + *leaf);
        B2NDFS_ASSIGN_OR_RETURN(const struct stat st, Readers(at, index, *leaf, it->second));
        inputs.push_back(st);
      }
      return source::BoundBy(inputs);
    }
    if (rel.empty()) return at.st;
    std::string physical;  // the directory's own names, not as shown
    for (size_t begin = 0; begin <= rel.size();) {
      size_t end = rel.find('/', begin);
      if (end == std::string::npos) end = rel.size();
      physical += (physical.empty() ? "" : "/") + internal::KeyName(rel.substr(begin, end - begin));
      begin = end + 1;
    }
    auto dir = beneath(physical);
    if (!dir.ok() && source::IsGone(dir.status())) return at.st;  // a group of embedded leaves
    return dir;
  }

  Result<LeafAt> FindLeaf(const Located& at, const std::string& path) const {
    cache::Key key;
    B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const StoreIndex> index, Index(at, &key));
    auto it = index->nodes.find(at.rel);
    if (it == index->nodes.end() || !it->second.leaf) return Status(ENOENT, path);
    return LeafAt{index, *it->second.leaf, key};
  }

  static source::Signature LeafSignature(const StoreIndex& index, const std::string& rel) {
    source::Signature s = index.signature;
    s.tag += "#/" + rel;
    return s;
  }

  // What the index of a store is keyed by: the version of its file (or of a
  // .b2d's embed.b2e, and the directory's own times, which change as leaf
  // files come and go).
  Result<source::Signature> Version(const Located& at) const {
    if (at.kind != StoreKind::kDir) return base_->Probe(at.store);
    auto probed = base_->Probe(internal::EmbedFilePath(at.store));
    source::Signature s;
    if (probed.ok()) {
      s = *probed;
    } else if (!source::IsGone(probed.status())) {
      return probed.status();
    }
    s.dir_inode = at.st.st_ino;
    s.dir_mtime_ns = at.st.st_mtim.tv_sec * 1000000000LL + at.st.st_mtim.tv_nsec;
    return s;
  }

  // What names one version of one store in the block cache.
  std::string IndexIdentity(const Located& at, const source::Signature& version) const {
    return identity_ + at.store + "|" + internal::SignatureText(version);
  }

  // The store's index at its current version: from the block cache, or
  // parsed once however many callers ask at the same time (its single
  // flight), then kept there and charged what it holds. An oversize index
  // is kept as its small verdict (store_index.h), so it is not parsed again
  // while the version stays. `key` (optional) receives the entry's key.
  Result<std::shared_ptr<const StoreIndex>> Index(const Located& at,
                                                  cache::Key* key = nullptr) const {
    B2NDFS_ASSIGN_OR_RETURN(source::Signature version, Version(at));
    const std::string identity = IndexIdentity(at, version);
    const cache::Key named = cache::NamedKey(cache::EntryKind::kObject, identity);
    if (key != nullptr) *key = named;
    auto load = [&]() -> Result<cache::BlockCache::LoadedObject> {
      B2NDFS_ASSIGN_OR_RETURN(
          std::shared_ptr<const StoreIndex> index,
          internal::BuildStoreIndex(*base_, at.store, at.kind,
                                    EmbedUnitCache{cache_, identity_ + at.store}));
      const auto& root = index->nodes.at("");
      if (!root.problem.empty()) {
        LogOnce("store:" + at.store, LogLevel::kWarning, at.store + ": " + root.problem);
      }
      auto cached = std::make_shared<CachedIndex>(CachedIndex{identity, std::move(index)});
      const size_t bytes = static_cast<size_t>(cached->index->memory_bytes) + identity.capacity();
      return cache::BlockCache::LoadedObject{std::move(cached), bytes};
    };
    B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const CachedIndex> cached,
                            cache_->GetOrLoadObjectAs<CachedIndex>(named, load));
    if (cached->identity == identity) return cached->index;
    // Two identities with one 128-bit key: parsed for this caller alone.
    B2NDFS_ASSIGN_OR_RETURN(auto other, load());
    return std::static_pointer_cast<const CachedIndex>(other.object)->index;
  }

  // A BlockCache of this size serves a tree made without a store context.
  static constexpr size_t kOwnCacheBytes = size_t{64} << 20;

  const std::shared_ptr<source::Tree> base_;
  const std::unique_ptr<cache::BlockCache> own_cache_;  // null when context_ has a cache
  cache::BlockCache* const cache_;                      // indexes and embed units live here
  const std::string identity_;                          // this tree's, begins every key identity
};

}  // namespace

bool HasStoreExtension(const std::string& name) { return KindByName(name).has_value(); }

std::shared_ptr<source::Tree> MakeStoreTree(std::shared_ptr<source::Tree> base,
                                            store::StoreContext* context) {
  return std::make_shared<StoreTree>(std::move(base), context);
}

}  // namespace b2ndfs::stores
