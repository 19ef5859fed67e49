// vfs::Filesystem over a remote fake tree: its background probes (util/
// single_flight.h on a util/task_pool.h) when the source throws, and the
// teardown order the FUSE layer follows at unmount (StopBackground, then the
// invalidation callback goes).
#include <fcntl.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "b2nd_writer.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"
#include "fake_tree.h"
#include "temp_dir.h"
#include "test_store.h"
#include "wait_until.h"

namespace b2ndfs {
namespace {

using testing::Bytes;
using testing::FakeTree;

using testing::WaitUntil;

// The frame of a small float32 array whose values start at `seed`.
Bytes MakeFrame(float seed) {
  testing::TempDir dir("b2ndfs_vfs_bg");
  const std::string path = (dir.path / "a.b2nd").string();
  std::vector<int64_t> shape{20, 10};
  std::vector<int32_t> chunks{10, 10};
  std::vector<int32_t> blocks{5, 5};
  std::vector<float> values(200);
  for (size_t i = 0; i < values.size(); ++i) values[i] = seed + static_cast<float>(i);
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = 4;
  cparams.nthreads = 1;
  b2nd_array_t* array = testing::WriteContiguous(path, cparams, 2, shape.data(), chunks.data(),
                                                 blocks.data(), "<f4", values.data(), 200 * 4);
  b2nd_free(array);
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct RemoteMount {
  explicit RemoteMount(int healthy_grace_ms)
      : tree(std::make_shared<FakeTree>(/*remote=*/true)), store(16 << 20, 4, 2) {
    SetLogLevel(LogLevel::kWarning);
    tree->PutFile("a.b2nd", MakeFrame(1.0f));
    vfs::Options options;
    options.source = FakeTree::kRoot;
    options.tree = tree;
    options.healthy_grace_ms = healthy_grace_ms;
    options.suspect_grace_ms = 2;
    fs = std::make_unique<vfs::Filesystem>(options, &store.ctx);
  }
  std::shared_ptr<FakeTree> tree;
  testing::TestStore store;
  std::unique_ptr<vfs::Filesystem> fs;
};

TEST_CASE("a probe or stat that throws answers an error, and the next one serves", "[vfs]") {
  RemoteMount m(/*healthy_grace_ms=*/2000);
  auto dir = m.fs->Lookup(vfs::kRootIno, "a.b2nd");
  REQUIRE(dir.ok());
  auto data = m.fs->Lookup(dir->st.st_ino, "data");
  REQUIRE(data.ok());
  m.tree->SetThrowing(true);
  // Each probe runs on a background thread and throws there: the callers
  // get an answer (EIO, or the attributes they knew), never a hang, and the
  // daemon goes on.
  // (What throws on a request thread itself reaches the FUSE layer's
  // trampoline, which answers EIO.)
  auto errno_of = [](const std::function<Result<vfs::Attr>()>& call) {
    try {
      auto r = call();
      return r.ok() ? 0 : r.status().error_number();
    } catch (const std::runtime_error&) {
      return EIO;
    }
  };
  for (int i = 0; i < 5; ++i) {
    const int e1 = errno_of([&] { return m.fs->GetAttr(data->st.st_ino); });
    CHECK((e1 == 0 || e1 == EIO));
    const int e2 = errno_of([&] { return m.fs->Lookup(dir->st.st_ino, "data"); });
    CHECK((e2 == 0 || e2 == EIO));
  }
  m.tree->SetThrowing(false);
  // Logged, once the waiters had their answer.
  CHECK(WaitUntil([] {
    return RecentLogText().find("background probe failed: fake source bug") != std::string::npos;
  }));
  // Nothing poisoned: the next probes ask the source again and serve.
  auto attr = m.fs->GetAttr(data->st.st_ino);
  REQUIRE(attr.ok());
  auto handle = m.fs->Open(data->st.st_ino, O_RDONLY);
  REQUIRE(handle.ok());
  std::vector<uint8_t> out(800);
  auto n = m.fs->Read(*handle, 0, out.size(), out.data());
  REQUIRE(n.ok());
  CHECK(*n == 800);
  float first = 0;
  std::memcpy(&first, out.data(), sizeof first);
  CHECK(first == 1.0f);
}

TEST_CASE("unmount order: probes stop before the invalidation callback goes", "[vfs]") {
  RemoteMount m(/*healthy_grace_ms=*/20);
  auto dir = m.fs->Lookup(vfs::kRootIno, "a.b2nd");
  REQUIRE(dir.ok());
  REQUIRE(m.fs->Lookup(dir->st.st_ino, "data").ok());
  // The callback holds `token`; `watch` sees whether the callback lives.
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> watch = token;
  std::atomic<bool> entered{false};
  std::atomic<bool> release{false};
  std::atomic<int> calls{0};
  m.fs->SetInvalidateCallback(
      [token, &entered, &release, &calls](const std::vector<vfs::StaleNode>& nodes) {
        calls.fetch_add(1);
        CHECK_FALSE(nodes.empty());
        entered = true;
        WaitUntil([&] { return release.load(); });
      });
  token.reset();
  // A new version, found by a background probe, which tells the callback.
  m.tree->PutFile("a.b2nd", MakeFrame(2.0f));
  (void)m.fs->Lookup(dir->st.st_ino, "data");
  REQUIRE(WaitUntil([&] { return entered.load(); }));
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    m.fs->StopBackground();
    stopped = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK_FALSE(stopped.load());  // it waits for the running probe
  // Cleared while the probe is inside it: the call keeps it alive.
  m.fs->SetInvalidateCallback(nullptr);
  CHECK_FALSE(watch.expired());
  release = true;
  stopper.join();
  CHECK(watch.expired());
  CHECK(calls.load() == 1);
  // After the stop, probes run on their caller's thread; no callback.
  m.tree->PutFile("a.b2nd", MakeFrame(3.0f));
  (void)m.fs->Lookup(dir->st.st_ino, "data");
  CHECK(calls.load() == 1);
  m.fs.reset();  // stops again: idempotent
}

}  // namespace
}  // namespace b2ndfs
