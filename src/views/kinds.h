// Private to views: the built-in entry kinds (one file each) and the naming
// helpers they share.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "b2ndfs/views/view.h"

namespace b2ndfs::views {

std::unique_ptr<RootEntry> MakeMetaJsonEntry();
std::unique_ptr<RootEntry> MakeDataEntry();
std::unique_ptr<RootEntry> MakeDataNpyEntry();
std::unique_ptr<RootEntry> MakeChunksEntry();
std::unique_ptr<RootEntry> MakeSlicesEntry();
std::unique_ptr<RootEntry> MakeNrrdEntry();
std::unique_ptr<RootEntry> MakeMetaImageEntry();
std::unique_ptr<RootEntry> MakeEnviEntry();
std::unique_ptr<RootEntry> MakeNiftiEntry();
std::unique_ptr<RootEntry> MakeViewEntry();
std::unique_ptr<RootEntry> MakeZarrEntry();
std::unique_ptr<RootEntry> MakeDataTiffEntry();
std::unique_ptr<RootEntry> MakeImagesEntry();
std::unique_ptr<RootEntry> MakeZarrGroupEntry();
std::unique_ptr<RootEntry> MakeZarrV3Entry();
std::unique_ptr<RootEntry> MakePreviewEntry();
std::unique_ptr<RootEntry> MakeItemsEntry();
std::unique_ptr<RootEntry> MakeBatchesEntry();
std::unique_ptr<RootEntry> MakeCarrierEntry();
std::unique_ptr<RootEntry> MakeOmeZarrEntry();

// A non-negative decimal without sign or spaces (leading zeros allowed, at
// most 18 significant digits); nullopt otherwise.
std::optional<int64_t> ParseIndex(const std::string& text);
// Digits of the largest value: slice names are padded to it so `ls` sorts.
int DecimalWidth(int64_t value);
std::string Padded(int64_t value, int width);
// The chunk a name such as "0.3.1" (grid coordinates joined by '.', as Zarr
// v2 names chunks; "0" for a 0-D array) denotes; nullopt for anything else.
std::optional<int64_t> ChunkFromKey(const geometry::ArrayLayout& layout, const std::string& name);

// A directory listing generated from a count and a function.
template <typename NameOf>
class GeneratedListing : public Listing {
 public:
  GeneratedListing(size_t count, NameOf name_of) : count_(count), name_of_(std::move(name_of)) {}
  size_t size() const override { return count_; }
  ListEntry at(size_t index) const override { return name_of_(index); }

 private:
  size_t count_;
  NameOf name_of_;
};

template <typename NameOf>
std::shared_ptr<const Listing> MakeListing(size_t count, NameOf name_of) {
  return std::make_shared<GeneratedListing<NameOf>>(count, std::move(name_of));
}

}  // namespace b2ndfs::views
