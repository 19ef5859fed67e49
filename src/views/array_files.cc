// meta.json, data and data.npy: the files every container directory has.
#include <cstring>

#include "b2ndfs/format/npy_header.h"
#include "kinds.h"

namespace b2ndfs::views {
namespace {

class MetaJsonFile : public Node {
 public:
  explicit MetaJsonFile(uint64_t ordinal) : Node("meta.json", ordinal) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container& c) const override {
    return static_cast<int64_t>(c.meta_json().size());
  }
  Result<size_t> Read(const store::Container& c, int64_t offset, size_t length,
                      uint8_t* out) const override {
    const std::string& text = c.meta_json();
    if (offset < 0) return InvalidArgument("negative offset");
    if (offset >= static_cast<int64_t>(text.size())) return size_t{0};
    const size_t n = std::min(length, text.size() - static_cast<size_t>(offset));
    std::memcpy(out, text.data() + offset, n);
    return n;
  }
};

// meta.json exists for every container, also one that cannot be decoded
// (it then says why).
class MetaJsonEntry : public RootEntry {
 public:
  std::vector<ListEntry> Names(const store::Container&, uint64_t base) const override {
    return {ListEntry{"meta.json", false, base}};
  }
  uint64_t OrdinalCount(const store::Container&) const override { return 1; }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container&, const std::string& name,
                                             uint64_t base) const override {
    if (name != "meta.json") return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<MetaJsonFile>(base));
  }
  void Describe(const store::Container&, std::vector<store::FileDescription>*) const override {}
  bool Serves(store::ContentKind) const override { return true; }
};

// A file streaming the whole array, with or without an .npy header.
class WholeArrayEntry : public RootEntry {
 public:
  WholeArrayEntry(std::string name, bool npy) : name_(std::move(name)), npy_(npy) {}

  std::vector<ListEntry> Names(const store::Container& c, uint64_t base) const override {
    if (!c.ok()) return {};
    return {ListEntry{name_, false, base}};
  }
  uint64_t OrdinalCount(const store::Container& c) const override { return c.ok() ? 1 : 0; }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name != name_ || !c.ok()) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(std::make_shared<StreamFile>(name_, base, Stream(c)));
  }
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    out->push_back({name_, c.layout().shape(), c.StreamSize(Stream(c))});
  }

 private:
  store::ArrayStream Stream(const store::Container& c) const {
    const auto& shape = c.layout().shape();
    return store::ArrayStream{npy_ ? MakeNpyHeader(c.npy_descr(), shape) : std::string(),
                              geometry::Box::FromShape(shape)};
  }
  const std::string name_;
  const bool npy_;
};

}  // namespace

std::unique_ptr<RootEntry> MakeMetaJsonEntry() { return std::make_unique<MetaJsonEntry>(); }
std::unique_ptr<RootEntry> MakeDataEntry() {
  return std::make_unique<WholeArrayEntry>("data", false);
}
std::unique_ptr<RootEntry> MakeDataNpyEntry() {
  return std::make_unique<WholeArrayEntry>("data.npy", true);
}

std::string MakeNpyHeader(const std::string& descr, const std::vector<int64_t>& shape) {
  return format::NpyHeader(descr, shape);
}

}  // namespace b2ndfs::views
