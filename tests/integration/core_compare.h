// core_compare's checks of one container through the b2ndfs core against
// its reference (core_compare_checks.cc), and what core_compare.cc shares
// with them. Private to the core_compare program; see the top of
// core_compare.cc for what it checks. Mismatches go to a Report.
#ifndef B2NDFS_TESTS_INTEGRATION_CORE_COMPARE_H_
#define B2NDFS_TESTS_INTEGRATION_CORE_COMPARE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include "b2ndfs/source/descriptor_cache.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/views/view.h"
#include "itest_common.h"

namespace b2ndfs::itest {

using store::Container;
using NodePtr = std::shared_ptr<const views::Node>;

// A virtual file as the checks describe it; Find() looks it up in the views.
enum class FileKind { kMetaJson, kData, kDataNpy, kChunk, kSlice };
struct VirtualFile {
  FileKind kind = FileKind::kData;
  int axis = 0;       // kSlice
  int64_t index = 0;  // kChunk: chunk index; kSlice: index along `axis`
};

inline constexpr uint64_t kSeed = 20240611;

// A core container and what it must contain.
struct Subject {
  std::string name;  // manifest relative path
  std::string path;  // its source
  const Reference* ref = nullptr;
  std::shared_ptr<const Container> container;
  Bytes npy;  // the whole data.npy as read in the sequential pass
};

// Opens the container at `path` as the vfs does (a local source, a fresh
// cache id). nullptr, with the reason in *error, when the source itself
// cannot be opened.
std::shared_ptr<const Container> OpenContainer(const std::string& path,
                                               source::DescriptorCache* descriptors,
                                               store::StoreContext* ctx, std::string* error);

// Walks a slash-separated path from the container directory.
Result<NodePtr> Walk(const Container& c, const std::string& path);

// Reads [offset, offset + length) of a virtual file and compares it with
// `want` (the whole file's expected bytes).
void CheckRead(const Subject& s, const VirtualFile& f, const Bytes& want, int64_t offset,
               size_t length, Report& report);

// Every file of `s` (meta.json, data, data.npy, chunks, slices, random
// boxes) against its manifest entry and reference.
void CheckContainer(Subject& s, const ManifestEntry& e, Report& report, std::mt19937_64& rng);

}  // namespace b2ndfs::itest

#endif  // B2NDFS_TESTS_INTEGRATION_CORE_COMPARE_H_
