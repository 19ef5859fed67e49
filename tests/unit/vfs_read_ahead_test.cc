// vfs/read_ahead (ReadAheadPolicy) without FUSE: over the views of a
// container opened through vfs::Filesystem on a fake tree, a sequential
// reader's window doubles up to its bound (max_readahead, four times that
// for a remote file, an eighth of the cache at most) and resets on a seek; a
// remote reader's read-ahead goes out in batches of half the window; a
// reader of slices/0/ gets the next two files pushed to the kernel (local
// files only), and opening a pushed file carries the push one file on.
#include <fcntl.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "array_frame.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"
#include "fake_tree.h"
#include "read_ahead.h"
#include "temp_dir.h"
#include "test_store.h"
#include "wait_until.h"

namespace b2ndfs::vfs {
namespace {

using testing::Bytes;
using testing::FakeTree;

using testing::Array;
using testing::MakeArray;

// A filesystem over a fake tree holding `array` as a.b2nd, and handles of
// its files (each with a read pattern of its own).
struct Setup {
  explicit Setup(const Array& array) : tree(std::make_shared<FakeTree>()), store(64 << 20, 4, 2) {
    SetLogLevel(LogLevel::kWarning);
    tree->PutFile("a.b2nd", array.frame);
    Options options;
    options.source = FakeTree::kRoot;
    options.tree = tree;
    fs = std::make_unique<Filesystem>(options, &store.ctx);
  }
  Ino Lookup(Ino parent, const std::string& name) {
    auto attr = fs->Lookup(parent, name);
    INFO(name);
    REQUIRE(attr.ok());
    return attr->st.st_ino;
  }
  Ino Path(const std::vector<std::string>& names) {
    Ino ino = kRootIno;
    for (const auto& name : names) ino = Lookup(ino, name);
    return ino;
  }
  ViewHandle Open(Ino ino) {
    auto handle = fs->Open(ino, O_RDONLY);
    REQUIRE(handle.ok());
    REQUIRE(handle->view() != nullptr);
    ViewHandle view = *handle->view();
    view.pattern = std::make_shared<ReadPattern>();
    return view;
  }

  std::shared_ptr<FakeTree> tree;
  testing::TestStore store;
  std::unique_ptr<Filesystem> fs;
};

struct Window {
  int64_t window, prefetched_until, next_offset;
};
Window Of(const ViewHandle& h) {
  std::lock_guard<std::mutex> lock(h.pattern->mutex);
  return Window{h.pattern->window, h.pattern->prefetched_until, h.pattern->next_offset};
}

constexpr int64_t kKiB = 1024;

TEST_CASE("read-ahead: a sequential window doubles to its bound and resets on a seek", "[vfs]") {
  const Array a = MakeArray({256, 256, 16}, {64, 256, 16}, {8, 256, 16}, 0.0f);  // 4 MiB
  Setup s(a);
  const ViewHandle data = s.Open(s.Path({"a.b2nd", "data"}));
  ReadAheadPolicy policy(ReadAheadPolicy::Options{1 << 20, 0});
  const int64_t n = 64 * kKiB;
  policy.OnRead(data, 0, n, false);  // from the start: sequential at once
  CHECK(Of(data).window == 2 * n);
  CHECK(Of(data).prefetched_until == n + 2 * n);
  CHECK(Of(data).next_offset == n);
  policy.OnRead(data, n, n, false);
  CHECK(Of(data).window == 4 * n);
  CHECK(Of(data).prefetched_until == 2 * n + 4 * n);
  for (int64_t offset = 2 * n; offset < 12 * n; offset += n) policy.OnRead(data, offset, n, false);
  CHECK(Of(data).window == int64_t{1} << 20);  // max_readahead
  CHECK(Of(data).prefetched_until == 12 * n + (int64_t{1} << 20));
  // A seek: no read-ahead, and the next read near it starts small again.
  policy.OnRead(data, 3 << 20, n, false);
  CHECK(Of(data).window == 0);
  CHECK(Of(data).prefetched_until == 0);
  policy.OnRead(data, (3 << 20) + n, n, false);
  CHECK(Of(data).window == 2 * n);
  // Reordered a little (the kernel's concurrent read-ahead): still sequential.
  policy.OnRead(data, (3 << 20) + n, n, false);
  CHECK(Of(data).window == 4 * n);
}

TEST_CASE("read-ahead: bounds for remote files and small caches; remote batches", "[vfs]") {
  const Array a = MakeArray({256, 256, 16}, {64, 256, 16}, {8, 256, 16}, 0.0f);
  Setup s(a);
  const Ino ino = s.Path({"a.b2nd", "data"});
  const int64_t n = 32 * kKiB;
  auto window_after = [&](ReadAheadPolicy& policy, bool remote) {
    const ViewHandle h = s.Open(ino);
    for (int64_t offset = 0; offset < 40 * n; offset += n) policy.OnRead(h, offset, n, remote);
    return Of(h).window;
  };
  ReadAheadPolicy plain(ReadAheadPolicy::Options{256 * kKiB, 0});
  CHECK(window_after(plain, false) == 256 * kKiB);
  CHECK(window_after(plain, true) == 4 * 256 * kKiB);
  ReadAheadPolicy small_cache(ReadAheadPolicy::Options{256 * kKiB, 1 << 20});
  CHECK(window_after(small_cache, false) == (1 << 20) / 8);
  ReadAheadPolicy off(ReadAheadPolicy::Options{0, 0});
  CHECK(window_after(off, false) == 0);

  // A remote reader at full window asks again only once half a window is
  // missing: a few large requests rather than one per read.
  const ViewHandle h = s.Open(ino);
  ReadAheadPolicy policy(ReadAheadPolicy::Options{64 * kKiB, 0});  // remote: 256 KiB
  int64_t offset = 0;
  for (; offset < 20 * n; offset += n) policy.OnRead(h, offset, n, true);
  const Window full = Of(h);
  REQUIRE(full.window == 256 * kKiB);
  std::vector<int64_t> asked;
  for (int i = 0; i < 8; ++i, offset += n) {
    policy.OnRead(h, offset, n, true);
    asked.push_back(Of(h).prefetched_until);
  }
  // 32 KiB reads against a 128 KiB batch: one new batch every four reads.
  int batches = 0;
  int64_t last = full.prefetched_until;
  for (int64_t until : asked) {
    if (until != last) {
      ++batches;
      CHECK(until - last >= full.window / 2);
    }
    last = until;
  }
  CHECK(batches == 2);
}

TEST_CASE("read-ahead: a reader of slices/0/ gets the next files pushed; an open carries it on",
          "[vfs]") {
  const Array a = MakeArray({8, 64, 64}, {2, 64, 64}, {1, 64, 64}, 0.0f);  // 16 KiB slices
  Setup s(a);
  const Ino slices = s.Path({"a.b2nd", "slices", "0"});
  std::vector<Ino> ino(8);
  for (int i = 0; i < 8; ++i) ino[static_cast<size_t>(i)] = s.Lookup(slices, std::to_string(i));
  const int64_t slice = 16 * kKiB;
  std::mutex mutex;
  std::vector<PagePush> pushes;
  std::atomic<bool> accept{true};
  ReadAheadPolicy policy(ReadAheadPolicy::Options{8 << 20, 0});
  policy.SetPush([&](PagePush push) {
    std::lock_guard<std::mutex> lock(mutex);
    pushes.push_back(std::move(push));
    return accept.load();
  });
  auto taken = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<PagePush> out;
    out.swap(pushes);
    return out;
  };

  SECTION("local: the two files after the one read, with their bytes") {
    policy.OnRead(s.Open(ino[0]), 0, slice, false);
    std::vector<PagePush> got = taken();
    REQUIRE(got.size() == 2);
    CHECK(got[0].ino == ino[1]);
    CHECK(got[1].ino == ino[2]);
    CHECK(got[0].size == slice);
    // Rendered only from cached blocks (read ahead on the workers).
    std::vector<uint8_t> out(static_cast<size_t>(slice));
    REQUIRE(testing::WaitUntil([&] { return got[0].render(out.data()).ok(); }));
    CHECK(std::memcmp(out.data(), a.data.data() + slice, out.size()) == 0);

    got[0].done(true);   // stored
    got[1].done(false);  // the kernel did not hold the inode
    CHECK(policy.pushed_files() == 1);
    CHECK(policy.pushed_bytes() == static_cast<uint64_t>(slice));
    // Opening a pushed file pushes the one two files after it.
    policy.OnOpen(s.Open(ino[1]), false);
    got = taken();
    REQUIRE(got.size() == 1);
    CHECK(got[0].ino == ino[3]);
    // A file whose push was not stored carries nothing on.
    policy.OnOpen(s.Open(ino[2]), false);
    CHECK(taken().empty());
    // Nor does a file opened a second time.
    policy.OnOpen(s.Open(ino[1]), false);
    CHECK(taken().empty());
  }
  SECTION("a push refused is not remembered") {
    accept = false;
    policy.OnRead(s.Open(ino[4]), 0, slice, false);
    CHECK(taken().size() == 2);
    policy.OnOpen(s.Open(ino[5]), false);
    CHECK(taken().empty());
  }
  SECTION("remote files and the last file push nothing") {
    policy.OnRead(s.Open(ino[0]), 0, slice, true);
    CHECK(taken().empty());
    policy.OnRead(s.Open(ino[7]), 0, slice, false);
    CHECK(taken().empty());
  }
}

}  // namespace
}  // namespace b2ndfs::vfs
