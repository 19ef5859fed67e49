// The stores tree (stores/store_tree.h) under vfs::Filesystem, over a fake
// source tree holding a .b2z archive in memory: the store is a directory, a
// leaf named without an extension is a container (source::Tree::IsContainer,
// asked by vfs), its data reads the member's array in place, and a replaced
// archive is a new version while an open file reads on the one it opened.
#include "b2ndfs/stores/store_tree.h"

#include <fcntl.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>

#include "b2nd_writer.h"
#include "b2ndfs/format/npy_header.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"
#include "ctable.h"
#include "fake_tree.h"
#include "temp_dir.h"
#include "test_store.h"
#include "zip_test_archive.h"

namespace b2ndfs {
namespace {

using testing::Bytes;
using testing::FakeTree;

// A float32 array of 100 items (value + i) as c-blosc2 writes it: frame bytes
// and C-order bytes.
std::pair<std::string, Bytes> MakeLeaf(float value) {
  testing::TempDir dir("b2ndfs_store_tree");
  const std::string path = (dir.path / "a.b2nd").string();
  std::vector<float> values(100);
  for (size_t i = 0; i < values.size(); ++i) values[i] = value + static_cast<float>(i);
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = 4;
  cparams.nthreads = 1;
  int64_t shape[] = {100};
  int32_t chunks[] = {40};
  int32_t blocks[] = {10};
  b2nd_free(
      testing::WriteContiguous(path, cparams, 1, shape, chunks, blocks, "<f4", values.data(), 400));
  std::ifstream in(path, std::ios::binary);
  std::string frame((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Bytes data(400);
  std::memcpy(data.data(), values.data(), 400);
  return {frame, data};
}

// An empty EmbedStore frame tagged as a TreeStore's (tree_store.py).
std::string EmptyEmbedStore() {
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
  blosc2_storage storage = {.contiguous = true, .cparams = &cparams, .dparams = &dparams};
  blosc2_schunk* s = blosc2_schunk_new(&storage);
  REQUIRE(s != nullptr);
  uint8_t tag[] = {0x81, 0xa7, 'v', 'e', 'r', 's', 'i', 'o', 'n', 0x01};  // {"version": 1}
  REQUIRE(blosc2_meta_add(s, "b2tree", tag, sizeof(tag)) >= 0);
  uint8_t* cframe = nullptr;
  bool needs_free = false;
  const int64_t len = blosc2_schunk_to_buffer(s, &cframe, &needs_free);
  REQUIRE(len > 0);
  std::string out(reinterpret_cast<char*>(cframe), static_cast<size_t>(len));
  if (needs_free) free(cframe);
  blosc2_schunk_free(s);
  return out;
}

Bytes Archive(const std::string& leaf_frame, const std::string& embed, bool deflated = false) {
  testing::TestArchive a = testing::MakeTestArchive(
      {{"grp/leaf.b2nd", leaf_frame, deflated ? 8 : 0}, {"embed.b2e", embed}});
  return a.bytes;
}

struct StoreMount {
  StoreMount() : fake(std::make_shared<FakeTree>()), store(64 << 20, 4, 0) {}
  void Start() {
    SetLogLevel(LogLevel::kError);
    vfs::Options options;
    options.source = FakeTree::kRoot;
    options.tree = stores::MakeStoreTree(fake, &store.ctx);
    fs = std::make_unique<vfs::Filesystem>(options, &store.ctx);
  }
  Result<vfs::Attr> Lookup(const std::vector<std::string>& path) {
    vfs::Ino ino = vfs::kRootIno;
    Result<vfs::Attr> attr = Status(ENOENT, "empty path");
    for (const auto& name : path) {
      attr = fs->Lookup(ino, name);
      if (!attr.ok()) return attr;
      ino = attr->st.st_ino;
    }
    return attr;
  }
  Bytes ReadAll(const vfs::FileHandle& handle, size_t length) {
    Bytes out(length);
    auto n = fs->Read(handle, 0, length, out.data());
    INFO((n.ok() ? "" : n.status().message()));
    REQUIRE(n.ok());
    out.resize(*n);
    return out;
  }
  std::shared_ptr<FakeTree> fake;
  testing::TestStore store;
  std::unique_ptr<vfs::Filesystem> fs;
};

Bytes ToBytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

// A 1-D array frame of `n` items of `itemsize` bytes as c-blosc2 writes it.
std::string ArrayFrame(const char* dtype, int32_t itemsize, int64_t n, int32_t chunk, int32_t block,
                       const void* data) {
  testing::TempDir dir("b2ndfs_store_tree");
  const std::string path = (dir.path / "a.b2nd").string();
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = itemsize;
  cparams.nthreads = 1;
  int64_t shape[] = {n};
  int32_t chunks[] = {chunk};
  int32_t blocks[] = {block};
  b2nd_free(
      testing::WriteContiguous(path, cparams, 1, shape, chunks, blocks, dtype, data, n * itemsize));
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A CTable's /_meta: an SChunk whose vlmeta "kind" is "ctable"
// (ctable_storage.py, FileTableStorage.save_schema and _meta).
std::string CTableMeta() {
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
  blosc2_storage storage = {.contiguous = true, .cparams = &cparams, .dparams = &dparams};
  blosc2_schunk* s = blosc2_schunk_new(&storage);
  REQUIRE(s != nullptr);
  uint8_t kind[] = {0xa6, 'c', 't', 'a', 'b', 'l', 'e'};
  REQUIRE(blosc2_vlmeta_add(s, "kind", kind, sizeof(kind), nullptr) >= 0);
  uint8_t* cframe = nullptr;
  bool needs_free = false;
  const int64_t len = blosc2_schunk_to_buffer(s, &cframe, &needs_free);
  REQUIRE(len > 0);
  std::string out(reinterpret_cast<char*>(cframe), static_cast<size_t>(len));
  if (needs_free) free(cframe);
  blosc2_schunk_free(s);
  return out;
}

// A .b2z holding a CTable at /t of `rows` rows, live where `live(i)`, and a
// float32 column x = i * 0.5 (chunks of 40 items, blocks of 10; _valid_rows
// in chunks of 30,000).
struct Table {
  Bytes archive;
  std::vector<float> live_x;  // numpy's x[valid]
};
Table MakeTable(int64_t rows, bool (*live)(int64_t)) {
  std::vector<uint8_t> valid(static_cast<size_t>(rows));
  std::vector<float> x(static_cast<size_t>(rows));
  Table t;
  for (int64_t i = 0; i < rows; ++i) {
    valid[static_cast<size_t>(i)] = live(i) ? 1 : 0;
    x[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f;
    if (live(i)) t.live_x.push_back(x[static_cast<size_t>(i)]);
  }
  const std::string valid_frame = ArrayFrame("|b1", 1, rows, 30000, 5000, valid.data());
  const std::string x_frame = ArrayFrame("<f4", 4, rows, 40000, 4000, x.data());
  t.archive = testing::MakeTestArchive({{"t/_cols/x.b2nd", x_frame},
                                        {"t/_valid_rows.b2nd", valid_frame},
                                        {"t/_meta.b2f", CTableMeta()},
                                        {"embed.b2e", EmptyEmbedStore()}})
                  .bytes;
  return t;
}

}  // namespace

TEST_CASE("valid/NAME.npy names and headers", "[stores]") {
  using format::NpyHeader;
  CHECK(stores::internal::ValidFileName("x") == "x.npy");
  CHECK(stores::internal::ValidFileName("pos/z") == "pos.z.npy");
  const std::string h = NpyHeader("'<f4'", {9});
  // A page of its own (format/npy_header.h): 10 bytes of preamble, then
  // 4086 of dictionary, spaces and '\n' (0x0ff6).
  CHECK(h == std::string("\x93NUMPY\x01\x00\xf6\x0f", 10) +
                 "{'descr': '<f4', 'fortran_order': False, 'shape': (9,), }" +
                 std::string(4096 - 10 - 57 - 1, ' ') + "\n");
  CHECK(NpyHeader("'<i2'", {9, 3}).find("'shape': (9, 3), }") != std::string::npos);
  // An empty array's is not (numpy.memmap cannot map a file whose data would
  // begin at its end on a page boundary).
  CHECK(NpyHeader("'<f4'", {0}).size() == 128);
  CHECK(NpyHeader("'<f4'", {3, 0}).size() == 128);
  const std::string v2 = NpyHeader("'" + std::string(70000, 'x') + "'", {1});
  CHECK(v2[6] == 2);
  CHECK(v2.size() % 64 == 0);
}

TEST_CASE("a CTable's valid/x.npy holds x at the live rows, over several segments", "[stores]") {
  // 150,000 rows: three segments of 65,536; the second holds one live row.
  const int64_t rows = 150000;
  Table t = MakeTable(
      rows, [](int64_t i) { return i % 3 != 0 && (i < 65536 || i >= 131072 || i == 100000); });
  StoreMount m;
  m.fake->PutFile("s.b2z", t.archive);
  m.Start();
  auto valid_dir = m.Lookup({"s.b2z", "t", "valid"});
  REQUIRE(valid_dir.ok());
  CHECK(S_ISDIR(valid_dir->st.st_mode));
  auto file = m.Lookup({"s.b2z", "t", "valid", "x.npy"});
  REQUIRE(file.ok());
  CHECK(S_ISREG(file->st.st_mode));  // a plain file, not a container directory
  const std::string header = format::NpyHeader("'<f4'", {static_cast<int64_t>(t.live_x.size())});
  Bytes want(header.begin(), header.end());
  const auto* x = reinterpret_cast<const uint8_t*>(t.live_x.data());
  want.insert(want.end(), x, x + t.live_x.size() * 4);
  REQUIRE(file->st.st_size == static_cast<off_t>(want.size()));
  auto handle = m.fs->Open(file->st.st_ino, O_RDONLY);
  REQUIRE(handle.ok());
  CHECK(m.ReadAll(*handle, want.size() + 10) == want);
  // Reads that start and end inside items, the header, and segment edges.
  for (int64_t at : {int64_t{0}, int64_t{61}, int64_t{130}, int64_t{4 * 43690 + 127},
                     static_cast<int64_t>(want.size()) - 5}) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{4099}, size_t{300000}}) {
      Bytes out(n);
      auto got = m.fs->Read(*handle, at, n, out.data());
      REQUIRE(got.ok());
      const size_t expect = std::min(n, want.size() - static_cast<size_t>(at));
      REQUIRE(*got == expect);
      CHECK(std::equal(out.begin(), out.begin() + static_cast<int64_t>(expect), want.begin() + at));
    }
  }
}

TEST_CASE("valid/x.npy reads its leaves as the mount's containers: a direct read shares blocks",
          "[stores]") {
  const int64_t rows = 100000;
  Table t = MakeTable(rows, [](int64_t i) { return i % 3 != 0; });
  StoreMount m;
  m.fake->PutFile("s.b2z", t.archive);
  m.Start();
  auto file = m.Lookup({"s.b2z", "t", "valid", "x.npy"});
  REQUIRE(file.ok());
  auto handle = m.fs->Open(file->st.st_ino, O_RDONLY);
  REQUIRE(handle.ok());
  CHECK(m.ReadAll(*handle, static_cast<size_t>(file->st.st_size)).size() ==
        static_cast<size_t>(file->st.st_size));
  // Every block of the column was read for the file, under the column's
  // generation: reading the column's data directly decompresses nothing.
  auto data = m.Lookup({"s.b2z", "t", "_cols", "x", "data"});
  REQUIRE(data.ok());
  REQUIRE(data->st.st_size == rows * 4);
  auto direct = m.fs->Open(data->st.st_ino, O_RDONLY);
  REQUIRE(direct.ok());
  const uint64_t before = m.store.cache.stats().bytes_loaded;
  const Bytes x = m.ReadAll(*direct, static_cast<size_t>(rows * 4));
  CHECK(x.size() == static_cast<size_t>(rows * 4));
  CHECK(m.store.cache.stats().bytes_loaded - before == 0);
}

TEST_CASE("a CTable without live rows has an empty valid/x.npy", "[stores]") {
  Table t = MakeTable(1000, [](int64_t) { return false; });
  StoreMount m;
  m.fake->PutFile("s.b2z", t.archive);
  m.Start();
  auto file = m.Lookup({"s.b2z", "t", "valid", "x.npy"});
  REQUIRE(file.ok());
  const std::string header = format::NpyHeader("'<f4'", {0});
  CHECK(file->st.st_size == static_cast<off_t>(header.size()));
  auto handle = m.fs->Open(file->st.st_ino, O_RDONLY);
  REQUIRE(handle.ok());
  CHECK(m.ReadAll(*handle, header.size() + 1000) == Bytes(header.begin(), header.end()));
}

TEST_CASE("a .b2z is a directory whose extensionless leaf is a container", "[stores]") {
  auto [frame, data] = MakeLeaf(1.5f);
  StoreMount m;
  m.fake->PutFile("s.b2z", Archive(frame, EmptyEmbedStore()));
  m.Start();
  auto store = m.Lookup({"s.b2z"});
  REQUIRE(store.ok());
  CHECK(S_ISDIR(store->st.st_mode));
  auto leaf = m.Lookup({"s.b2z", "grp", "leaf"});
  REQUIRE(leaf.ok());
  CHECK(S_ISDIR(leaf->st.st_mode));  // a container directory, not the member's bytes
  auto file = m.Lookup({"s.b2z", "grp", "leaf", "data"});
  REQUIRE(file.ok());
  CHECK(file->st.st_size == 400);
  auto handle = m.fs->Open(file->st.st_ino, O_RDONLY);
  REQUIRE(handle.ok());
  CHECK(m.ReadAll(*handle, 400) == data);
  auto meta = m.Lookup({"s.b2z", "meta.json"});
  REQUIRE(meta.ok());
  CHECK(S_ISREG(meta->st.st_mode));
}

TEST_CASE("a replaced .b2z is a new version; an open leaf file reads the one it opened",
          "[stores]") {
  auto [frame1, data1] = MakeLeaf(1.0f);
  auto [frame2, data2] = MakeLeaf(500.0f);
  StoreMount m;
  const std::string embed = EmptyEmbedStore();
  m.fake->PutFile("s.b2z", Archive(frame1, embed));
  m.Start();
  auto file = m.Lookup({"s.b2z", "grp", "leaf", "data"});
  REQUIRE(file.ok());
  auto old_handle = m.fs->Open(file->st.st_ino, O_RDONLY);
  REQUIRE(old_handle.ok());
  m.fake->PutFile("s.b2z", Archive(frame2, embed));
  CHECK(m.ReadAll(*old_handle, 400) == data1);
  // The names are looked up again (the kernel would, after ESTALE).
  auto fresh = m.Lookup({"s.b2z", "grp", "leaf", "data"});
  REQUIRE(fresh.ok());
  auto new_handle = m.fs->Open(fresh->st.st_ino, O_RDONLY);
  REQUIRE(new_handle.ok());
  CHECK(m.ReadAll(*new_handle, 400) == data2);
}

TEST_CASE("what cannot be read in place is a directory holding a meta.json error", "[stores]") {
  auto [frame, data] = MakeLeaf(2.0f);
  StoreMount m;
  m.fake->PutFile("deflated.b2z", Archive(frame, EmptyEmbedStore(), true));
  m.fake->PutFile("junk.b2z", ToBytes("not a zip archive at all, just words"));
  m.Start();
  auto leaf = m.Lookup({"deflated.b2z", "grp", "leaf"});
  REQUIRE(leaf.ok());
  CHECK(S_ISDIR(leaf->st.st_mode));
  CHECK_FALSE(m.Lookup({"deflated.b2z", "grp", "leaf", "data"}).ok());
  for (const auto& path : std::vector<std::vector<std::string>>{
           {"deflated.b2z", "grp", "leaf", "meta.json"}, {"junk.b2z", "meta.json"}}) {
    auto meta = m.Lookup(path);
    REQUIRE(meta.ok());
    auto handle = m.fs->Open(meta->st.st_ino, O_RDONLY);
    REQUIRE(handle.ok());
    const Bytes text = m.ReadAll(*handle, static_cast<size_t>(meta->st.st_size));
    CHECK(std::string(text.begin(), text.end()).find("\"error\"") != std::string::npos);
  }
  auto listing = m.fs->OpenDir(m.Lookup({"junk.b2z"})->st.st_ino);
  REQUIRE(listing.ok());
  REQUIRE((*listing)->size() == 1);
  CHECK((*listing)->at(0).name == "meta.json");
}

TEST_CASE("a store group is a Zarr group whose variable is the leaf's own directory", "[stores]") {
  auto [frame, data] = MakeLeaf(2.5f);
  StoreMount m;
  m.fake->PutFile("s.b2z", Archive(frame, EmptyEmbedStore()));
  m.Start();
  auto zmeta = m.Lookup({"s.b2z", "grp", ".zmetadata"});
  REQUIRE(zmeta.ok());
  auto handle = m.fs->Open(zmeta->st.st_ino, O_RDONLY);
  REQUIRE(handle.ok());
  Bytes text = m.ReadAll(*handle, static_cast<size_t>(zmeta->st.st_size));
  const std::string json(text.begin(), text.end());
  CHECK(json.find("\"leaf/.zarray\"") != std::string::npos);
  CHECK(json.find("\"leaf_dim_0\"") != std::string::npos);
  // The chunk keys the group's readers ask the leaf's directory for: zarr/'s
  // chunk files (40 items each; the edge chunk padded to 40).
  for (int chunk = 0; chunk < 3; ++chunk) {
    auto file = m.Lookup({"s.b2z", "grp", "leaf", std::to_string(chunk)});
    REQUIRE(file.ok());
    CHECK(file->st.st_size == 160);
    auto h = m.fs->Open(file->st.st_ino, O_RDONLY);
    REQUIRE(h.ok());
    Bytes got = m.ReadAll(*h, 160);
    const size_t n = chunk < 2 ? 160 : 80;
    CHECK(Bytes(got.begin(), got.begin() + static_cast<int64_t>(n)) ==
          Bytes(data.begin() + chunk * 160, data.begin() + chunk * 160 + static_cast<int64_t>(n)));
  }
  CHECK(!m.Lookup({"s.b2z", "grp", "leaf", "3"}).ok());
  CHECK(!m.Lookup({"s.b2z", "grp", "leaf", "x1"}).ok());
}
}  // namespace b2ndfs

namespace b2ndfs {
namespace {

TEST_CASE("store keys named like the files b2ndfs makes are shown escaped, once each", "[stores]") {
  auto [frame, data] = MakeLeaf(2.5f);
  StoreMount m;
  m.fake->PutFile("s.b2z", testing::MakeTestArchive({{"meta.json.b2nd", frame},
                                                     {"columns.json.b2nd", frame},
                                                     {"valid/x.b2nd", frame},
                                                     {"~tilde.b2nd", frame},
                                                     {"embed.b2e", EmptyEmbedStore()}})
                               .bytes);
  m.Start();
  auto listing = m.fs->OpenDir(m.Lookup({"s.b2z"})->st.st_ino);
  REQUIRE(listing.ok());
  std::vector<std::string> names;
  for (size_t i = 0; i < (*listing)->size(); ++i) names.push_back((*listing)->at(i).name);
  std::sort(names.begin(), names.end());
  CHECK(names ==
        std::vector<std::string>{"meta.json", "~columns.json", "~meta.json", "~valid", "~~tilde"});
  for (const std::vector<std::string>& leaf :
       {std::vector<std::string>{"s.b2z", "~meta.json", "data"},
        {"s.b2z", "~columns.json", "data"},
        {"s.b2z", "~valid", "x", "data"},
        {"s.b2z", "~~tilde", "data"}}) {
    INFO(leaf[1]);
    auto file = m.Lookup(leaf);
    REQUIRE(file.ok());
    auto handle = m.fs->Open(file->st.st_ino, O_RDONLY);
    REQUIRE(handle.ok());
    CHECK(m.ReadAll(*handle, 400) == data);
  }
  auto meta = m.Lookup({"s.b2z", "meta.json"});
  REQUIRE(meta.ok());
  CHECK(S_ISREG(meta->st.st_mode));
}

}  // namespace
}  // namespace b2ndfs
