// Private to views: the files the Zarr views (zarr/, data.zarr/) share. A
// JSON document made of literal text and ranges of the generation's
// meta.json, and reads of a box padded past the array's edges with zero bytes
// (Zarr's whole chunks; zero is the fill value both views declare or imply).
// Nodes are immutable values; any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/views/view.h"
#include "kinds.h"
#include "zarr_v3_meta.h"

namespace b2ndfs::views {

// A piece of a JSON file: literal text, or bytes [begin, end) of meta.json
// (whose "vlmeta" can be large, so it is not copied at lookup).
struct TextPiece {
  std::string text;
  bool from_meta = false;
  size_t begin = 0, end = 0;  // of meta.json, when from_meta
};
using TextPieces = std::vector<TextPiece>;
inline TextPiece Literal(std::string text) { return TextPiece{std::move(text)}; }

class ZarrTextFile : public Node {
 public:
  ZarrTextFile(std::string name, uint64_t ordinal, TextPieces pieces)
      : Node(std::move(name), ordinal), pieces_(std::move(pieces)) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container& c) const override;
  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override;

 private:
  TextPieces pieces_;
};

// The range of meta.json's "vlmeta" object; nullopt when absent.
std::optional<TextPiece> VlmetaPiece(const store::Container& c);

// The whole chunk's box: the trimmed ChunkBox extended to the chunk shape.
geometry::Box FullChunkBox(const geometry::ArrayLayout& layout, int64_t chunk);

// Bytes [offset, offset + length) of the C-order stream of box `full`, whose
// items inside `inside` (full ∩ the array) come from the array and the others
// are zero bytes. Fewer bytes only at its end.
Result<size_t> ReadPadded(const store::Container& c, const geometry::Box& inside,
                          const geometry::Box& full, int64_t offset, size_t length, uint8_t* out);
// Read-ahead of such a stream: the blocks of the range (a padded box, which
// is an edge and small: all of its blocks, when the range starts it).
void PrefetchPadded(const store::Container& c, const geometry::Box& inside,
                    const geometry::Box& full, int64_t offset, int64_t length);

// One chunk, padded to the chunk shape (zarr/ and unsharded data.zarr/).
class ZarrChunkFile : public Node {
 public:
  ZarrChunkFile(std::string name, uint64_t ordinal, geometry::Box inside, geometry::Box full)
      : Node(std::move(name), ordinal), inside_(std::move(inside)), full_(std::move(full)) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container& c) const override {
    return full_.NumItems() * c.layout().itemsize();
  }
  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override {
    return ReadPadded(c, inside_, full_, offset, length, out);
  }
  void ReadAhead(const store::Container& c, int64_t offset, int64_t length) const override {
    PrefetchPadded(c, inside_, full_, offset, length);
  }

 private:
  geometry::Box inside_;  // the chunk's region of the array
  geometry::Box full_;    // the whole chunk, past the array's edges
};

// The chunk-key directories of a Zarr v3 array (c/ and c/I/..., one level
// per axis but the last), shared by data.zarr/ and ome.zarr/'s levels:
// - KeyCoords: the coordinates `coords` + the index `name` names, when
//   `name` is one of the directory's canonical names ("07" would be a second
//   name of "7"); nullopt otherwise.
// - ListKeyDir: the listing of the directory at depth `depth`, whose first
//   entry's ordinal is `first` (KeyTree numbers the tree in preorder).
std::optional<std::vector<int64_t>> KeyCoords(const KeyTree& tree,
                                              const std::vector<int64_t>& coords,
                                              const std::string& name);
std::shared_ptr<const Listing> ListKeyDir(const KeyTree& tree, size_t depth, uint64_t first);

// The root entry of a view that is one directory, `name`, offered when
// PlanOf(container) is ok (its plan says how many ordinals it takes); Dir
// is the directory's node, made from its base ordinal. Describe (meta.json)
// stays the view's own.
template <auto PlanOf, class Dir>
class PlannedDirEntry : public RootEntry {
 public:
  explicit PlannedDirEntry(const char* name) : name_(name) {}
  std::vector<ListEntry> Names(const store::Container& c, uint64_t base) const override {
    if (!PlanOf(c).ok()) return {};
    return {ListEntry{name_, true, base}};
  }
  uint64_t OrdinalCount(const store::Container& c) const override {
    auto plan = PlanOf(c);
    return plan.ok() ? plan->OrdinalCount() : 0;
  }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name != name_ || !PlanOf(c).ok()) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<Dir>(base));
  }

 private:
  const char* name_;
};

}  // namespace b2ndfs::views
