// The views registry over containers written by c-blosc2 at test time:
// - ordinals: every listed name of the container's tree has a distinct
//   ordinal below OrdinalCount, long listings ascend, a directory's
//   descendants come after it, and Registry::NodeAt finds every name again
//   from its ordinal alone (data.zarr/c/ included: a listing of 65
//   directories, and a 4-D tree three directories deep);
// - data.zarr/: zarr.json's dimension_names come from "_ARRAY_DIMENSIONS";
//   each shard file holds the chunk's blocks, whole and padded
//   with zeros past the array, then (offset, nbytes) per block and the index's
//   CRC-32C; any byte range reads the same bytes as the whole file; unsharded
//   stores hold the padded chunk; a read of one inner chunk of a cold
//   container decompresses exactly one block, and the index none.
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "b2nd_writer.h"
#include "b2ndfs/views/view.h"
#include "temp_dir.h"
#include "test_store.h"
#include "zarr_v3_meta.h"

namespace b2ndfs {
namespace {

using NodePtr = std::shared_ptr<const views::Node>;

struct Array {
  std::vector<int64_t> shape;
  std::vector<int32_t> chunks, blocks;
  std::string dtype;
  int64_t itemsize = 0;
  std::vector<uint8_t> data;  // C order
};

// An array of `itemsize`-byte items whose bytes are their linear index's.
Array MakeArray(std::vector<int64_t> shape, std::vector<int32_t> chunks,
                std::vector<int32_t> blocks, const char* dtype, int64_t itemsize) {
  Array a{std::move(shape), std::move(chunks), std::move(blocks), dtype, itemsize, {}};
  int64_t n = 1;
  for (int64_t s : a.shape) n *= s;
  a.data.resize(static_cast<size_t>(n * itemsize));
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(i * 7 + i / 251);
  return a;
}

struct Opened {
  std::shared_ptr<const store::Container> container;
  std::shared_ptr<const views::Registry> registry;
};

// `vlmeta`: a variable-length metalayer's name and msgpack bytes, or none.
Opened Write(testing::TestStore& ts, const std::string& path, const Array& a, uint64_t cache_id,
             const std::pair<std::string, std::vector<uint8_t>>& vlmeta = {}) {
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.typesize = static_cast<int32_t>(a.itemsize);
  cp.nthreads = 1;
  b2nd_array_t* arr = testing::WriteContiguous(
      path, cp, static_cast<int8_t>(a.shape.size()), a.shape.data(), a.chunks.data(),
      a.blocks.data(), a.dtype.c_str(), a.data.data(), static_cast<int64_t>(a.data.size()));
  if (!vlmeta.first.empty()) {
    std::vector<uint8_t> content = vlmeta.second;
    REQUIRE(blosc2_vlmeta_add(arr->sc, vlmeta.first.c_str(), content.data(),
                              static_cast<int32_t>(vlmeta.second.size()), nullptr) >= 0);
  }
  b2nd_free(arr);
  auto registry = views::Registry::Default();
  auto source = source::OpenLocal(path, &ts.descriptors);
  REQUIRE(source.ok());
  auto container = store::Container::Open(*source, &ts.ctx, cache_id, registry.get());
  REQUIRE(container->ok());
  return {container, registry};
}

std::vector<uint8_t> ReadAll(const store::Container& c, const views::Node& file) {
  std::vector<uint8_t> out(static_cast<size_t>(file.Size(c)));
  auto n = file.Read(c, 0, out.size(), out.data());
  REQUIRE(n.ok());
  REQUIRE(*n == out.size());
  return out;
}

NodePtr Find(const store::Container& c, const views::Registry& r, const std::string& path) {
  NodePtr node = r.Root();
  size_t pos = 0;
  while (pos < path.size()) {
    const size_t slash = path.find('/', pos);
    const std::string name = path.substr(pos, slash == std::string::npos ? slash : slash - pos);
    auto child = node->Lookup(c, name);
    INFO(path);
    REQUIRE(child.ok());
    REQUIRE(*child != nullptr);
    node = *child;
    pos = slash == std::string::npos ? path.size() : slash + 1;
  }
  return node;
}

// Walks the listed tree below `dir`, checking each listing's ordinals.
void Walk(const store::Container& c, const views::Node& dir, const std::string& path,
          std::map<uint64_t, std::string>& seen) {
  auto listing = dir.List(c);
  REQUIRE(listing.ok());
  const auto& l = **listing;
  for (size_t i = 0; i < l.size(); ++i) {
    const views::ListEntry e = l.at(i);
    const std::string child_path = path.empty() ? e.name : path + "/" + e.name;
    INFO(child_path);
    REQUIRE(e.ordinal != views::kNoOrdinal);
    if (dir.ordinal() != views::kNoOrdinal) CHECK(e.ordinal > dir.ordinal());
    if (l.size() > views::kOrdinalScanMax && i > 0) CHECK(e.ordinal > l.at(i - 1).ordinal);
    CHECK(seen.emplace(e.ordinal, child_path).second);
    auto child = dir.Lookup(c, e.name);
    REQUIRE(child.ok());
    REQUIRE(*child != nullptr);
    CHECK((*child)->ordinal() == e.ordinal);
    CHECK((*child)->IsDirectory() == e.directory);
    if (e.directory) Walk(c, **child, child_path, seen);
  }
}

TEST_CASE("every listed name's ordinal finds it again", "[views]") {
  testing::TempDir dir("b2ndfs_views");
  testing::TestStore ts(size_t{64} << 20, 4, 0);
  const std::vector<Array> arrays = {
      // data.zarr/c/ lists 65 directories.
      MakeArray({130, 6, 5}, {2, 3, 5}, {1, 3, 5}, "<f4", 4),
      MakeArray({5, 6, 7, 9}, {2, 4, 4, 4}, {1, 2, 2, 2}, "<u2", 2),
      MakeArray({20, 16}, {10, 8}, {4, 4}, ">i2", 2),  // unsharded
      MakeArray({1000}, {7}, {7}, "|u1", 1),           // 143 chunk files in c/
      MakeArray({}, {}, {}, "<f8", 8),                 // 0-D: data.zarr/c is a file
  };
  uint64_t id = 100;
  for (const Array& a : arrays) {
    const std::string path = (dir.path / ("a" + std::to_string(id) + ".b2nd")).string();
    INFO(path);
    Opened o = Write(ts, path, a, id++);
    const store::Container& c = *o.container;
    std::map<uint64_t, std::string> seen;
    Walk(c, *o.registry->Root(), "", seen);
    bool has_zarr_json = false;
    for (const auto& [ordinal, name] : seen) {
      INFO(name);
      CHECK(ordinal < o.registry->OrdinalCount(c));
      auto node = o.registry->NodeAt(c, ordinal);
      REQUIRE(node.ok());
      CHECK((*node)->ordinal() == ordinal);
      CHECK((*node)->name() == name.substr(name.find_last_of('/') + 1));
      has_zarr_json |= name == "data.zarr/zarr.json";
    }
    CHECK(has_zarr_json);
    CHECK(o.registry->NodeAt(c, o.registry->OrdinalCount(c)).status().error_number() == ENOENT);
  }
}

// The expected bytes of inner chunk `k` (C order in the chunk's block grid)
// of the shard of chunk `coords`: the block's items, zeros past the array.
std::vector<uint8_t> WantBlock(const Array& a, const std::vector<int64_t>& coords, int64_t k) {
  const size_t n = a.shape.size();
  std::vector<int64_t> start(n);
  for (size_t i = n; i-- > 0;) {
    const int64_t per = a.chunks[i] / a.blocks[i];
    start[i] = coords[i] * a.chunks[i] + (k % per) * a.blocks[i];
    k /= per;
  }
  int64_t items = 1;
  for (int32_t b : a.blocks) items *= b;
  std::vector<uint8_t> out(static_cast<size_t>(items * a.itemsize), 0);
  for (int64_t j = 0; j < items; ++j) {
    int64_t rest = j, linear = 0;
    bool inside = true;
    std::vector<int64_t> at(n);
    for (size_t i = n; i-- > 0;) {
      at[i] = start[i] + rest % a.blocks[i];
      rest /= a.blocks[i];
    }
    for (size_t i = 0; i < n; ++i) {
      inside = inside && at[i] < a.shape[i];
      linear = linear * a.shape[i] + at[i];
    }
    if (inside) {
      std::memcpy(out.data() + j * a.itemsize, a.data.data() + linear * a.itemsize,
                  static_cast<size_t>(a.itemsize));
    }
  }
  return out;
}

TEST_CASE("data.zarr shards hold the blocks, then the index", "[views]") {
  testing::TempDir dir("b2ndfs_views");
  testing::TestStore ts(size_t{64} << 20, 4, 0);
  // Edge chunks on every axis, edge blocks, blocks wholly past the array.
  const Array a = MakeArray({23, 17, 6}, {8, 8, 4}, {4, 2, 4}, "<i4", 4);
  Opened o = Write(ts, (dir.path / "s.b2nd").string(), a, 7);
  const store::Container& c = *o.container;
  const int64_t count = 2 * 4 * 1, inner = 4 * 2 * 4 * 4;
  std::mt19937_64 rng(3);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t k = 0; k < 2; ++k) {
        const std::string key =
            std::to_string(i) + "/" + std::to_string(j) + "/" + std::to_string(k);
        INFO(key);
        NodePtr shard = Find(c, *o.registry, "data.zarr/c/" + key);
        REQUIRE(shard->Size(c) == count * inner + 16 * count + 4);
        const std::vector<uint8_t> bytes = ReadAll(c, *shard);
        std::vector<uint8_t> index;
        for (int64_t b = 0; b < count; ++b) {
          const auto want = WantBlock(a, {i, j, k}, b);
          CHECK(std::equal(want.begin(), want.end(), bytes.begin() + b * inner));
          for (uint64_t v : {static_cast<uint64_t>(b * inner), static_cast<uint64_t>(inner)}) {
            for (int s = 0; s < 8; ++s) index.push_back(static_cast<uint8_t>(v >> (8 * s)));
          }
        }
        const uint32_t crc = views::Crc32c(index);
        for (int s = 0; s < 4; ++s) index.push_back(static_cast<uint8_t>(crc >> (8 * s)));
        CHECK(std::equal(index.begin(), index.end(), bytes.begin() + count * inner));
        for (int trial = 0; trial < 20; ++trial) {
          const size_t from = rng() % bytes.size(), length = 1 + rng() % 300;
          std::vector<uint8_t> part(length);
          auto n = shard->Read(c, static_cast<int64_t>(from), length, part.data());
          REQUIRE(n.ok());
          REQUIRE(*n == std::min(length, bytes.size() - from));
          CHECK(std::equal(part.begin(), part.begin() + static_cast<ptrdiff_t>(*n),
                           bytes.begin() + static_cast<ptrdiff_t>(from)));
        }
      }
    }
  }
  CHECK_FALSE(Find(c, *o.registry, "data.zarr/c")->Lookup(c, "3").ok());
  CHECK_FALSE(Find(c, *o.registry, "data.zarr/c/0")->Lookup(c, "01").ok());
}

TEST_CASE("data.zarr unsharded chunks are zarr/'s padded chunks", "[views]") {
  testing::TempDir dir("b2ndfs_views");
  testing::TestStore ts(size_t{64} << 20, 4, 0);
  const Array a = MakeArray({20, 16}, {10, 8}, {4, 4}, ">i2", 2);
  // xarray's dimension names, msgpack ["y", "x"].
  Opened o = Write(ts, (dir.path / "u.b2nd").string(), a, 8,
                   {"_ARRAY_DIMENSIONS", {0x92, 0xa1, 'y', 0xa1, 'x'}});
  const store::Container& c = *o.container;
  for (const char* key : {"0/0", "1/1"}) {
    std::string v2 = key;
    v2[1] = '.';
    CHECK(ReadAll(c, *Find(c, *o.registry, std::string("data.zarr/c/") + key)) ==
          ReadAll(c, *Find(c, *o.registry, "zarr/" + v2)));
  }
  const std::string json = [&] {
    auto bytes = ReadAll(c, *Find(c, *o.registry, "data.zarr/zarr.json"));
    return std::string(bytes.begin(), bytes.end());
  }();
  CHECK(
      json.find("\"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}]") !=
      std::string::npos);
  CHECK(json.find("\"dimension_names\": [\"y\", \"x\"],\n") != std::string::npos);
  // The vlmeta object as meta.json writes it.
  CHECK(json.find("\"attributes\": {\n    \"_ARRAY_DIMENSIONS\": [\"y\", \"x\"]\n  }\n}\n") !=
        std::string::npos);
  CHECK(c.meta_json().find("is not a whole number of blocks [4, 4]") != std::string::npos);
}

TEST_CASE("one inner chunk of a cold shard decompresses one block", "[views]") {
  testing::TempDir dir("b2ndfs_views");
  testing::TestStore ts(size_t{64} << 20, 4, 0);
  const Array a = MakeArray({64, 64}, {32, 32}, {8, 16}, "<f8", 8);
  Opened o = Write(ts, (dir.path / "b.b2nd").string(), a, 9);
  const store::Container& c = *o.container;
  NodePtr shard = Find(c, *o.registry, "data.zarr/c/1/0");
  const int64_t inner = 8 * 16 * 8, count = 4 * 2;
  auto& decompressed = store::GlobalReadStats().blocks_decompressed;
  std::vector<uint8_t> out(static_cast<size_t>(16 * count + 4));
  uint64_t before = decompressed.load();
  REQUIRE(shard->Read(c, count * inner, out.size(), out.data()).ok());
  CHECK(decompressed.load() - before == 0);
  out.resize(static_cast<size_t>(inner));
  before = decompressed.load();
  REQUIRE(shard->Read(c, 5 * inner, out.size(), out.data()).ok());
  CHECK(decompressed.load() - before == 1);
  const auto want = WantBlock(a, {1, 0}, 5);
  CHECK(out == want);
}

}  // namespace
}  // namespace b2ndfs
