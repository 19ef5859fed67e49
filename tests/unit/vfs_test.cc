// vfs::Filesystem driven without FUSE through a fake source tree: what an open
// file, a generation and a name hold when containers are replaced, sources
// fail and walks visit every name (README.md, "Containers that change").
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "array_frame.h"
#include "b2nd_writer.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"
#include "b2ndfs/views/view.h"
#include "fake_tree.h"
#include "generation.h"
#include "temp_dir.h"
#include "test_store.h"

namespace b2ndfs {
namespace {

using testing::Array;
using testing::Bytes;
using testing::FakeTree;
using testing::MakeArray;

// A filesystem over a fake tree, with the store the mount sets up.
struct Mount {
  explicit Mount(bool remote = false, size_t cache_bytes = 64 << 20)
      : tree(std::make_shared<FakeTree>(remote)), store(cache_bytes, 4, 2) {}
  void Start(int healthy_grace_ms = 2000, int suspect_grace_ms = 40) {
    SetLogLevel(LogLevel::kWarning);  // replacements are logged at info
    vfs::Options options;
    options.source = FakeTree::kRoot;
    options.tree = tree;
    options.healthy_grace_ms = healthy_grace_ms;
    options.suspect_grace_ms = suspect_grace_ms;
    options.views = views;
    options.log_readable_by_all = log_readable_by_all;
    fs = std::make_unique<vfs::Filesystem>(options, &store.ctx);
  }
  std::shared_ptr<const views::Registry> views;  // null: every kind
  bool log_readable_by_all = false;
  std::vector<std::string> ListNames(vfs::Ino dir) {
    auto listing = fs->OpenDir(dir);
    REQUIRE(listing.ok());
    std::vector<std::string> names;
    for (size_t i = 0; i < (*listing)->size(); ++i) names.push_back((*listing)->at(i).name);
    std::sort(names.begin(), names.end());
    return names;
  }
  vfs::Ino Lookup(vfs::Ino parent, const std::string& name) {
    auto attr = fs->Lookup(parent, name);
    INFO(name << ": " << (attr.ok() ? "" : attr.status().message()));
    REQUIRE(attr.ok());
    return attr->st.st_ino;
  }
  int LookupError(vfs::Ino parent, const std::string& name) {
    auto attr = fs->Lookup(parent, name);
    return attr.ok() ? 0 : attr.status().error_number();
  }
  vfs::FileHandle Open(vfs::Ino ino) {
    auto handle = fs->Open(ino, O_RDONLY);
    INFO((handle.ok() ? "" : handle.status().message()));
    REQUIRE(handle.ok());
    return std::move(handle).value();
  }
  // Bytes [offset, offset + length) of an open file, or its error.
  Result<Bytes> Read(const vfs::FileHandle& handle, int64_t offset, size_t length) {
    Bytes out(length);
    B2NDFS_ASSIGN_OR_RETURN(const size_t n, fs->Read(handle, offset, length, out.data()));
    out.resize(n);
    return out;
  }
  Bytes ReadAll(const vfs::FileHandle& handle, size_t length) {
    auto bytes = Read(handle, 0, length);
    INFO((bytes.ok() ? "" : bytes.status().message()));
    REQUIRE(bytes.ok());
    return std::move(bytes).value();
  }

  std::shared_ptr<FakeTree> tree;
  testing::TestStore store;
  std::unique_ptr<vfs::Filesystem> fs;
};

Bytes Slice(const Bytes& b, size_t offset, size_t length) {
  return Bytes(b.begin() + static_cast<ptrdiff_t>(offset),
               b.begin() + static_cast<ptrdiff_t>(offset + length));
}

struct Counts {
  uint64_t decompressed, source_reads;
  static Counts Now() {
    const store::ReadStats& r = store::GlobalReadStats();
    return Counts{r.blocks_decompressed.load(), r.source_reads.load()};
  }
};

TEST_CASE("an open file reads the version it opened to its end, after a replacement and a lookup",
          "[vfs]") {
  const Array v1 = MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 1.0f);
  const Array v2 = MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 500.0f);
  const bool remote = GENERATE(false, true);
  Mount m(remote);
  m.tree->PutFile("a.b2nd", v1.frame);
  m.Start();
  const vfs::Ino dir = m.Lookup(vfs::kRootIno, "a.b2nd");
  const vfs::Ino data = m.Lookup(dir, "data");
  const size_t size = v1.data.size(), half = size / 2;
  {
    vfs::FileHandle old = m.Open(data);
    // A remote old version reads on from what is cached: all of it is.
    const size_t first = remote ? size : half;
    auto head = m.Read(old, 0, first);
    REQUIRE(head.ok());
    CHECK(*head == Slice(v1.data, 0, first));
    CHECK(m.tree->holds() == 1);

    m.tree->SetOldVersionsReadable(!remote);
    m.tree->PutFile("a.b2nd", v2.frame);  // replaced, as by rename
    // Someone else looks: the name now is the new version's.
    const vfs::Ino fresh = m.Lookup(dir, "data");
    CHECK(fresh != data);
    // fstat of the open descriptor (the kernel asks by number alone): its
    // own version, not to be cached.
    auto held = m.fs->GetAttr(data);
    REQUIRE(held.ok());
    CHECK(held->timeout == 0);
    CHECK(held->st.st_size == static_cast<off_t>(size));
    CHECK(m.fs->GetAttr(data, &old).ok());

    auto rest = m.Read(old, static_cast<int64_t>(half), size - half);
    REQUIRE(rest.ok());
    CHECK(*rest == Slice(v1.data, half, size - half));
    auto again = m.Read(old, 0, half);
    REQUIRE(again.ok());
    CHECK(*again == Slice(v1.data, 0, half));

    vfs::FileHandle now = m.Open(fresh);
    CHECK(m.ReadAll(now, size) == v2.data);
  }
  CHECK(m.tree->holds() == 0);
  // Nothing holds the old version any more: its numbers are stale.
  CHECK(m.fs->GetAttr(data).status().error_number() == ESTALE);
}

TEST_CASE("a remote file whose version the server no longer has answers EIO where not cached",
          "[vfs]") {
  const Array v1 = MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 1.0f);
  const Array v2 = MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 500.0f);
  Mount m(/*remote=*/true);
  m.tree->PutFile("a.b2nd", v1.frame);
  m.tree->SetOldVersionsReadable(false);
  m.Start();
  const vfs::Ino data = m.Lookup(m.Lookup(vfs::kRootIno, "a.b2nd"), "data");
  vfs::FileHandle old = m.Open(data);
  const size_t size = v1.data.size();
  REQUIRE(m.Read(old, 0, 4096).ok());
  m.tree->PutFile("a.b2nd", v2.frame);
  auto tail = m.Read(old, static_cast<int64_t>(size - 4096), 4096);
  REQUIRE(!tail.ok());
  CHECK(tail.status().error_number() == EIO);
  // What it read before is still served from the cache.
  auto head = m.Read(old, 0, 4096);
  REQUIRE(head.ok());
  CHECK(*head == Slice(v1.data, 0, 4096));
}

TEST_CASE("an outage keeps the generation, its cached blocks and its names", "[vfs]") {
  const Array v1 = MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 1.0f);
  const int error = GENERATE(ETIMEDOUT, ECONNREFUSED, EIO, EMFILE);
  Mount m(/*remote=*/true);
  m.tree->PutFile("a.b2nd", v1.frame);
  m.tree->PutFile("b.b2nd", v1.frame);
  m.Start();
  const vfs::Ino dir = m.Lookup(vfs::kRootIno, "a.b2nd");
  const vfs::Ino data = m.Lookup(dir, "data");
  const size_t size = v1.data.size();
  {
    vfs::FileHandle h = m.Open(data);
    REQUIRE(m.ReadAll(h, size) == v1.data);
  }
  m.tree->SetOutage(error);
  const Counts before = Counts::Now();
  // Known names answer, open and read from the cache.
  CHECK(m.fs->GetAttr(data).ok());
  CHECK(m.fs->GetAttr(dir).ok());  // the source's attributes as last seen
  CHECK(m.Lookup(dir, "data") == data);
  {
    vfs::FileHandle h = m.Open(data);
    CHECK(m.ReadAll(h, size) == v1.data);
  }
  // A name never seen cannot be had: the error, never ENOENT.
  CHECK(m.LookupError(vfs::kRootIno, "b.b2nd") == error);
  m.tree->SetOutage(0);
  {
    vfs::FileHandle h = m.Open(m.Lookup(dir, "data"));
    CHECK(m.ReadAll(h, size) == v1.data);
  }
  const Counts after = Counts::Now();
  CHECK(after.decompressed == before.decompressed);
  CHECK(after.source_reads == before.source_reads);
  CHECK(m.fs->StatsJson().find("\"generations_replaced\": 0") != std::string::npos);
}

// The number after "NAME": in .b2ndfs/stats.
uint64_t StatsValue(const std::string& json, const std::string& name) {
  const size_t at = json.find("\"" + name + "\": ");
  REQUIRE(at != std::string::npos);
  return std::stoull(json.substr(at + name.size() + 4));
}

TEST_CASE("a server that does not answer keeps no request waiting on known names", "[vfs]") {
  const Array v1 = MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 1.0f);
  Mount m(/*remote=*/true);
  m.tree->PutFile("a.b2nd", v1.frame);
  m.Start(/*healthy_grace_ms=*/20, /*suspect_grace_ms=*/2);
  const vfs::Ino dir = m.Lookup(vfs::kRootIno, "a.b2nd");
  const vfs::Ino data = m.Lookup(dir, "data");
  {
    vfs::FileHandle h = m.Open(data);
    REQUIRE(m.ReadAll(h, v1.data.size()) == v1.data);
  }
  // Every question now takes 150 ms and then fails, as a server that drops
  // packets does until the client's timeout.
  m.tree->SetDelay(std::chrono::milliseconds(150));
  m.tree->SetOutage(ETIMEDOUT);
  const int64_t probes_before = m.tree->probes();
  for (int i = 0; i < 10; ++i) {
    auto attr = m.fs->GetAttr(data);
    REQUIRE(attr.ok());
    vfs::FileHandle h = m.Open(data);
    CHECK(m.ReadAll(h, v1.data.size()) == v1.data);
  }
  // One probe at a time, on the background threads, shared by the requests
  // meanwhile (20 of them); the requests went on with the generation they
  // knew.
  CHECK(m.tree->probes() - probes_before < 10);
  CHECK(StatsValue(m.fs->StatsJson(), "served_known") >= 10);
  // A name never seen waits for the source, and gets its error.
  CHECK(m.LookupError(vfs::kRootIno, "b.b2nd") == ETIMEDOUT);
  m.tree->SetDelay(std::chrono::milliseconds(0));
}

TEST_CASE("a container that is gone ends its generation; its open files read on", "[vfs]") {
  const Array v1 = MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 1.0f);
  Mount m;
  m.tree->PutFile("a.b2nd", v1.frame);
  m.Start();
  const vfs::Ino dir = m.Lookup(vfs::kRootIno, "a.b2nd");
  const vfs::Ino data = m.Lookup(dir, "data");
  vfs::FileHandle h = m.Open(data);
  m.tree->Remove("a.b2nd");
  CHECK(m.LookupError(dir, "data") == ENOENT);
  CHECK(m.ReadAll(h, v1.data.size()) == v1.data);
}

// Every directory below `dir`, listed and looked up as `find` does; returns
// the number of names seen.
size_t Walk(Mount& m, vfs::Ino dir, int depth = 0) {
  auto listing = m.fs->OpenDir(dir);
  REQUIRE(listing.ok());
  size_t names = 0;
  for (size_t i = 0; *(*listing)->Has(i); ++i) {
    const vfs::DirEntry e = (*listing)->at(i);
    auto attr = m.fs->Lookup(dir, e.name);
    INFO(e.name);
    REQUIRE(attr.ok());
    // The number a listing gives is the one lookup and stat give.
    CHECK(attr->st.st_ino == e.ino);
    if ((*listing)->cheap_lookups()) {
      auto listed = (*listing)->Attributes(i);
      REQUIRE(listed.ok());
      CHECK(listed->st.st_ino == e.ino);
      CHECK(listed->st.st_size == attr->st.st_size);
    }
    auto again = m.fs->GetAttr(e.ino);
    REQUIRE(again.ok());
    CHECK(again->st.st_size == attr->st.st_size);
    CHECK(again->st.st_mode == attr->st.st_mode);
    ++names;
    if (S_ISDIR(e.type) && depth < 4) names += Walk(m, e.ino, depth + 1);
  }
  return names;
}

TEST_CASE("a walk of every name keeps no state per virtual file", "[vfs]") {
  Mount m;
  // 1-D, 2-D and 3-D containers: every kind of view directory.
  m.tree->PutFile("a.b2nd", MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 1.0f).frame);
  m.tree->PutFile("b.b2nd", MakeArray({100, 200}, {10, 10}, {5, 5}, 2.0f).frame);
  m.tree->PutFile("c.b2nd", MakeArray({1000}, {10}, {5}, 3.0f).frame);
  m.tree->PutDir("notes");
  for (int i = 0; i < 100; ++i) m.tree->PutFile("notes/n" + std::to_string(i) + ".txt", {1, 2, 3});
  m.Start();
  const size_t names = Walk(m, vfs::kRootIno);
  CHECK(names > 1500);
  // Records: only what the mirrored tree's walk looked up (3 containers,
  // a directory and its 100 files), none per virtual file.
  CHECK(m.fs->NodeCount() == 3 + 1 + 100);
  // The kernel forgets: the records go.
  for (const char* name : {"a.b2nd", "b.b2nd", "c.b2nd", "notes"}) {
    auto attr = m.fs->Lookup(vfs::kRootIno, name);
    REQUIRE(attr.ok());
    m.fs->Forget(attr->st.st_ino, 2);  // the walk's lookup and this one
  }
  auto notes = m.fs->Lookup(vfs::kRootIno, "notes");
  REQUIRE(notes.ok());
  for (int i = 0; i < 100; ++i) {
    auto attr = m.fs->Lookup(notes->st.st_ino, "n" + std::to_string(i) + ".txt");
    REQUIRE(attr.ok());
    m.fs->Forget(attr->st.st_ino, 2);
  }
  m.fs->Forget(notes->st.st_ino, 1);
  CHECK(m.fs->NodeCount() == 0);
}

TEST_CASE("every listed number names its file, whose bytes are the name's", "[vfs]") {
  const Array a = MakeArray({23, 19, 11}, {8, 8, 4}, {4, 4, 2}, 7.0f);
  Mount m;
  m.tree->PutFile("a.b2nd", a.frame);
  m.Start();
  const vfs::Ino dir = m.Lookup(vfs::kRootIno, "a.b2nd");
  for (const char* sub : {"slices/0", "slices/2", "chunks", "zarr"}) {
    vfs::Ino d = dir;
    std::string path = sub;
    for (size_t pos = 0; pos != std::string::npos;) {
      const size_t slash = path.find('/', pos);
      d = m.Lookup(d, path.substr(pos, slash == std::string::npos ? slash : slash - pos));
      pos = slash == std::string::npos ? slash : slash + 1;
    }
    auto listing = m.fs->OpenDir(d);
    REQUIRE(listing.ok());
    for (size_t i = 0; i < (*listing)->size(); ++i) {
      const vfs::DirEntry e = (*listing)->at(i);
      if (S_ISDIR(e.type)) continue;
      INFO(sub << "/" << e.name);
      vfs::FileHandle by_number = m.Open(e.ino);
      vfs::FileHandle by_name = m.Open(m.Lookup(d, e.name));
      auto attr = m.fs->GetAttr(e.ino);
      REQUIRE(attr.ok());
      const size_t n = static_cast<size_t>(attr->st.st_size);
      CHECK(m.ReadAll(by_number, n) == m.ReadAll(by_name, n));
    }
  }
}

TEST_CASE("readers, replacements, lookups and outages at once never mix versions",
          "[vfs][threads]") {
  const Array v1 = MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 1.0f);
  const Array v2 = MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 500.0f);
  Mount m(/*remote=*/false, /*cache_bytes=*/1 << 20);  // small: blocks come and go
  m.tree->PutFile("a.b2nd", v1.frame);
  m.Start();
  const vfs::Ino dir = m.Lookup(vfs::kRootIno, "a.b2nd");
  std::atomic<bool> stop{false};
  std::atomic<int> mixed{0}, reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      while (!stop.load()) {
        auto attr = m.fs->Lookup(dir, "data");
        if (!attr.ok()) continue;
        auto h = m.fs->Open(attr->st.st_ino, O_RDONLY);
        if (!h.ok()) continue;
        Bytes out(v1.data.size());
        for (size_t off = static_cast<size_t>(t) * 4096; off < out.size(); off += 3 * 8192) {
          const size_t len = std::min<size_t>(8192, out.size() - off);
          auto n = m.fs->Read(*h, static_cast<int64_t>(off), len, out.data() + off);
          if (!n.ok()) continue;
          reads++;
          const bool is1 = std::memcmp(out.data() + off, v1.data.data() + off, *n) == 0;
          const bool is2 = std::memcmp(out.data() + off, v2.data.data() + off, *n) == 0;
          if (!is1 && !is2) mixed++;
        }
      }
    });
  }
  for (int round = 0; round < 24; ++round) {
    m.tree->PutFile("a.b2nd", round % 2 ? v1.frame : v2.frame);
    if (round % 5 == 0) m.tree->SetOutage(ETIMEDOUT);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    m.tree->SetOutage(0);
    (void)m.fs->Lookup(dir, "meta.json");
  }
  stop = true;
  for (auto& t : threads) t.join();
  CHECK(mixed.load() == 0);
  CHECK(reads.load() > 0);
}

TEST_CASE("the open-container LRU takes off what it put on", "[vfs]") {
  auto tree = std::make_shared<FakeTree>();
  tree->PutFile("a.b2nd", MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 1.0f).frame);
  testing::TestStore store(8 << 20, 1, 0);
  auto source = tree->OpenContainer(std::string(FakeTree::kRoot) + "/a.b2nd", nullptr);
  REQUIRE(source.ok());
  auto container = store::Container::Open(*source, &store.ctx, 7, nullptr);
  REQUIRE(container->ok());
  vfs::OpenContainers open(4, 1 << 30);
  open.Touch(container);
  const int64_t before = container->memory_bytes();
  CHECK(open.bytes() == before);
  (void)container->meta_json();  // rendered now: the container holds more
  REQUIRE(container->memory_bytes() != before);
  open.Remove(container.get());
  CHECK(open.bytes() == 0);
  CHECK(open.size() == 0);
}

TEST_CASE("a directory listed page by page is read as readdir goes, one page held", "[vfs]") {
  Mount m(true);
  m.tree->PutDir("big");
  for (int i = 0; i < 25; ++i) m.tree->PutFile("big/f" + std::to_string(100 + i) + ".txt", {1});
  m.tree->SetPageSize(4);
  m.Start();
  const vfs::Ino big = m.Lookup(vfs::kRootIno, "big");
  const int64_t pages = m.tree->pages();
  auto listing = m.fs->OpenDir(big);
  REQUIRE(listing.ok());
  CHECK(m.tree->pages() == pages + 1);  // the first page, at the open
  std::vector<std::string> names;
  for (size_t i = 0; *(*listing)->Has(i); ++i) {
    names.push_back((*listing)->at(i).name);
    // Only the page holding entry i is kept.
    CHECK((*listing)->size() <= i + 4);
    CHECK(m.tree->pages() == pages + 1 + static_cast<int64_t>(i / 4));
  }
  REQUIRE(names.size() == 25);
  for (int i = 0; i < 25; ++i) CHECK(names[i] == "f" + std::to_string(100 + i) + ".txt");
  // Back to the start (rewinddir): the listing is read again from its first page.
  REQUIRE(*(*listing)->Has(0));
  CHECK((*listing)->at(0).name == "f100.txt");
  CHECK(m.tree->pages() == pages + 7 + 1);
  // A name from a later page has the number a lookup gives.
  REQUIRE(*(*listing)->Has(17));
  auto attr = m.fs->Lookup(big, "f117.txt");
  REQUIRE(attr.ok());
  CHECK(attr->st.st_ino == (*listing)->at(17).ino);
}

}  // namespace
}  // namespace b2ndfs

namespace b2ndfs {
namespace {

// README.md, "Zarr groups and xarray": a directory's unlisted .zgroup,
// .zmetadata and NAME/ (the vfs hook, src/vfs/zarr_group_lookup.cc).
TEST_CASE("a source directory is a Zarr group of its containers, unlisted", "[vfs]") {
  const Array a = MakeArray({8, 6}, {4, 4}, {2, 2}, 1.0f);
  const Array b = MakeArray({5, 4, 3}, {2, 2, 2}, {1, 1, 1}, 7.0f);
  const bool remote = GENERATE(false, true);
  Mount m(remote);
  m.tree->PutDir("run");
  m.tree->PutFile("run/a.b2nd", a.frame);
  m.tree->PutFile("run/b.b2nd", b.frame);
  m.tree->PutFile("run/b.b2frame", a.frame);  // b.b2nd wins
  m.tree->PutFile("run/c.b2nd", a.frame);
  m.tree->PutDir("run/c");  // a name of the directory's own: no variable
  m.tree->PutDir("empty");
  m.Start();
  const uint64_t opened_before = store::GlobalReadStats().containers_opened.load();
  const vfs::Ino run = m.Lookup(vfs::kRootIno, "run");
  // Listing shows none of the names and opens nothing.
  auto listing = m.fs->OpenDir(run);
  REQUIRE(listing.ok());
  std::vector<std::string> names;
  for (size_t i = 0; i < (*listing)->size(); ++i) names.push_back((*listing)->at(i).name);
  CHECK(names == std::vector<std::string>{"a.b2nd", "b.b2frame", "b.b2nd", "c", "c.b2nd"});
  CHECK(store::GlobalReadStats().containers_opened.load() == opened_before);

  const vfs::Ino zmetadata = m.Lookup(run, ".zmetadata");
  vfs::FileHandle h = m.Open(zmetadata);
  const Bytes text = m.ReadAll(h, 1 << 16);
  const std::string json(text.begin(), text.end());
  CHECK(json.find("\"a/.zarray\"") != std::string::npos);
  CHECK(json.find("\"b/.zattrs\": {\"_ARRAY_DIMENSIONS\": [\"b_dim_0\", \"b_dim_1\", "
                  "\"b_dim_2\"]") != std::string::npos);
  CHECK(json.find("\"c/") == std::string::npos);
  CHECK(json.find("\"shape\": [5, 4, 3]") != std::string::npos);
  CHECK(m.LookupError(run, ".zgroup") == 0);

  // NAME/ holds the files of NAME.b2nd/zarr/: chunk files are the same
  // inodes, the directory and its .zattrs are not.
  const vfs::Ino var = m.Lookup(run, "b");
  const vfs::Ino zarr = m.Lookup(m.Lookup(run, "b.b2nd"), "zarr");
  CHECK(var != zarr);
  CHECK(m.Lookup(var, "1.1.0") == m.Lookup(zarr, "1.1.0"));
  CHECK(m.Lookup(var, ".zattrs") != m.Lookup(zarr, ".zattrs"));
  vfs::FileHandle chunk = m.Open(m.Lookup(var, "0.0.0"));
  Bytes want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      const size_t at = static_cast<size_t>((i * 12 + j * 3) * 4);
      want.insert(want.end(), b.data.begin() + at, b.data.begin() + at + 8);
    }
  }
  CHECK(m.ReadAll(chunk, 64) == want);
  CHECK(m.LookupError(run, "c") == 0);  // the real directory
  CHECK(m.LookupError(run, "nothing") == ENOENT);
  CHECK(m.LookupError(m.Lookup(vfs::kRootIno, "empty"), ".zgroup") == ENOENT);
}

// A tree that declares a listing no dearer than a stat
// (source::TreeCosts::listing_costs_one_stat, as a remote one does) has a
// group variable found in its directory's listing, not by a stat of NAME
// with each container extension.
TEST_CASE("a group variable is looked up in the listing where a listing costs one stat", "[vfs]") {
  const Array a = MakeArray({8, 6}, {4, 4}, {2, 2}, 1.0f);
  const bool listing_costs_one_stat = GENERATE(false, true);
  Mount m;
  m.tree->SetCosts(source::TreeCosts{.listing_costs_one_stat = listing_costs_one_stat});
  m.tree->PutDir("run");
  m.tree->PutFile("run/d.cat", a.frame);  // the last extension tried
  m.Start();
  const vfs::Ino run = m.Lookup(vfs::kRootIno, "run");
  const int64_t stats_before = m.tree->stats();
  CHECK(m.LookupError(run, "d") == 0);
  const int64_t stats = m.tree->stats() - stats_before;
  // run/d itself, and opening d.cat; without the listing, d.b2nd, d.b2frame,
  // d.b2f, d.b2, d.caterva and d.cat too.
  if (listing_costs_one_stat) {
    CHECK(stats <= 2);
  } else {
    CHECK(stats >= 7);
  }
}

TEST_CASE("views= keeps only the kinds named; meta.json describes those", "[vfs]") {
  const std::vector<std::string> kinds{"meta", "data", "view"};
  auto registry = views::Registry::WithKinds(kinds);
  REQUIRE(registry.ok());
  CHECK_FALSE(views::Registry::WithKinds({"data", "bogus"}).ok());
  Mount m;
  m.views = *registry;
  m.tree->PutFile("a.b2nd", MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 1.0f).frame);
  m.Start();
  const vfs::Ino dir = m.Lookup(vfs::kRootIno, "a.b2nd");
  CHECK(m.ListNames(dir) == std::vector<std::string>{"data", "meta.json", "view"});
  for (const char* absent : {"data.npy", "chunks", "slices", "zarr", "data.nhdr", ".zgroup"}) {
    INFO(absent);
    CHECK(m.LookupError(dir, absent) == ENOENT);
  }
  CHECK(m.Lookup(m.Lookup(dir, "view"), "1,2") != 0);
  const vfs::Ino meta = m.Lookup(dir, "meta.json");
  auto attr = m.fs->GetAttr(meta);
  REQUIRE(attr.ok());
  const Bytes bytes = m.ReadAll(m.Open(meta), static_cast<size_t>(attr->st.st_size));
  const std::string text(bytes.begin(), bytes.end());
  CHECK(text.find("\"view\"") != std::string::npos);
  CHECK(text.find("\"data.npy\"") == std::string::npos);
  // Every kind that Kinds() names can be chosen alone.
  for (const auto& [kind, files] : views::Registry::Kinds()) {
    INFO(kind);
    CHECK(views::Registry::WithKinds({kind}).ok());
  }
}

TEST_CASE(".b2ndfs lists stats and log; log holds the recent messages", "[vfs]") {
  Mount m;
  m.Start();
  SetLogToStderr(false);
  Log(LogLevel::kWarning, "a message for .b2ndfs/log");
  SetLogToStderr(true);
  const vfs::Ino control = m.Lookup(vfs::kRootIno, ".b2ndfs");
  CHECK(m.ListNames(control) == std::vector<std::string>{"log", "stats"});
  const vfs::Ino log = m.Lookup(control, "log");
  CHECK(log != m.Lookup(control, "stats"));
  auto attr = m.fs->GetAttr(log);
  REQUIRE(attr.ok());
  CHECK(S_ISREG(attr->st.st_mode));
  const Bytes bytes = m.ReadAll(m.Open(log), static_cast<size_t>(attr->st.st_size));
  const std::string text(bytes.begin(), bytes.end());
  CHECK(text == RecentLogText());
  CHECK(text.find("warning: a message for .b2ndfs/log\n") != std::string::npos);
  // The log names other users' files: the daemon's user's alone; stats is
  // the root's (the fake tree's root: 0755, uid 0).
  CHECK((attr->st.st_mode & 07777) == 0400);
  CHECK(attr->st.st_uid == ::geteuid());
  auto stats = m.fs->GetAttr(m.Lookup(control, "stats"));
  REQUIRE(stats.ok());
  CHECK((stats->st.st_mode & 07777) == 0444);
  CHECK(stats->st.st_uid == 0);
  Mount all;
  all.log_readable_by_all = true;
  all.Start();
  auto shared = all.fs->GetAttr(all.Lookup(all.Lookup(vfs::kRootIno, ".b2ndfs"), "log"));
  REQUIRE(shared.ok());
  CHECK((shared->st.st_mode & 07777) == 0444);
}

TEST_CASE("a long series: long listings empty but names open, du counts data once", "[vfs]") {
  const Array a = MakeArray({5000}, {1000}, {100}, 2.0f);
  // A tall 2-D array: slices/0 of more names than kMaxListedNames.
  const int64_t rows = static_cast<int64_t>(vfs::kMaxListedNames) + 1;
  const Array tall = MakeArray({rows, 2}, {65536, 2}, {4096, 2}, 1.0f);
  Mount m;
  m.tree->PutFile("s.b2nd", a.frame);
  m.tree->PutFile("tall.b2nd", tall.frame);
  m.Start();
  const vfs::Ino dir = m.Lookup(vfs::kRootIno, "s.b2nd");
  const std::vector<std::string> names = m.ListNames(dir);
  CHECK(std::find(names.begin(), names.end(), "chunks") != names.end());
  CHECK(std::find(names.begin(), names.end(), "slices") != names.end());
  // A 1-D array's slices are its items.
  const vfs::Ino items = m.Lookup(m.Lookup(dir, "slices"), "0");
  CHECK(m.ListNames(items).size() == 5000);
  CHECK(m.ReadAll(m.Open(m.Lookup(items, "4999")), 4) == Slice(a.data, 4 * 4999, 4));
  const vfs::Ino slices = m.Lookup(m.Lookup(vfs::kRootIno, "tall.b2nd"), "slices");
  CHECK(m.ListNames(m.Lookup(slices, "1")).size() == 2);
  const vfs::Ino long_axis = m.Lookup(slices, "0");
  CHECK(m.ListNames(long_axis).empty());
  const vfs::Ino last = m.Lookup(long_axis, std::to_string(rows - 1));
  CHECK(m.ReadAll(m.Open(last), 8) == Slice(tall.data, static_cast<size_t>(8 * (rows - 1)), 8));
  CHECK(m.LookupError(long_axis, std::to_string(rows)) == ENOENT);
  // Only data takes blocks: the source's.
  auto data = m.fs->GetAttr(m.Lookup(dir, "data"));
  REQUIRE(data.ok());
  CHECK(data->st.st_blocks == static_cast<blkcnt_t>((a.frame.size() + 511) / 512));
  for (const char* view : {"data.npy", "meta.json"}) {
    INFO(view);
    auto attr = m.fs->GetAttr(m.Lookup(dir, view));
    REQUIRE(attr.ok());
    CHECK(attr->st.st_size > 0);
    CHECK(attr->st.st_blocks == 0);
  }
  auto slice = m.fs->GetAttr(last);
  REQUIRE(slice.ok());
  CHECK(slice->st.st_blocks == 0);
}

}  // namespace
}  // namespace b2ndfs
