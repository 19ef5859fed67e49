// The views registry's ordinals (include/b2ndfs/views/view.h): every listed
// name of a container's tree, previews included, has a distinct ordinal
// below OrdinalCount, and NodeAt finds the same name from it; the unlisted
// Zarr variable named after the container has none of its own, and its
// chunk files are zarr/'s (the same ordinals).
#include <b2nd.h>
#include <blosc2.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "b2nd_writer.h"
#include "b2ndfs/views/view.h"
#include "temp_dir.h"
#include "test_store.h"

namespace b2ndfs {
namespace {

std::shared_ptr<const store::Container> Write(testing::TestStore& store, const std::string& path,
                                              std::vector<int64_t> shape) {
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.typesize = 4;
  cp.nthreads = 1;
  std::vector<int32_t> chunks, blocks;
  int64_t n = 1;
  for (int64_t s : shape) {
    chunks.push_back(static_cast<int32_t>((s + 1) / 2));
    blocks.push_back(1);
    n *= s;
  }
  std::vector<float> data(static_cast<size_t>(n));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 17);
  b2nd_free(testing::WriteContiguous(path, cp, static_cast<int8_t>(shape.size()), shape.data(),
                                     chunks.data(), blocks.data(), "<f4", data.data(),
                                     n * static_cast<int64_t>(sizeof(float))));
  return store.OpenLocal(path);
}

// Every listed name below `dir`, by path, with its ordinal.
void Walk(const store::Container& c, const views::Node& dir, const std::string& prefix,
          std::map<std::string, uint64_t>* out) {
  auto listing = dir.List(c);
  REQUIRE(listing.ok());
  for (size_t i = 0; i < (*listing)->size(); ++i) {
    const views::ListEntry e = (*listing)->at(i);
    (*out)[prefix + e.name] = e.ordinal;
    if (e.directory) {
      auto child = dir.Lookup(c, e.name);
      REQUIRE(child.ok());
      Walk(c, **child, prefix + e.name + "/", out);
    }
  }
}

TEST_CASE("registry ordinals cover every listed name, previews included", "[views]") {
  testing::TempDir dir("b2ndfs_views_registry");
  testing::TestStore store(64 << 20, 4, 0);
  const auto registry = views::Registry::Default();
  for (const auto& shape : std::vector<std::vector<int64_t>>{{5, 6, 7}, {9, 4}, {3, 2, 4, 5}}) {
    CAPTURE(shape.size());
    const auto sub = dir.path / std::to_string(shape.size());
    std::filesystem::create_directories(sub);
    const auto c = Write(store, (sub / "arr.b2nd").string(), shape);
    std::map<std::string, uint64_t> names;
    Walk(*c, *registry->Root(), "", &names);
    REQUIRE(names.count("preview.png"));
    CHECK(names.count("preview/0/0.png") == (shape.size() == 3 ? 1 : 0));
    CHECK(names.count("preview/2/6.png") == (shape.size() == 3 ? 1 : 0));
    const uint64_t count = registry->OrdinalCount(*c);
    std::map<uint64_t, std::string> by_ordinal;
    for (const auto& [path, ordinal] : names) {
      CAPTURE(path);
      REQUIRE(ordinal < count);
      CHECK(by_ordinal.emplace(ordinal, path).second);
      auto node = registry->NodeAt(*c, ordinal);
      REQUIRE(node.ok());
      CHECK((*node)->ordinal() == ordinal);
      CHECK(path.substr(path.rfind('/') + 1) == (*node)->name());
    }
    // The container's variable: unlisted, numbered by the vfs, zarr/'s files.
    auto variable = registry->Root()->Lookup(*c, "arr");
    REQUIRE(variable.ok());
    CHECK((*variable)->ordinal() == views::kNoOrdinal);
    CHECK_FALSE(names.count("arr"));
    auto chunk = (*variable)->Lookup(
        *c, "0." + std::string(shape.size() == 2 ? "0" : "0.0") + (shape.size() == 4 ? ".0" : ""));
    REQUIRE(chunk.ok());
    CHECK(by_ordinal.at((*chunk)->ordinal()).starts_with("zarr/"));
    const auto root_names = registry->RootNames(*c);
    CHECK(std::count(root_names.begin(), root_names.end(), "arr") == 1);
  }
}

}  // namespace
}  // namespace b2ndfs
