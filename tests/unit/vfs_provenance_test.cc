// Who may read what b2ndfs derives (README.md, "Permissions"): the pure
// rule (source/provenance.h), the walk beneath SOURCE (Tree::StatBeneath),
// carriers whose operands belong to other users, and a carrier whose blocks
// need more than the pin budget holds beside a cold reader.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <string>
#include <vector>

#include "b2nd_writer.h"
#include "b2ndfs/source/provenance.h"
#include "b2ndfs/source/tree.h"
#include "b2ndfs/store/pin_budget.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"
#include "carrier_writer.h"
#include "temp_dir.h"
#include "test_store.h"
#include "vfs_walk.h"

namespace b2ndfs {
namespace {

namespace fs = std::filesystem;
using testing::WriteCarrier;
using testing::WriteInt32;

struct stat File(uid_t uid, gid_t gid, mode_t mode, bool directory = false) {
  struct stat st {};
  st.st_uid = uid;
  st.st_gid = gid;
  st.st_mode = (directory ? S_IFDIR : S_IFREG) | mode;
  return st;
}

mode_t Perm(const struct stat& st) { return st.st_mode & 07777; }

TEST_CASE("MostRestrictive lets read only who may read every input", "[provenance]") {
  SECTION("same owner and group: the common bits") {
    const struct stat in[] = {File(10, 20, 0644), File(10, 20, 0640)};
    auto out = source::MostRestrictive(in);
    REQUIRE(out);
    CHECK(out->st_uid == 10);
    CHECK(out->st_gid == 20);
    CHECK(Perm(*out) == 0440);
  }
  SECTION("another user's private file: only that user") {
    const struct stat in[] = {File(2001, 2001, 0644), File(2002, 2002, 0600)};
    auto out = source::MostRestrictive(in);
    REQUIRE(out);
    CHECK(out->st_uid == 2002);
    CHECK(Perm(*out) == 0400);
  }
  SECTION("two private files of two users: nobody but root") {
    const struct stat in[] = {File(2001, 2001, 0600), File(2002, 2002, 0600)};
    CHECK_FALSE(source::MostRestrictive(in));
  }
  SECTION("a directory nobody else may search hides what is in it") {
    const struct stat in[] = {File(2002, 2002, 0644),
                              source::SearchedAs(File(2002, 2002, 0700, true))};
    auto out = source::MostRestrictive(in);
    REQUIRE(out);
    CHECK(out->st_uid == 2002);
    CHECK(Perm(*out) == 0400);
  }
  SECTION("a group-shared tree stays readable by the group") {
    const struct stat in[] = {File(2001, 500, 0640), File(2002, 500, 0640),
                              source::SearchedAs(File(2002, 500, 0750, true))};
    auto out = source::MostRestrictive(in);
    REQUIRE(out);
    CHECK(out->st_gid == 500);
    CHECK((Perm(*out) & 0044) == 0040);
  }
  SECTION("never more than any input allows, by brute force") {
    std::mt19937 rng(7);
    for (int round = 0; round < 20000; ++round) {
      std::vector<struct stat> in;
      const int n = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < n; ++i) {
        in.push_back(File(1 + rng() % 3, 1 + rng() % 3, rng() & 0777, false));
      }
      auto out = source::MostRestrictive(in);
      if (!out) continue;
      // Each reader class the result lets in may read each input whatever
      // its groups: owner uid U in groups {G_out} or any; others in any.
      for (uid_t u = 1; u <= 4; ++u) {
        for (gid_t g = 1; g <= 4; ++g) {
          // Reader (u, member of g only) as the kernel decides for `out`.
          auto reads = [&](const struct stat& st) {
            if (st.st_uid == u) return (st.st_mode & S_IRUSR) != 0;
            if (st.st_gid == g) return (st.st_mode & S_IRGRP) != 0;
            return (st.st_mode & S_IROTH) != 0;
          };
          if (!reads(*out)) continue;
          for (const struct stat& s : in) {
            INFO("round " << round << " uid " << u << " gid " << g);
            CHECK(reads(s));
          }
        }
      }
    }
  }
}

// A directory tree owned by users other than root (tests run as root in
// CI; as another user, the checks that need chown are left out).
struct Tree {
  testing::TempDir dir{"b2ndfs_provenance"};
  std::string root = fs::canonical(dir.path).string();
  std::string Path(const std::string& rel) const { return root + "/" + rel; }
  void Own(const std::string& rel, uid_t uid, mode_t mode) const {
    REQUIRE(::chown(Path(rel).c_str(), uid, uid) == 0);
    REQUIRE(::chmod(Path(rel).c_str(), mode) == 0);
  }
};

bool Root() { return ::geteuid() == 0; }

TEST_CASE("StatBeneath binds a file by the directories above it and refuses links out",
          "[provenance]") {
  if (!Root()) {
    WARN("not root: ownership checks skipped");
    return;
  }
  Tree t;
  testing::TempDir outside("b2ndfs_outside");
  fs::create_directories(t.Path("bob/deep"));
  fs::create_directories(t.Path("alice"));
  { std::ofstream(t.Path("bob/deep/f")) << "x"; }
  { std::ofstream(outside.path / "g") << "y"; }
  t.Own("bob", 2002, 0700);
  t.Own("bob/deep", 2002, 0755);
  t.Own("bob/deep/f", 2002, 0644);
  t.Own("alice", 2001, 0755);
  fs::create_symlink(t.root, t.Path("alice/up"));          // absolute, inside
  fs::create_symlink("../bob/deep", t.Path("alice/rel"));  // relative, inside
  fs::create_symlink(outside.path, t.Path("alice/out"));   // out of SOURCE
  fs::create_symlink("../../..", t.Path("alice/dots"));    // above SOURCE
  auto tree = source::MakeLocalTree(t.root);

  auto own = tree->StatBeneath(t.Path("bob/deep/f"), true);
  REQUIRE(own.ok());
  CHECK(own->st_uid == 2002);
  CHECK(Perm(*own) == 0400);  // bob/ is 0700
  for (const char* via : {"alice/up/bob/deep/f", "alice/rel/f"}) {
    INFO(via);
    auto linked = tree->StatBeneath(t.Path(via), true);
    REQUIRE(linked.ok());
    CHECK(linked->st_uid == 2002);
    CHECK(Perm(*linked) == 0400);
  }
  CHECK(tree->StatBeneath(t.Path("alice/out/g"), true).status().error_number() == EXDEV);
  CHECK(tree->StatBeneath(t.Path("alice/dots/etc"), true).status().error_number() == EXDEV);
  // A mirrored link shows what reading through it takes.
  auto mirrored = tree->Stat(t.Path("alice/rel"));
  REQUIRE(mirrored.ok());
  CHECK(S_ISDIR(mirrored->st_mode));
  CHECK((Perm(*mirrored) & 0044) == 0);
  auto listed = tree->List(t.Path("alice"));
  REQUIRE(listed.ok());
  for (const auto& e : *listed) {
    if (e.name == "rel") CHECK((Perm(e.st) & 0044) == 0);
  }
}

// A mount of `root` driven without FUSE, its store as the daemon sets it up
// with a pin budget of `pin_limit`.
struct Mount {
  Mount(const std::string& root, size_t cache_bytes, size_t pin_limit)
      : store(cache_bytes, 4, 2), pins(pin_limit) {
    SetLogLevel(LogLevel::kError);
    store.ctx.pins = &pins;
    store.ctx.max_pinned_bytes = pin_limit / 4;
    vfs::Options options;
    options.source = root;
    filesystem = std::make_unique<vfs::Filesystem>(options, &store.ctx);
  }
  Result<vfs::Attr> Walk(const std::string& rel) { return testing::WalkPath(*filesystem, rel); }
  Result<std::vector<uint8_t>> ReadAll(const std::string& rel) {
    B2NDFS_ASSIGN_OR_RETURN(vfs::Attr attr, Walk(rel));
    B2NDFS_ASSIGN_OR_RETURN(vfs::FileHandle handle, filesystem->Open(attr.st.st_ino, O_RDONLY));
    std::vector<uint8_t> out(static_cast<size_t>(attr.st.st_size));
    B2NDFS_ASSIGN_OR_RETURN(const size_t n, filesystem->Read(handle, 0, out.size(), out.data()));
    out.resize(n);
    return out;
  }
  testing::TestStore store;
  store::PinBudget pins;
  std::unique_ptr<vfs::Filesystem> filesystem;
};

std::string Text(const std::vector<uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

TEST_CASE("a carrier's computed files are readable only by who may read every operand",
          "[provenance][vfs]") {
  if (!Root()) {
    WARN("not root: ownership checks skipped");
    return;
  }
  Tree t;
  testing::TempDir outside("b2ndfs_outside");
  fs::create_directories(t.Path("alice"));
  fs::create_directories(t.Path("bob"));
  const std::vector<int64_t> shape{30, 20};
  std::vector<int32_t> values(600);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int32_t>(i * 7);
  WriteInt32(t.Path("bob/secret.b2nd"), shape, {10, 20}, {5, 20}, values);
  WriteInt32(t.Path("bob/open.b2nd"), shape, {10, 20}, {5, 20}, values);
  WriteInt32(t.Path("alice/mine.b2nd"), shape, {10, 20}, {5, 20}, values);
  WriteInt32((outside.path / "x.b2nd").string(), shape, {10, 20}, {5, 20}, values);
  WriteCarrier(t.Path("alice/up.b2nd"), shape, {10, 20}, {5, 20}, "o0 + 0", "../bob/secret.b2nd");
  WriteCarrier(t.Path("alice/via.b2nd"), shape, {10, 20}, {5, 20}, "o0 + 0",
               "link/bob/secret.b2nd");
  WriteCarrier(t.Path("alice/out.b2nd"), shape, {10, 20}, {5, 20}, "o0 + 0", "away/x.b2nd");
  WriteCarrier(t.Path("alice/own.b2nd"), shape, {10, 20}, {5, 20}, "o0 + 0", "mine.b2nd");
  fs::create_symlink(t.root, t.Path("alice/link"));
  fs::create_symlink(outside.path, t.Path("alice/away"));
  for (const char* f :
       {"alice/up.b2nd", "alice/via.b2nd", "alice/out.b2nd", "alice/own.b2nd", "alice/mine.b2nd"}) {
    t.Own(f, 2001, 0644);
  }
  t.Own("alice", 2001, 0755);
  t.Own("bob/secret.b2nd", 2002, 0644);  // readable, but in a directory only bob may search
  t.Own("bob/open.b2nd", 2002, 0644);
  t.Own("bob", 2002, 0700);

  Mount m(t.root, 64 << 20, 16 << 20);
  std::vector<uint8_t> expected(values.size() * 4);
  std::memcpy(expected.data(), values.data(), expected.size());
  for (const char* carrier : {"alice/up.b2nd", "alice/via.b2nd"}) {
    INFO(carrier);
    for (const char* file : {"data", "data.npy", "meta.json", "slices/0/00"}) {
      INFO(file);
      auto attr = m.Walk(std::string(carrier) + "/" + file);
      REQUIRE(attr.ok());
      CHECK(attr->st.st_uid == 2002);
      CHECK(Perm(attr->st) == 0400);
    }
    auto data = m.ReadAll(std::string(carrier) + "/data");  // root reads it all
    REQUIRE(data.ok());
    CHECK(*data == expected);
  }
  {
    auto attr = m.Walk("alice/own.b2nd/data");
    REQUIRE(attr.ok());
    CHECK(attr->st.st_uid == 2001);
    CHECK(Perm(attr->st) == 0444);
  }
  // Out of SOURCE through a link: not evaluated, and meta.json says why.
  CHECK(m.Walk("alice/out.b2nd/data").status().error_number() == ENOENT);
  auto meta = m.ReadAll("alice/out.b2nd/meta.json");
  INFO((meta.ok() ? "" : meta.status().message()));
  REQUIRE(meta.ok());
  CHECK_THAT(Text(*meta), Catch::Contains("out of the mount"));
  auto meta_attr = m.Walk("alice/out.b2nd/meta.json");
  REQUIRE(meta_attr.ok());
  CHECK(meta_attr->st.st_uid == 2001);
  CHECK(Perm(meta_attr->st) == 0444);

  // Two private files of two users: nobody but root may read them both.
  t.Own("bob", 2002, 0755);
  t.Own("bob/secret.b2nd", 2002, 0600);
  t.Own("alice/up.b2nd", 2001, 0600);
  Mount again(t.root, 64 << 20, 16 << 20);
  CHECK(again.Walk("alice/up.b2nd/data").status().error_number() == ENOENT);
  auto why = again.ReadAll("alice/up.b2nd/meta.json");
  INFO((why.ok() ? "" : why.status().message()));
  REQUIRE(why.ok());
  CHECK_THAT(Text(*why), Catch::Contains("no single owner"));
}

TEST_CASE("a carrier whose blocks outgrow the pin budget reads beside cold readers",
          "[provenance][vfs]") {
  Tree t;
  // int32 2048 x 1024: one 8 MiB block per chunk, so that a carrier block
  // and its operand's block together take all of a 16 MiB budget; the
  // cold reader's blocks (12 MiB) do not fit beside a carrier block, and
  // queue ahead of the operand's read unless that read draws on the
  // carrier read's admission.
  const std::vector<int64_t> shape{4096, 1024};
  const std::vector<int32_t> chunks{2048, 1024};
  const std::vector<int64_t> cold_shape{6144, 1024};
  const std::vector<int32_t> cold_chunks{3072, 1024};
  std::vector<int32_t> values(static_cast<size_t>(6144 * 1024));
  std::mt19937 rng(11);
  for (int32_t& v : values) v = static_cast<int32_t>(rng());
  const std::vector<int32_t> x(values.begin(), values.begin() + 4096 * 1024);
  WriteInt32(t.Path("x.b2nd"), shape, chunks, chunks, x);
  WriteInt32(t.Path("cold.b2nd"), cold_shape, cold_chunks, cold_chunks, values);
  WriteCarrier(t.Path("c.b2nd"), shape, chunks, chunks, "o0 + 0", "x.b2nd");
  std::vector<uint8_t> expected(x.size() * 4);
  std::memcpy(expected.data(), x.data(), expected.size());
  std::vector<uint8_t> expected_cold(values.size() * 4);
  std::memcpy(expected_cold.data(), values.data(), expected_cold.size());
  auto ready = [](auto& f) {
    if (f.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      FAIL_CHECK("a read still waits after 60 s: the pin budget deadlocked");
      std::_Exit(1);  // the blocked threads cannot be joined
    }
  };
  SECTION("alone, with a budget smaller than a carrier block and its operand's") {
    Mount m(t.root, 64 << 20, 12 << 20);
    auto carrier = std::async(std::launch::async, [&] { return m.ReadAll("c.b2nd/data"); });
    ready(carrier);
    auto a = carrier.get();
    REQUIRE(a.ok());
    CHECK(*a == expected);
    CHECK(m.pins.used() == 0);
  }
  SECTION("beside cold readers, every time") {
    for (int round = 0; round < 4; ++round) {
      INFO("round " << round);
      Mount m(t.root, 64 << 20, 16 << 20);
      std::vector<std::future<Result<std::vector<uint8_t>>>> carriers, colds;
      for (int i = 0; i < 2; ++i) {
        carriers.push_back(
            std::async(std::launch::async, [&] { return m.ReadAll("c.b2nd/data"); }));
        colds.push_back(
            std::async(std::launch::async, [&] { return m.ReadAll("cold.b2nd/data"); }));
      }
      for (auto& f : carriers) ready(f);
      for (auto& f : colds) ready(f);
      for (auto& f : carriers) {
        auto a = f.get();
        REQUIRE(a.ok());
        CHECK(*a == expected);
      }
      for (auto& f : colds) {
        auto b = f.get();
        REQUIRE(b.ok());
        CHECK(*b == expected_cold);
      }
      CHECK(m.pins.used() == 0);
    }
  }
}

}  // namespace
}  // namespace b2ndfs
