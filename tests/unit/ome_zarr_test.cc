// ome.zarr/ over a real container (views and store/pyramid.h without FUSE):
// a computed level's shard holds the block means NumPy would give, its blocks
// are computed once (reads.blocks_computed) and then served from the block
// cache, the group's zarr.json is as long as stat says, a container
// without a pyramid says why in meta.json's files, and blocks kept in a
// source's derived store (disk_cache=) are read, not computed.
#include <b2nd.h>
#include <blosc2.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "b2nd_writer.h"
#include "b2ndfs/source/derived_store.h"
#include "b2ndfs/store/pyramid.h"
#include "b2ndfs/views/view.h"
#include "temp_dir.h"
#include "test_store.h"

namespace b2ndfs {
namespace {

inline std::shared_ptr<const store::Container> Write(testing::TestStore& store,
                                                     const std::string& path,
                                                     std::vector<int64_t> shape,
                                                     std::vector<int32_t> chunks,
                                                     std::vector<int32_t> blocks) {
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.typesize = 4;
  cp.nthreads = 1;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> data(static_cast<size_t>(n));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 17);
  b2nd_free(testing::WriteContiguous(path, cp, static_cast<int8_t>(shape.size()), shape.data(),
                                     chunks.data(), blocks.data(), "<f4", data.data(),
                                     n * static_cast<int64_t>(sizeof(float))));
  return store.OpenLocal(path);
}

inline std::shared_ptr<const views::Node> Find(const store::Container& c, const views::Node& root,
                                               const std::vector<std::string>& path) {
  std::shared_ptr<const views::Node> node;
  const views::Node* at = &root;
  for (const std::string& name : path) {
    auto next = at->Lookup(c, name);
    REQUIRE(next.ok());
    REQUIRE(*next != nullptr);
    node = *next;
    at = node.get();
  }
  return node;
}

std::string ReadAll(const store::Container& c, const views::Node& file) {
  std::string bytes(static_cast<size_t>(file.Size(c)), '\0');
  auto got = file.Read(c, 0, bytes.size(), reinterpret_cast<uint8_t*>(bytes.data()));
  REQUIRE(got.ok());
  REQUIRE(*got == bytes.size());
  return bytes;
}

TEST_CASE("a computed level's shard holds the block means, computed once", "[views]") {
  testing::TempDir dir("b2ndfs_ome_zarr");
  testing::TestStore store(64 << 20, 4, 0);
  const auto registry = views::Registry::Default();
  // 13 x 10 -> 7 x 5 (fits the 8 x 8 chunk): levels 0 and 1.
  const auto c = Write(store, (dir.path / "a.b2nd").string(), {13, 10}, {8, 8}, {4, 4});
  const auto& root = *registry->Root();
  auto group = Find(*c, root, {"ome.zarr", "zarr.json"});
  const std::string json = ReadAll(*c, *group);
  CHECK(json.find("\"version\": \"0.5\"") != std::string::npos);
  CHECK(json.find("\"path\": \"1\"") != std::string::npos);
  CHECK(json.find("\"path\": \"2\"") == std::string::npos);
  CHECK_FALSE(Find(*c, root, {"ome.zarr"})->Lookup(*c, "2").ok());

  const uint64_t before = store::GlobalReadStats().blocks_computed.load();
  auto shard = Find(*c, root, {"ome.zarr", "1", "c", "0", "0"});
  const std::string bytes = ReadAll(*c, *shard);
  // 4 inner chunks of 4 x 4 floats, then 4 (offset, size) pairs and a CRC.
  REQUIRE(bytes.size() == 4 * 64 + 4 * 16 + 4);
  // The whole group's zarr.json computed the coarsest level (level 1)
  // already: its 4 blocks, no more.
  const uint64_t computed = store::GlobalReadStats().blocks_computed.load() - before;
  CHECK(computed == 0);
  float level[8][8] = {};
  for (int b = 0; b < 4; ++b) {
    for (int i = 0; i < 16; ++i) {
      std::memcpy(&level[(b / 2) * 4 + i / 4][(b % 2) * 4 + i % 4], bytes.data() + b * 64 + i * 4,
                  4);
    }
  }
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 8; ++x) {
      CAPTURE(y, x);
      if (y >= 7 || x >= 5) {
        CHECK(level[y][x] == 0.0f);  // past the level's edge: the fill value
        continue;
      }
      double sum = 0;
      int n = 0;
      for (int dy = 0; dy < 2; ++dy) {
        for (int dx = 0; dx < 2; ++dx) {
          const int sy = 2 * y + dy, sx = 2 * x + dx;
          if (sy >= 13 || sx >= 10) continue;
          sum += (sy * 10 + sx) % 17;
          ++n;
        }
      }
      CHECK(level[y][x] == static_cast<float>(sum / n));
    }
  }
  // Another generation id sees nothing cached: a fresh container computes
  // the 4 blocks of level 1 for one shard read, once.
  testing::TestStore other(64 << 20, 4, 0);
  const auto fresh = other.OpenLocal((dir.path / "a.b2nd").string());
  const uint64_t t0 = store::GlobalReadStats().blocks_computed.load();
  CHECK(ReadAll(*fresh, *shard) == bytes);
  CHECK(store::GlobalReadStats().blocks_computed.load() - t0 == 4);
  CHECK(ReadAll(*fresh, *shard) == bytes);
  CHECK(store::GlobalReadStats().blocks_computed.load() - t0 == 4);
  // Level 0 is data.zarr's shard, byte for byte.
  CHECK(ReadAll(*c, *Find(*c, root, {"ome.zarr", "0", "c", "1", "1"})) ==
        ReadAll(*c, *Find(*c, root, {"data.zarr", "c", "1", "1"})));
}

TEST_CASE("no ome.zarr for a 1-D array or blocks that do not tile the chunk; meta.json says why",
          "[views]") {
  testing::TempDir dir("b2ndfs_ome_zarr_absent");
  testing::TestStore store(64 << 20, 4, 0);
  const auto registry = views::Registry::Default();
  for (const auto& [name, c] :
       {std::pair{"1d", Write(store, (dir.path / "b.b2nd").string(), {100}, {10}, {5})},
        std::pair{"nonmult",
                  Write(store, (dir.path / "d.b2nd").string(), {20, 20}, {10, 10}, {4, 4})}}) {
    CAPTURE(name);
    CHECK_FALSE(registry->Root()->Lookup(*c, "ome.zarr").ok());
    const auto files = registry->Describe(*c);
    const auto it = std::find_if(files.begin(), files.end(), [](const store::FileDescription& d) {
      return d.name == "ome.zarr";
    });
    REQUIRE(it != files.end());
    CHECK_FALSE(it->absent.empty());
  }
}

}  // namespace
}  // namespace b2ndfs

namespace b2ndfs {
namespace {

// Every listed name of ome.zarr/ has an ordinal NodeAt finds it by (the
// vfs's inode numbers), with several levels and shards.
TEST_CASE("ome.zarr's names are found again from their ordinals", "[views]") {
  testing::TempDir dir("b2ndfs_ome_zarr_ordinals");
  testing::TestStore store(64 << 20, 4, 0);
  const auto registry = views::Registry::Default();
  const auto c = Write(store, (dir.path / "u.b2nd").string(), {300, 200}, {64, 64}, {16, 16});
  const uint64_t count = registry->OrdinalCount(*c);
  std::vector<std::pair<std::string, std::shared_ptr<const views::Node>>> todo{
      {"ome.zarr", Find(*c, *registry->Root(), {"ome.zarr"})}};
  size_t seen = 0;
  while (!todo.empty()) {
    auto [path, node] = todo.back();
    todo.pop_back();
    CAPTURE(path);
    REQUIRE(node->ordinal() < count);
    auto again = registry->NodeAt(*c, node->ordinal());
    REQUIRE(again.ok());
    CHECK((*again)->name() == node->name());
    ++seen;
    if (!node->IsDirectory()) continue;
    auto listing = node->List(*c);
    REQUIRE(listing.ok());
    for (size_t i = 0; i < (*listing)->size(); ++i) {
      const views::ListEntry e = (*listing)->at(i);
      auto child = node->Lookup(*c, e.name);
      REQUIRE(child.ok());
      CHECK((*child)->ordinal() == e.ordinal);
      todo.emplace_back(path + "/" + e.name, *child);
    }
  }
  CHECK(seen > 40);
}

// Readers of the same computed blocks at once: each block is computed
// once (the block cache's single flight), and all read the same bytes.
TEST_CASE("concurrent readers of a computed level compute each block once", "[views]") {
  testing::TempDir dir("b2ndfs_ome_zarr_threads");
  testing::TestStore store(64 << 20, 4, 2);
  const auto registry = views::Registry::Default();
  // 64 x 64 in 16 x 16 chunks of 4 x 4 blocks: levels 64, 32, 16.
  const auto c = Write(store, (dir.path / "t.b2nd").string(), {64, 64}, {16, 16}, {4, 4});
  auto shard = Find(*c, *registry->Root(), {"ome.zarr", "2", "c", "0", "0"});
  const uint64_t t0 = store::GlobalReadStats().blocks_computed.load();
  std::vector<std::string> got(6);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      std::string bytes(static_cast<size_t>(shard->Size(*c)), '\0');
      auto n = shard->Read(*c, 0, bytes.size(), reinterpret_cast<uint8_t*>(bytes.data()));
      if (n.ok() && *n == bytes.size()) got[i] = std::move(bytes);
    });
  }
  for (auto& t : threads) t.join();
  // Level 2's one shard: 16 blocks, from 64 blocks of level 1.
  CHECK(store::GlobalReadStats().blocks_computed.load() - t0 == 16 + 64);
  for (const std::string& g : got) CHECK((!g.empty() && g == got[0]));
}

// A local container's bytes, with a derived store (source/derived_store.h)
// that a remote source with disk_cache= would offer: an in-memory map that
// counts what is asked, and refuses every value when told to (as a store
// whose values fail to verify).
class KeptStore final : public source::DerivedStore {
 public:
  bool Contains(std::string_view key) const override {
    std::lock_guard<std::mutex> lock(mutex);
    return values.count(std::string(key)) != 0;
  }
  bool Get(std::string_view key, std::span<uint8_t> out) const override {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = values.find(std::string(key));
    if (refuse || it == values.end() || it->second.size() != out.size()) return false;
    std::copy(it->second.begin(), it->second.end(), out.begin());
    return true;
  }
  void Put(std::string_view key, std::span<const uint8_t> bytes) const override {
    std::lock_guard<std::mutex> lock(mutex);
    values[std::string(key)].assign(bytes.begin(), bytes.end());
  }
  mutable std::mutex mutex;
  mutable std::map<std::string, std::vector<uint8_t>> values;
  bool refuse = false;
};

class KeepingSource final : public source::ByteSource {
 public:
  KeepingSource(std::shared_ptr<const source::ByteSource> inner, const KeptStore* kept)
      : inner_(std::move(inner)), kept_(kept) {}
  const std::string& name() const override { return inner_->name(); }
  bool sparse() const override { return inner_->sparse(); }
  const source::Signature& signature() const override { return inner_->signature(); }
  Result<int64_t> PartSize(int64_t part) const override { return inner_->PartSize(part); }
  Status Read(int64_t part, int64_t offset, size_t length, uint8_t* out) const override {
    return inner_->Read(part, offset, length, out);
  }
  bool found_stale() const override { return inner_->found_stale(); }
  const source::DerivedStore* derived_store() const override { return kept_; }

 private:
  std::shared_ptr<const source::ByteSource> inner_;
  const KeptStore* kept_;
};

// Blocks kept in a source's derived store are read from it by the next
// "mount" (a fresh block cache and generation), not computed: none is, and
// no level-0 block is read ahead for them; a store whose values do not
// verify has them computed again. Local sources offer no store.
TEST_CASE("computed blocks kept in the source's derived store are not computed again", "[views]") {
  testing::TempDir dir("b2ndfs_ome_zarr_kept");
  const auto registry = views::Registry::Default();
  const std::string path = (dir.path / "k.b2nd").string();
  KeptStore kept;
  auto open = [&](testing::TestStore& store) {
    auto local = source::OpenLocal(path, &store.descriptors);
    REQUIRE(local.ok());
    CHECK((*local)->derived_store() == nullptr);
    auto c = store::Container::Open(std::make_shared<KeepingSource>(*local, &kept), &store.ctx, 1,
                                    nullptr);
    REQUIRE(c->ok());
    return c;
  };
  auto& stats = store::GlobalReadStats();
  std::string first;
  {
    testing::TestStore store(64 << 20, 4, 2);
    Write(store, path, {64, 64}, {16, 16}, {4, 4});  // levels 64, 32, 16
    const auto c = open(store);
    const uint64_t t0 = stats.blocks_computed.load(), d0 = stats.blocks_computed_from_disk.load();
    first = ReadAll(*c, *Find(*c, *registry->Root(), {"ome.zarr", "2", "c", "0", "0"}));
    CHECK(stats.blocks_computed.load() - t0 == 16 + 64);
    CHECK(stats.blocks_computed_from_disk.load() - d0 == 0);
    CHECK(kept.values.size() == 16 + 64);
  }
  {
    testing::TestStore store(64 << 20, 4, 2);
    const auto c = open(store);
    const uint64_t t0 = stats.blocks_computed.load(), d0 = stats.blocks_computed_from_disk.load();
    // Nothing to decompress ahead for a kept block (for one not kept: the
    // bytes of the level-0 box under it).
    auto plan = store::PlanPyramid(*c, {true, true}, store::Downsampling::kMean);
    REQUIRE(plan.ok());
    CHECK(store::PrefetchPyramidBlock(*c, *plan, 2, {1, 1}) == 0);
    CHECK(store::PrefetchPyramidBlock(*c, *plan, 1, {7, 7}) == 0);
    const auto saved = kept.values;
    kept.values.clear();
    CHECK(store::PrefetchPyramidBlock(*c, *plan, 1, {6, 6}) == 8 * 8 * 4);
    kept.values = saved;
    CHECK(ReadAll(*c, *Find(*c, *registry->Root(), {"ome.zarr", "2", "c", "0", "0"})) == first);
    CHECK(stats.blocks_computed.load() - t0 == 0);
    CHECK(stats.blocks_computed_from_disk.load() - d0 == 16);
  }
  {
    kept.refuse = true;
    testing::TestStore store(64 << 20, 4, 0);
    const auto c = open(store);
    const uint64_t t0 = stats.blocks_computed.load(), d0 = stats.blocks_computed_from_disk.load();
    CHECK(ReadAll(*c, *Find(*c, *registry->Root(), {"ome.zarr", "2", "c", "0", "0"})) == first);
    CHECK(stats.blocks_computed.load() - t0 == 16 + 64);
    CHECK(stats.blocks_computed_from_disk.load() - d0 == 0);
  }
}

}  // namespace
}  // namespace b2ndfs
