// items/ and batches/: python-blosc2's variable-length containers, one file
// per item or batch, and what carriers show instead of data (README.md,
// "Variable-length data, carriers and caches"). Kinds and tags: format/vlen.h.
//   items/N.msgpack    an ObjectArray's item N: chunk N's bytes as stored
//   items/N.json       the same as JSON (meta.json's lossless conventions)
//   batches/N.msgpack  a BatchArray's batch N: one msgpack array of its items
//   batches/N.json     the same as JSON
//   batches/N.arrow    a batch of the Arrow serializer: one IPC stream
// N is padded to the width of the largest index, as slices/ are, so that
// `ls` sorts; an unpadded N is accepted on lookup.
#include <cstring>

#include "b2ndfs/format/meta_json.h"
#include "b2ndfs/format/vlen.h"
#include "b2ndfs/util/log.h"
#include "kinds.h"

namespace b2ndfs::views {
namespace {

using store::ContentKind;

// The variants of Container::DerivedFromChunk used here.
enum Variant : int { kItemJson = 0, kBatchMsgpack = 1, kBatchJson = 2, kBatchArrow = 3 };

Result<std::string> ToJson(std::span<const uint8_t> msgpack) {
  std::optional<std::string> json = format::MsgpackToJson(msgpack);
  if (!json) {
    return InvalidData("the item is not one well-formed msgpack value within b2ndfs's limits " +
                       std::string("(64 levels, 16 MiB of JSON)"));
  }
  json->push_back('\n');
  return std::move(*json);
}

Result<std::string> Transform(int variant, std::span<const uint8_t> chunk) {
  switch (variant) {
    case kItemJson:
      return ToJson(chunk);
    case kBatchMsgpack:
      return format::MergeMsgpackBlocks(chunk);
    case kBatchJson: {
      B2NDFS_ASSIGN_OR_RETURN(std::string merged, format::MergeMsgpackBlocks(chunk));
      return ToJson({reinterpret_cast<const uint8_t*>(merged.data()), merged.size()});
    }
    case kBatchArrow:
      return format::MergeArrowStreams(chunk);
  }
  return InvalidArgument("no such rendering");
}

// A file made from one chunk (Container::DerivedFromChunk keeps it cached).
// It is made when looked up, so that one that cannot be made is EIO there
// (stat, open), the reason logged once, not an empty file.
class DerivedFile : public Node {
 public:
  DerivedFile(std::string name, uint64_t ordinal, int64_t chunk, int variant)
      : Node(std::move(name), ordinal), chunk_(chunk), variant_(variant) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container& c) const override {
    auto value = Get(c);
    return value.ok() ? static_cast<int64_t>((*value)->size()) : 0;
  }
  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override {
    B2NDFS_ASSIGN_OR_RETURN(cache::Value value, Get(c));
    if (offset < 0) return InvalidArgument("negative offset");
    if (offset >= static_cast<int64_t>(value->size())) return size_t{0};
    const size_t n = std::min(length, value->size() - static_cast<size_t>(offset));
    std::memcpy(out, value->data() + offset, n);
    return n;
  }
  Result<cache::Value> Get(const store::Container& c) const {
    auto value = c.DerivedFromChunk(
        chunk_, variant_, [v = variant_](std::span<const uint8_t> b) { return Transform(v, b); });
    if (!value.ok() && value.status().error_number() != ENOMEM) {
      const std::string message = c.name() + ": " + name() + ": " + value.status().message();
      LogOnce("vlen:" + message, LogLevel::kWarning, message);
      return Status(EIO, value.status().message());
    }
    return value;
  }

 private:
  int64_t chunk_;
  int variant_;
};

// One directory of files per chunk: `exts` name the files of each chunk
// (ordinal base + 1 + chunk * exts.size() + k for the k-th).
struct FileKind {
  const char* ext;
  int variant;  // -1: the chunk's bytes as stored (a stream of its box)
};

class PerChunkDir : public Node {
 public:
  PerChunkDir(std::string name, uint64_t base, std::vector<FileKind> kinds)
      : Node(std::move(name), base), kinds_(std::move(kinds)) {}
  bool IsDirectory() const override { return true; }

  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c,
                                             const std::string& name) const override {
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos) return NotFound(name);
    const std::string ext = name.substr(dot);
    const auto chunk = ParseIndex(name.substr(0, dot));
    const int64_t n = c.layout().NumChunks();
    if (!chunk || *chunk >= n) return NotFound(name);
    for (size_t k = 0; k < kinds_.size(); ++k) {
      if (ext != kinds_[k].ext) continue;
      const std::string canonical = Padded(*chunk, DecimalWidth(n - 1)) + ext;
      const uint64_t ord = ordinal() + 1 + static_cast<uint64_t>(*chunk) * kinds_.size() + k;
      if (kinds_[k].variant < 0) {
        return std::shared_ptr<const Node>(std::make_shared<StreamFile>(
            canonical, ord, store::ArrayStream{std::string(), c.layout().ChunkBox(*chunk)}));
      }
      auto file = std::make_shared<DerivedFile>(canonical, ord, *chunk, kinds_[k].variant);
      B2NDFS_RETURN_IF_ERROR(file->Get(c).status());
      return std::shared_ptr<const Node>(std::move(file));
    }
    return NotFound(name);
  }

  Result<std::shared_ptr<const Listing>> List(const store::Container& c) const override {
    const int64_t n = c.layout().NumChunks();
    const int width = DecimalWidth(std::max<int64_t>(n - 1, 0));
    const uint64_t first = ordinal() + 1;
    return MakeListing(
        static_cast<size_t>(n) * kinds_.size(), [kinds = kinds_, width, first](size_t i) {
          const auto& kind = kinds[i % kinds.size()];
          return ListEntry{Padded(static_cast<int64_t>(i / kinds.size()), width) + kind.ext, false,
                           first + i};
        });
  }

 private:
  std::vector<FileKind> kinds_;
};

// The views a container of these kinds does not have, for meta.json.
void DescribeNoArray(const std::string& why, std::vector<store::FileDescription>* out) {
  for (const char* name : {"data", "data.npy", "chunks", "slices"}) {
    out->push_back({name, {}, 0, why});
  }
}

class VlenEntry : public RootEntry {
 public:
  VlenEntry(ContentKind kind, std::string dir) : kind_(kind), dir_(std::move(dir)) {}
  bool Serves(ContentKind kind) const override { return kind == kind_; }

  std::vector<ListEntry> Names(const store::Container& c, uint64_t base) const override {
    if (!c.ok()) return {};
    return {ListEntry{dir_, true, base}};
  }
  uint64_t OrdinalCount(const store::Container& c) const override {
    if (!c.ok()) return 0;
    return 1 + static_cast<uint64_t>(c.layout().NumChunks()) * Kinds(c).size();
  }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name != dir_ || !c.ok()) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<PerChunkDir>(dir_, base, Kinds(c)));
  }
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    const int64_t n = c.layout().NumChunks();
    const bool items = kind_ == ContentKind::kObjects;
    for (const FileKind& k : Kinds(c)) {
      // Sizes: the stored items' total; a rendering's size is known once made.
      const int64_t size = k.variant < 0 ? c.layout().NumItems() * c.layout().itemsize() : 0;
      out->push_back({dir_ + "/N" + k.ext, {n}, size, ""});
    }
    DescribeNoArray(items ? "an ObjectArray holds one msgpack item per chunk: see items/"
                          : "a BatchArray holds batches of items: see batches/",
                    out);
  }

 private:
  std::vector<FileKind> Kinds(const store::Container& c) const {
    if (kind_ == ContentKind::kObjects) return {{".json", kItemJson}, {".msgpack", -1}};
    if (c.content_tag().serializer == "arrow") return {{".arrow", kBatchArrow}};
    return {{".json", kBatchJson}, {".msgpack", kBatchMsgpack}};
  }
  ContentKind kind_;
  std::string dir_;
};

// A carrier shows meta.json only; its "files" says why.
class CarrierEntry : public RootEntry {
 public:
  bool Serves(ContentKind kind) const override { return kind == ContentKind::kCarrier; }
  std::vector<ListEntry> Names(const store::Container&, uint64_t) const override { return {}; }
  uint64_t OrdinalCount(const store::Container&) const override { return 0; }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container&, const std::string&,
                                             uint64_t) const override {
    return std::shared_ptr<const Node>();
  }
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    DescribeNoArray("a " + c.content_tag().carrier_kind +
                        " carrier holds a recipe (meta.json's \"recipe\"), not data: its chunks "
                        "are uninitialised",
                    out);
  }
};

}  // namespace

std::unique_ptr<RootEntry> MakeItemsEntry() {
  return std::make_unique<VlenEntry>(ContentKind::kObjects, "items");
}
std::unique_ptr<RootEntry> MakeBatchesEntry() {
  return std::make_unique<VlenEntry>(ContentKind::kBatches, "batches");
}
std::unique_ptr<RootEntry> MakeCarrierEntry() { return std::make_unique<CarrierEntry>(); }

}  // namespace b2ndfs::views
