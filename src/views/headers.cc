// data.nhdr (NRRD), data.mhd (MetaImage), data.hdr (ENVI): detached headers
// that point at `data` in the same directory, so imaging tools open the
// array without a copy, with the voxel geometry the vlmeta gives. Each
// exists only where its format can describe the container's dtype and shape
// and the readers people use take it; meta.json says why the others are
// absent.
#include <cstring>
#include <functional>

#include "header_writers.h"
#include "kinds.h"

namespace b2ndfs::views {
namespace {

// A small file whose whole content was computed at lookup.
class TextFile : public Node {
 public:
  TextFile(std::string name, uint64_t ordinal, std::string text)
      : Node(std::move(name), ordinal), text_(std::move(text)) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container&) const override {
    return static_cast<int64_t>(text_.size());
  }
  Result<size_t> Read(const store::Container&, int64_t offset, size_t length,
                      uint8_t* out) const override {
    if (offset < 0) return InvalidArgument("negative offset");
    if (offset >= static_cast<int64_t>(text_.size())) return size_t{0};
    const size_t n = std::min(length, text_.size() - static_cast<size_t>(offset));
    std::memcpy(out, text_.data() + offset, n);
    return n;
  }

 private:
  std::string text_;
};

using HeaderWriter = std::function<Result<std::string>(
    const std::string& descr, const std::vector<int64_t>&, const format::VoxelGeometry&)>;

class HeaderEntry : public RootEntry {
 public:
  HeaderEntry(std::string name, HeaderWriter writer)
      : name_(std::move(name)), writer_(std::move(writer)) {}

  std::vector<ListEntry> Names(const store::Container& c, uint64_t base) const override {
    if (!Header(c).ok()) return {};
    return {ListEntry{name_, false, base}};
  }
  uint64_t OrdinalCount(const store::Container& c) const override {
    // One ordinal whether or not the file exists: cheap on every lookup.
    return c.ok() ? 1 : 0;
  }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name != name_) return std::shared_ptr<const Node>();
    Result<std::string> text = Header(c);
    if (!text.ok()) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(
        std::make_shared<TextFile>(name_, base, std::move(text).value()));
  }
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    Result<std::string> text = Header(c);
    store::FileDescription d{name_, c.layout().shape(), 0, {}};
    if (text.ok()) {
      d.size = static_cast<int64_t>(text->size());
    } else {
      d.absent = text.status().message();
    }
    out->push_back(std::move(d));
  }

 private:
  Result<std::string> Header(const store::Container& c) const {
    if (!c.ok()) return Status(ENOENT, "the container cannot be decoded");
    return writer_(c.npy_descr(), c.layout().shape(), c.voxel_geometry());
  }
  const std::string name_;
  const HeaderWriter writer_;
};

}  // namespace

std::unique_ptr<RootEntry> MakeNrrdEntry() {
  return std::make_unique<HeaderEntry>(
      "data.nhdr", [](const std::string& descr, const std::vector<int64_t>& shape,
                      const format::VoxelGeometry& geometry) {
        return MakeNrrdHeader(descr, shape, "data", geometry);
      });
}

std::unique_ptr<RootEntry> MakeMetaImageEntry() {
  return std::make_unique<HeaderEntry>(
      "data.mhd", [](const std::string& descr, const std::vector<int64_t>& shape,
                     const format::VoxelGeometry& geometry) {
        return MakeMetaImageHeader(descr, shape, "data", geometry);
      });
}

std::unique_ptr<RootEntry> MakeEnviEntry() {
  return std::make_unique<HeaderEntry>(
      "data.hdr",
      [](const std::string& descr, const std::vector<int64_t>& shape,
         const format::VoxelGeometry& geometry) { return MakeEnviHeader(descr, shape, geometry); });
}

}  // namespace b2ndfs::views
