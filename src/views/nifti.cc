// data.nii: a single-file NIfTI-1 image, the 352-byte header (348 + four
// zero extension bytes) then the whole array in C order, which is NIfTI's
// order with the axes reversed. Offered only where NIfTI-1 can describe the
// dtype and shape (up to 7-D); meta.json says why otherwise.
#include "header_writers.h"
#include "kinds.h"

namespace b2ndfs::views {
namespace {

class NiftiEntry : public RootEntry {
 public:
  std::vector<ListEntry> Names(const store::Container& c, uint64_t base) const override {
    if (!Stream(c).ok()) return {};
    return {ListEntry{kName, false, base}};
  }
  uint64_t OrdinalCount(const store::Container& c) const override {
    // One ordinal whether or not the file exists: cheap on every lookup.
    return c.ok() ? 1 : 0;
  }
  Result<std::shared_ptr<const Node>> Lookup(const store::Container& c, const std::string& name,
                                             uint64_t base) const override {
    if (name != kName) return std::shared_ptr<const Node>();
    Result<store::ArrayStream> stream = Stream(c);
    if (!stream.ok()) return std::shared_ptr<const Node>();
    return std::shared_ptr<const Node>(
        std::make_shared<StreamFile>(kName, base, std::move(stream).value()));
  }
  void Describe(const store::Container& c,
                std::vector<store::FileDescription>* out) const override {
    if (!c.ok()) return;
    Result<store::ArrayStream> stream = Stream(c);
    store::FileDescription d{kName, c.layout().shape(), 0, {}};
    if (stream.ok()) {
      d.size = c.StreamSize(*stream);
    } else {
      d.absent = stream.status().message();
    }
    out->push_back(std::move(d));
  }

 private:
  static constexpr const char* kName = "data.nii";

  static Result<store::ArrayStream> Stream(const store::Container& c) {
    if (!c.ok()) return Status(ENOENT, "the container cannot be decoded");
    const auto& shape = c.layout().shape();
    B2NDFS_ASSIGN_OR_RETURN(std::string header,
                            MakeNifti1Header(c.npy_descr(), shape, c.voxel_geometry()));
    return store::ArrayStream{std::move(header), geometry::Box::FromShape(shape)};
  }
};

}  // namespace

std::unique_ptr<RootEntry> MakeNiftiEntry() { return std::make_unique<NiftiEntry>(); }

}  // namespace b2ndfs::views
