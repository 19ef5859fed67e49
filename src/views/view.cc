// Node defaults, stream files, and the container directory built from the
// registered entry kinds.
#include "b2ndfs/views/view.h"

#include <algorithm>
#include <cstring>

#include "b2ndfs/format/meta_json.h"
#include "kinds.h"

namespace b2ndfs::views {

Result<std::shared_ptr<const Node>> Node::Lookup(const store::Container&,
                                                 const std::string&) const {
  return Status(ENOTDIR, name_ + " is not a directory");
}

Result<std::shared_ptr<const Listing>> Node::List(const store::Container&) const {
  return Status(ENOTDIR, name_ + " is not a directory");
}

int64_t Node::Size(const store::Container&) const { return 0; }

Result<size_t> Node::Read(const store::Container&, int64_t, size_t, uint8_t*) const {
  return Status(EISDIR, name_ + " is a directory");
}

void Node::ReadAhead(const store::Container&, int64_t, int64_t) const {}

bool Node::Cached(const store::Container&) const { return false; }

std::shared_ptr<const Node> Node::Next(const store::Container&) const { return nullptr; }

int64_t StreamFile::Size(const store::Container& container) const {
  return container.StreamSize(stream_);
}

Result<size_t> StreamFile::Read(const store::Container& container, int64_t offset, size_t length,
                                uint8_t* out) const {
  return container.Read(stream_, offset, length, out);
}

void StreamFile::ReadAhead(const store::Container& container, int64_t offset,
                           int64_t length) const {
  container.Prefetch(stream_, offset, length);
}

bool StreamFile::Cached(const store::Container& container) const {
  return container.StreamCached(stream_);
}

namespace {

// The entry kinds a container shows (RootEntry::Serves).
bool Applies(const RootEntry& entry, const store::Container& container) {
  return entry.Serves(container.ok() ? container.content_kind() : store::ContentKind::kArray);
}

}  // namespace

// The container directory: the union of what the registered kinds offer,
// sorted by name. Kinds take consecutive ordinal ranges in registration order.
class RootDir : public Node {
 public:
  explicit RootDir(const Registry* registry) : Node("", kNoOrdinal), registry_(registry) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& container,
                                             const std::string& name) const override {
    uint64_t base = 0;
    for (const auto& entry : registry_->entries_) {
      if (!Applies(*entry, container)) continue;
      B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const Node> node,
                              entry->Lookup(container, name, base));
      if (node) return node;
      base += entry->OrdinalCount(container);
    }
    return NotFound(name);
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& container) const override {
    std::vector<ListEntry> names;
    uint64_t base = 0;
    for (const auto& entry : registry_->entries_) {
      if (!Applies(*entry, container)) continue;
      for (auto& e : entry->Names(container, base)) names.push_back(std::move(e));
      base += entry->OrdinalCount(container);
    }
    std::sort(names.begin(), names.end(),
              [](const ListEntry& a, const ListEntry& b) { return a.name < b.name; });
    const size_t count = names.size();  // before the lambda takes `names`
    return MakeListing(count, [names = std::move(names)](size_t i) { return names[i]; });
  }

 private:
  const Registry* registry_;
};

namespace {

// data.zarr/c/ nests one level per axis (at most 127), below two levels.
constexpr int kMaxDepth = 136;

// The node of `ordinal` among the descendants of directory `dir`, or nullptr.
Result<std::shared_ptr<const Node>> FindBelow(const store::Container& container, const Node& dir,
                                              uint64_t ordinal, int depth) {
  // Kinds nest two or three levels, data.zarr/c/ one per axis; deeper is a
  // kind that breaks the rules.
  if (depth > kMaxDepth) return std::shared_ptr<const Node>();
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const Listing> listing, dir.List(container));
  const size_t n = listing->size();
  if (n > kOrdinalScanMax) {
    // Generated listings (chunks, slices, data.zarr/c/...) are in ascending
    // ordinal order; a directory among them holds the ordinals up to the
    // next entry's.
    size_t lo = 0, hi = n;
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (listing->at(mid).ordinal < ordinal) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo < n) {
      ListEntry e = listing->at(lo);
      if (e.ordinal == ordinal) return dir.Lookup(container, e.name);
    }
    if (lo == 0 || !listing->at(lo - 1).directory) return std::shared_ptr<const Node>();
    auto child = dir.Lookup(container, listing->at(lo - 1).name);
    if (!child.ok() || *child == nullptr) return std::shared_ptr<const Node>();
    return FindBelow(container, **child, ordinal, depth + 1);
  }
  std::vector<ListEntry> below;
  for (size_t i = 0; i < n; ++i) {
    ListEntry e = listing->at(i);
    if (e.ordinal == ordinal) return dir.Lookup(container, e.name);
    if (e.directory && e.ordinal < ordinal) below.push_back(std::move(e));
  }
  // The nearest directory first: where descendants follow their directory
  // (data.zarr/c/...), it is the one.
  std::sort(below.begin(), below.end(),
            [](const ListEntry& a, const ListEntry& b) { return a.ordinal > b.ordinal; });
  for (const ListEntry& e : below) {
    auto child = dir.Lookup(container, e.name);
    if (!child.ok() || *child == nullptr) continue;
    B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const Node> found,
                            FindBelow(container, **child, ordinal, depth + 1));
    if (found) return found;
  }
  return std::shared_ptr<const Node>();
}

}  // namespace

Result<std::shared_ptr<const Node>> Registry::NodeAt(const store::Container& container,
                                                     uint64_t ordinal) const {
  uint64_t base = 0;
  for (const auto& entry : entries_) {
    if (!Applies(*entry, container)) continue;
    const uint64_t count = entry->OrdinalCount(container);
    if (ordinal >= base && ordinal - base < count) {
      std::vector<ListEntry> names = entry->Names(container, base);
      for (const std::string& name : entry->UnlistedNamesOf(container)) {
        names.push_back(ListEntry{name, false, kNoOrdinal});
      }
      for (const ListEntry& e : names) {
        B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const Node> node,
                                entry->Lookup(container, e.name, base));
        if (node == nullptr) continue;
        if (node->ordinal() == ordinal) return node;
        if (node->IsDirectory() && node->ordinal() < ordinal) {
          B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const Node> found,
                                  FindBelow(container, *node, ordinal, 1));
          if (found) return found;
        }
      }
      break;
    }
    base += count;
  }
  return NotFound("no name has ordinal " + std::to_string(ordinal));
}

std::vector<std::string> Registry::RootNames(const store::Container& container) const {
  std::vector<std::string> names;
  uint64_t base = 0;
  for (const auto& entry : entries_) {
    if (!Applies(*entry, container)) continue;
    for (auto& e : entry->Names(container, base)) names.push_back(std::move(e.name));
    for (auto& name : entry->UnlistedNamesOf(container)) names.push_back(std::move(name));
    base += entry->OrdinalCount(container);
  }
  return names;
}

Registry::Registry() : root_(std::make_shared<RootDir>(this)) {}

void Registry::Add(std::unique_ptr<RootEntry> entry) { entries_.push_back(std::move(entry)); }

namespace {

// Every kind, in the order of the container directory (README.md, "Which
// files appear": views=LIST names them).
struct KindDef {
  const char* name;
  const char* files;
  std::unique_ptr<RootEntry> (*make)();
};
constexpr KindDef kKinds[] = {
    {"meta", "meta.json", MakeMetaJsonEntry},
    {"data", "data", MakeDataEntry},
    {"npy", "data.npy", MakeDataNpyEntry},
    {"chunks", "chunks/", MakeChunksEntry},
    {"slices", "slices/", MakeSlicesEntry},
    {"nrrd", "data.nhdr", MakeNrrdEntry},
    {"mhd", "data.mhd", MakeMetaImageEntry},
    {"envi", "data.hdr", MakeEnviEntry},
    {"nifti", "data.nii", MakeNiftiEntry},
    {"view", "view/", MakeViewEntry},
    {"zarr", "zarr/", MakeZarrEntry},
    {"tiff", "data.tiff", MakeDataTiffEntry},
    {"images", "images/", MakeImagesEntry},
    {"zgroup", ".zgroup, .zmetadata", MakeZarrGroupEntry},
    {"zarr3", "data.zarr/", MakeZarrV3Entry},
    {"preview", "preview.png, preview/", MakePreviewEntry},
    {"items", "items/", MakeItemsEntry},
    {"batches", "batches/", MakeBatchesEntry},
    {"ome", "ome.zarr/", MakeOmeZarrEntry},
};

}  // namespace

std::shared_ptr<const Registry> Registry::Default() {
  auto registry = std::make_shared<Registry>();
  for (const KindDef& kind : kKinds) registry->Add(kind.make());
  // (Carriers' meta.json says why they hold no data: with every set of kinds.)
  registry->Add(MakeCarrierEntry());
  return registry;
}

std::vector<std::pair<std::string, std::string>> Registry::Kinds() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const KindDef& kind : kKinds) out.emplace_back(kind.name, kind.files);
  return out;
}

Result<std::shared_ptr<const Registry>> Registry::WithKinds(const std::vector<std::string>& kinds) {
  for (const std::string& name : kinds) {
    if (std::none_of(std::begin(kKinds), std::end(kKinds),
                     [&](const KindDef& kind) { return name == kind.name; })) {
      std::string known;
      for (const KindDef& kind : kKinds)
        known += std::string(known.empty() ? "" : ", ") + kind.name;
      return InvalidArgument("unknown kind of view '" + name + "' (known: " + known + ")");
    }
  }
  auto registry = std::make_shared<Registry>();
  for (const KindDef& kind : kKinds) {
    if (std::find(kinds.begin(), kinds.end(), kind.name) != kinds.end()) {
      registry->Add(kind.make());
    }
  }
  registry->Add(MakeCarrierEntry());
  return std::shared_ptr<const Registry>(std::move(registry));
}

uint64_t Registry::OrdinalCount(const store::Container& container) const {
  uint64_t total = 0;
  for (const auto& entry : entries_) {
    if (Applies(*entry, container)) total += entry->OrdinalCount(container);
  }
  return total;
}

std::vector<store::FileDescription> Registry::Describe(const store::Container& container) const {
  std::vector<store::FileDescription> out;
  for (const auto& entry : entries_) {
    if (Applies(*entry, container)) entry->Describe(container, &out);
  }
  return out;
}

std::string Registry::RenderMetaJson(const store::Container& container,
                                     format::MetaJsonInput input) const {
  for (auto& f : Describe(container)) input.files.push_back(std::move(f));
  return format::RenderMetaJson(input);
}

std::optional<int64_t> ParseIndex(const std::string& text) {
  if (text.empty() || text.size() > 255) return std::nullopt;
  const size_t digits = text.size() - std::min(text.find_first_not_of('0'), text.size() - 1);
  if (digits > 18) return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::optional<int64_t> ChunkFromKey(const geometry::ArrayLayout& layout, const std::string& name) {
  std::vector<int64_t> coords;
  if (layout.ndim() > 0) {
    size_t pos = 0;
    while (true) {
      const size_t dot = name.find('.', pos);
      auto index = ParseIndex(name.substr(pos, dot == std::string::npos ? dot : dot - pos));
      if (!index) return std::nullopt;
      coords.push_back(*index);
      if (dot == std::string::npos) break;
      pos = dot + 1;
    }
    if (static_cast<int>(coords.size()) != layout.ndim()) return std::nullopt;
  } else if (name != "0") {
    return std::nullopt;
  }
  const int64_t chunk = layout.ChunkIndex(coords);
  if (chunk < 0 || chunk >= layout.NumChunks()) return std::nullopt;
  return chunk;
}

int DecimalWidth(int64_t value) {
  int width = 1;
  while (value >= 10) {
    value /= 10;
    ++width;
  }
  return width;
}

std::string Padded(int64_t value, int width) {
  std::string digits = std::to_string(value);
  if (static_cast<int>(digits.size()) < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

}  // namespace b2ndfs::views
