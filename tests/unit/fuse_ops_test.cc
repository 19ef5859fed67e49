// The FUSE operations (src/fuse/operations.h) without a kernel: each driven
// through a fake request (fake_request.h) over a vfs::Filesystem of a fake
// source tree, as mountpoint-s3 tests its filesystem without FUSE in the
// loop. Replies are what the kernel would get: entries, attributes, bytes
// (whole, partial, at and past the end), directory pages continued by
// offset, errnos, and exactly one reply per request.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "b2ndfs/store/container.h"
#include "b2ndfs/util/log.h"
#include "fuse_adapter.h"
#include "invalidator.h"
#include "page_pusher.h"
#include "wait_until.h"

namespace b2ndfs::fuse {
namespace {

using b2ndfs::testing::WaitUntil;
using testing::Adapter;
using testing::Array;
using testing::Bytes;
using testing::DirItem;
using testing::FakeRequest;
using testing::MakeArray;
using testing::Reply;
using testing::Text;

TEST_CASE("fuse ops: lookup, getattr, open, reads of all, part, the end and past it, release",
          "[fuse]") {
  const Array a = MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 1.0f);
  Adapter m(GENERATE(false, true));
  m.tree->PutFile("a.b2nd", a.frame);
  m.Start();
  const EntryReply dir = m.Lookup(vfs::kRootIno, "a.b2nd");
  CHECK(S_ISDIR(dir.attr.st_mode));
  CHECK(dir.ino == dir.attr.st_ino);
  const EntryReply data = m.Lookup(dir.ino, "data");
  CHECK(S_ISREG(data.attr.st_mode));
  CHECK(data.attr.st_size == static_cast<off_t>(a.data.size()));
  // Inside a container, names are fixed for the generation: the kernel may
  // keep them for attr_timeout (60 s by default).
  CHECK(data.entry_timeout == 60.0);
  CHECK(data.attr_timeout == 60.0);
  CHECK(m.LookupError(dir.ino, "nope") == ENOENT);
  CHECK(m.LookupError(data.ino, "x") == ENOTDIR);

  FakeRequest getattr;
  m.ops->GetAttr(getattr, data.ino, 0);
  REQUIRE(getattr.only().kind == Reply::kAttr);
  CHECK(getattr.only().attr.st_size == static_cast<off_t>(a.data.size()));
  CHECK(getattr.only().timeout == 60.0);

  const uint64_t fh = m.Open(data.ino);
  CHECK(m.ops->open_files() == 1);
  const size_t size = a.data.size();
  SECTION("whole") {
    const Reply r = m.Read(data.ino, fh, 0, size);
    REQUIRE(r.kind == Reply::kBuf);
    CHECK(r.data == Text(a.data, 0, size));
  }
  SECTION("partial, from inside a block") {
    const Reply r = m.Read(data.ino, fh, 1001, 7777);
    REQUIRE(r.kind == Reply::kBuf);
    CHECK(r.data == Text(a.data, 1001, 7777));
  }
  SECTION("across the end: up to it") {
    const Reply r = m.Read(data.ino, fh, static_cast<off_t>(size - 10), 4096);
    REQUIRE(r.kind == Reply::kBuf);
    CHECK(r.data == Text(a.data, size - 10, 10));
  }
  SECTION("at and past the end: nothing") {
    for (off_t offset : {static_cast<off_t>(size), static_cast<off_t>(size + 12345)}) {
      const Reply r = m.Read(data.ino, fh, offset, 4096);
      REQUIRE(r.kind == Reply::kBuf);
      CHECK(r.data.empty());
    }
  }
  SECTION("fstat through the handle") {
    FakeRequest req;
    m.ops->GetAttr(req, data.ino, fh);
    REQUIRE(req.only().kind == Reply::kAttr);
    CHECK(req.only().attr.st_ino == data.ino);
  }
  m.Release(fh);
  CHECK(m.ops->open_files() == 0);
}

TEST_CASE("fuse ops: an open or lookup the kernel stopped waiting for keeps nothing", "[fuse]") {
  const Array a = MakeArray({20, 20}, {10, 10}, {5, 5}, 1.0f);
  Adapter m;
  m.tree->PutFile("a.b2nd", a.frame);
  m.Start();
  const size_t nodes = m.fs->NodeCount();
  {
    FakeRequest req;
    req.set_reply_result(-ENOENT);  // libfuse: the request was interrupted
    m.ops->Lookup(req, vfs::kRootIno, "a.b2nd");
    CHECK(req.only().kind == Reply::kEntry);
  }
  CHECK(m.fs->NodeCount() == nodes);  // the reference was given back
  const EntryReply dir = m.Lookup(vfs::kRootIno, "a.b2nd");
  CHECK(m.fs->NodeCount() == nodes + 1);
  const EntryReply data = m.Lookup(dir.ino, "data");
  {
    FakeRequest req;
    req.set_reply_result(-ENOENT);
    m.ops->Open(req, data.ino, O_RDONLY);
    CHECK(req.only().kind == Reply::kOpen);
    FakeRequest dir_req;
    dir_req.set_reply_result(-ENOENT);
    m.ops->OpenDir(dir_req, dir.ino);
    CHECK(dir_req.only().kind == Reply::kOpen);
  }
  CHECK(m.ops->open_files() == 0);
  CHECK(m.ops->open_dirs() == 0);
  // FORGET gives the kernel's reference back, with no reply but "none".
  FakeRequest forget;
  m.ops->Forget(forget, dir.ino, 1);
  CHECK(forget.only().kind == Reply::kNone);
  CHECK(m.fs->NodeCount() == nodes);
  m.Lookup(vfs::kRootIno, "a.b2nd");
  m.Lookup(vfs::kRootIno, "a.b2nd");
  CHECK(m.fs->NodeCount() == nodes + 1);
  FakeRequest many;
  m.ops->ForgetMulti(many, 1, [&](size_t, vfs::Ino* ino, uint64_t* n) {
    *ino = dir.ino;
    *n = 2;
  });
  CHECK(many.only().kind == Reply::kNone);
  CHECK(m.fs->NodeCount() == nodes);
}

TEST_CASE("fuse ops: readdir pages by buffer size, continued by offset, nothing twice", "[fuse]") {
  const Array a = MakeArray({12, 8, 8}, {4, 8, 8}, {2, 8, 8}, 1.0f);
  Adapter m;
  m.tree->PutDir("many");
  std::vector<std::string> names;
  for (int i = 0; i < 150; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "file%03d.txt", i);
    names.push_back(name);
    m.tree->PutFile(std::string("many/") + name, Bytes{'x'});
  }
  m.tree->PutFile("a.b2nd", a.frame);
  m.Start();
  const EntryReply many = m.Lookup(vfs::kRootIno, "many");
  const bool plus = GENERATE(false, true);
  const size_t size = GENERATE(size_t{200}, size_t{4096});
  INFO("plus " << plus << ", buffer " << size);
  int pages = 0;
  const auto items = m.ReadAllDir(many.ino, size, plus, &pages);
  REQUIRE(items.size() == names.size() + 2);
  CHECK(items[0].name == ".");
  CHECK(items[1].name == "..");
  CHECK(items[0].ino == many.ino);
  std::vector<std::string> got;
  for (size_t i = 0; i < items.size(); ++i) {
    CHECK(items[i].next == static_cast<off_t>(i + 1));  // offsets go on from where they were
    CHECK(items[i].lookup == 0);  // the mirrored tree: names only, even with READDIRPLUS
    if (i >= 2) got.push_back(items[i].name);
  }
  std::sort(got.begin(), got.end());
  CHECK(got == names);
  CHECK(pages >=
        static_cast<int>(items.size() * FakeRequest::DirEntryBytes(names[0], plus) / size));
  // Inside a container READDIRPLUS hands the kernel attributes (one
  // reference each); READDIR names only.
  const EntryReply dir = m.Lookup(vfs::kRootIno, "a.b2nd");
  const auto inside = m.ReadAllDir(dir.ino, 4096, plus, &pages);
  auto data = std::find_if(inside.begin(), inside.end(),
                           [](const DirItem& item) { return item.name == "data"; });
  REQUIRE(data != inside.end());
  CHECK(data->ino == m.Lookup(dir.ino, "data").ino);
  if (plus) {
    CHECK(data->lookup == data->ino);
    CHECK(data->attr_timeout == 60.0);
  } else {
    CHECK(data->lookup == 0);
  }
  CHECK(m.ops->open_dirs() == 0);
}

TEST_CASE("fuse ops: a listing that fails after some entries sends those, then the error",
          "[fuse]") {
  Adapter m(true);
  m.tree->PutDir("d");
  for (int i = 0; i < 40; ++i) m.tree->PutFile("d/f" + std::to_string(100 + i), Bytes{'x'});
  m.tree->SetPageSize(10);
  m.Start();
  const EntryReply d = m.Lookup(vfs::kRootIno, "d");
  const uint64_t fh = m.OpenDir(d.ino);
  m.tree->SetOutage(EIO);
  FakeRequest first;
  m.ops->ReadDir(first, d.ino, 1 << 16, 0, fh, false);
  const Reply page = first.only();
  REQUIRE(page.kind == Reply::kBuf);
  // "." and ".." and the page read at open; the next page failed.
  REQUIRE(page.dir.size() >= 2);
  CHECK(page.dir.size() < 42);
  FakeRequest second;
  m.ops->ReadDir(second, d.ino, 1 << 16, page.dir.back().next, fh, false);
  CHECK(second.only().kind == Reply::kErr);
  CHECK(second.only().error == EIO);
  m.tree->SetOutage(0);
  FakeRequest third;
  m.ops->ReadDir(third, d.ino, 1 << 16, page.dir.back().next, fh, false);
  REQUIRE(third.only().kind == Reply::kBuf);
  CHECK(page.dir.size() + third.only().dir.size() == 42);
  FakeRequest release;
  m.ops->ReleaseDir(release, fh);
}

TEST_CASE("fuse ops: errors map to errnos, one reply each", "[fuse]") {
  const Array a = MakeArray({20, 20}, {10, 10}, {5, 5}, 1.0f);
  Adapter m;
  m.tree->PutFile("a.b2nd", a.frame);
  m.Start();
  const EntryReply dir = m.Lookup(vfs::kRootIno, "a.b2nd");
  const EntryReply data = m.Lookup(dir.ino, "data");
  auto error_of = [](FakeRequest& req) {
    const Reply r = req.only();
    REQUIRE(r.kind == Reply::kErr);
    return r.error;
  };
  SECTION("the mount is read-only") {
    FakeRequest write, link;
    Operations::ReadOnly(write);
    CHECK(error_of(write) == EROFS);
    Operations::ReadLink(link);
    CHECK(error_of(link) == EINVAL);
    FakeRequest access_w, access_r, access_x;
    m.ops->Access(access_w, data.ino, W_OK);
    CHECK(error_of(access_w) == EROFS);
    m.ops->Access(access_r, data.ino, R_OK);
    CHECK(error_of(access_r) == 0);
    m.ops->Access(access_x, 987654321, R_OK);
    CHECK(error_of(access_x) != 0);
  }
  SECTION("statfs") {
    FakeRequest req;
    m.ops->StatFs(req);
    const Reply r = req.only();
    REQUIRE(r.kind == Reply::kStatfs);
    CHECK(r.statfs.f_bsize == 4096);
    CHECK(r.statfs.f_frsize == 4096);
    CHECK(r.statfs.f_namemax == 255);
    CHECK((r.statfs.f_flag & ST_RDONLY) != 0);
    CHECK(r.statfs.f_files == m.fs->NodeCount());
  }
  SECTION("an unknown inode") {
    FakeRequest getattr, open, opendir;
    m.ops->GetAttr(getattr, 987654321, 0);
    CHECK(error_of(getattr) != 0);
    m.ops->Open(open, 987654321, O_RDONLY);
    CHECK(error_of(open) != 0);
    m.ops->OpenDir(opendir, 987654321);
    CHECK(error_of(opendir) != 0);
    CHECK(m.ops->open_files() == 0);
    CHECK(m.ops->open_dirs() == 0);
  }
  SECTION("a file is no directory") {
    FakeRequest opendir;
    m.ops->OpenDir(opendir, data.ino);
    CHECK(error_of(opendir) == ENOTDIR);
  }
  SECTION("the source fails: its errno") {
    m.tree->SetOutage(EACCES);
    CHECK(m.LookupError(vfs::kRootIno, "b.b2nd") == EACCES);
  }
  SECTION("the trampoline: exceptions become EIO and ENOMEM") {
    FakeRequest runtime, alloc, other, fine;
    Trampoline(runtime, [] { throw std::runtime_error("boom"); });
    CHECK(error_of(runtime) == EIO);
    CHECK(RecentLogText().find("internal error: boom") != std::string::npos);
    Trampoline(alloc, [] { throw std::bad_alloc(); });
    CHECK(error_of(alloc) == ENOMEM);
    Trampoline(other, [] { throw 7; });
    CHECK(error_of(other) == EIO);
    Trampoline(fine, [&] { fine.ReplyErr(0); });
    CHECK(error_of(fine) == 0);
  }
}

TEST_CASE("fuse ops: a container replaced on disk: the kernel is told, old handles read on",
          "[fuse]") {
  const Array v1 = MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 1.0f);
  const Array v2 = MakeArray({40, 30, 20}, {10, 10, 10}, {5, 5, 5}, 500.0f);
  Adapter m;
  m.tree->PutFile("a.b2nd", v1.frame);
  m.Start();
  // Wired as Serve wires it: the filesystem's callback shares an invalidator.
  std::mutex mutex;
  std::vector<vfs::StaleNode> told;
  auto invalidator = std::make_shared<Invalidator>([&](const vfs::StaleNode& node) {
    std::lock_guard<std::mutex> lock(mutex);
    told.push_back(node);
  });
  m.fs->SetInvalidateCallback(
      [invalidator](const std::vector<vfs::StaleNode>& nodes) { invalidator->Enqueue(nodes); });
  const EntryReply dir = m.Lookup(vfs::kRootIno, "a.b2nd");
  const EntryReply data = m.Lookup(dir.ino, "data");
  const uint64_t old = m.Open(data.ino);
  const size_t size = v1.data.size();
  CHECK(m.Read(data.ino, old, 0, 4096).data == Text(v1.data, 0, 4096));

  m.tree->PutFile("a.b2nd", v2.frame);
  const EntryReply fresh = m.Lookup(dir.ino, "data");  // noticed here
  CHECK(fresh.ino != data.ino);
  REQUIRE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mutex);
    return told.size() >= 2;
  }));
  {
    std::lock_guard<std::mutex> lock(mutex);
    // The container directory's attributes, and its names with all below.
    CHECK(std::any_of(told.begin(), told.end(),
                      [&](const vfs::StaleNode& n) { return n.ino == dir.ino && !n.forget_name; }));
    CHECK(std::any_of(told.begin(), told.end(), [&](const vfs::StaleNode& n) {
      return n.forget_name && n.parent == dir.ino && n.name == "data";
    }));
  }
  // The open file reads the version it opened; a new open the new one.
  CHECK(m.Read(data.ino, old, 4096, size - 4096).data == Text(v1.data, 4096, size - 4096));
  const uint64_t now = m.Open(fresh.ino);
  CHECK(m.Read(fresh.ino, now, 0, size).data == Text(v2.data, 0, size));
  m.Release(now);
  m.Release(old);
  // Nothing holds the old version: its names answer ESTALE (the kernel
  // then walks the path again).
  FakeRequest stale;
  m.ops->GetAttr(stale, data.ino, 0);
  CHECK(stale.only().error == ESTALE);
  invalidator->Stop();
  m.fs->SetInvalidateCallback(nullptr);
}

TEST_CASE("fuse ops: reading a slice pushes the next slices' pages to the kernel", "[fuse]") {
  const Array a = MakeArray({8, 64, 64}, {2, 64, 64}, {1, 64, 64}, 1.0f);  // 16 KiB slices
  Adapter m;
  m.tree->PutFile("a.b2nd", a.frame);
  m.Start();
  std::mutex mutex;
  std::vector<std::pair<vfs::Ino, std::string>> stored;
  auto pusher = std::make_unique<PagePusher>([&](vfs::Ino ino, const uint8_t* data, size_t n) {
    std::lock_guard<std::mutex> lock(mutex);
    stored.emplace_back(ino, std::string(reinterpret_cast<const char*>(data), n));
    return 0;
  });
  m.fs->SetPagePushCallback(
      [&pusher](vfs::PagePush push) { return pusher->Enqueue(std::move(push)); });
  const vfs::Ino slices =
      m.Lookup(m.Lookup(m.Lookup(vfs::kRootIno, "a.b2nd").ino, "slices").ino, "0").ino;
  const vfs::Ino first = m.Lookup(slices, "0").ino;
  const vfs::Ino second = m.Lookup(slices, "1").ino;
  const size_t slice = 16 << 10;
  auto has_second = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return std::any_of(stored.begin(), stored.end(),
                       [&](const auto& s) { return s.first == second; });
  };
  // Pages are pushed only from blocks already decompressed (read ahead on
  // the workers): a pass from the start that finds them cold pushes again.
  for (int pass = 0; pass < 100 && !has_second(); ++pass) {
    const uint64_t fh = m.Open(first);
    CHECK(m.Read(first, fh, 0, slice).data == Text(a.data, 0, slice));
    m.Release(fh);
    for (int i = 0; i < 50 && !has_second(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  REQUIRE(has_second());
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [ino, bytes] : stored) {
      if (ino == second) CHECK(bytes == Text(a.data, slice, slice));
    }
  }
  m.fs->SetPagePushCallback(nullptr);
  pusher.reset();
}

// Moved down from fuse.tree: tools such as find and rsync rely on it.
TEST_CASE("fuse ops: readdir's inode numbers are lookup's, 32-bit inside containers", "[fuse]") {
  const Array a = MakeArray({23, 19, 31}, {8, 8, 8}, {3, 4, 5}, 1.0f);
  Adapter m;
  m.tree->PutDir("ndim");
  m.tree->PutFile("ndim/3d_f4.b2nd", a.frame);
  m.tree->PutFile("ndim/notes.txt", Bytes{'x'});
  m.Start();
  const vfs::Ino ndim = m.Lookup(vfs::kRootIno, "ndim").ino;
  const vfs::Ino c = m.Lookup(ndim, "3d_f4.b2nd").ino;
  const vfs::Ino slices = m.Lookup(c, "slices").ino;
  const vfs::Ino data_zarr_c = m.Lookup(m.Lookup(c, "data.zarr").ino, "c").ino;
  const std::vector<std::pair<std::string, vfs::Ino>> dirs = {
      {"/", vfs::kRootIno},
      {"ndim", ndim},
      {"3d_f4.b2nd", c},
      {"chunks", m.Lookup(c, "chunks").ino},
      {"slices", slices},
      {"slices/1", m.Lookup(slices, "1").ino},
      {"zarr", m.Lookup(c, "zarr").ino},
      {"data.zarr/c/1", m.Lookup(data_zarr_c, "1").ino}};
  const bool plus = GENERATE(false, true);
  for (const auto& [name, ino] : dirs) {
    INFO(name << (plus ? ", READDIRPLUS" : ""));
    int pages = 0;
    const auto items = m.ReadAllDir(ino, 1 << 16, plus, &pages);
    REQUIRE(items.size() > 2);
    const bool inside = name != "/" && name != "ndim";
    for (size_t i = 2; i < items.size(); ++i) {
      INFO(items[i].name);
      CHECK(items[i].ino == m.Lookup(ino, items[i].name).ino);
      if (items[i].lookup != 0) CHECK(items[i].lookup == items[i].ino);
      if (inside) CHECK(items[i].ino < (uint64_t{1} << 32));
    }
  }
}

// Moved down from fuse.tree: listing a directory decodes none of its
// containers; looking inside one does, and a broken one is logged once.
TEST_CASE("fuse ops: listing decodes nothing; a broken container shows meta.json alone", "[fuse]") {
  const Array a = MakeArray({20, 20}, {10, 10}, {5, 5}, 1.0f);
  Adapter m;
  m.tree->PutDir("lazy");
  const std::string text = "not a frame, but named like one\n";
  m.tree->PutFile("lazy/broken_listed.b2nd", Bytes(text.begin(), text.end()));
  m.tree->PutFile("lazy/good.b2nd", a.frame);
  m.Start();
  auto logged = [] {
    const std::string log = RecentLogText();
    size_t n = 0;
    for (size_t at = log.find("broken_listed.b2nd"); at != std::string::npos;
         at = log.find("broken_listed.b2nd", at + 1)) {
      ++n;
    }
    return n;
  };
  const uint64_t opened = store::GlobalReadStats().containers_opened.load();
  const vfs::Ino lazy = m.Lookup(vfs::kRootIno, "lazy").ino;
  int pages = 0;
  // ls -l: a listing (with READDIRPLUS), then a lookup and stat of each.
  for (const auto& item : m.ReadAllDir(lazy, 1 << 16, true, &pages)) {
    if (item.name == "." || item.name == "..") continue;
    const EntryReply e = m.Lookup(lazy, item.name);
    CHECK(S_ISDIR(e.attr.st_mode));
    FakeRequest getattr;
    m.ops->GetAttr(getattr, e.ino, 0);
    CHECK(getattr.only().kind == Reply::kAttr);
  }
  CHECK(store::GlobalReadStats().containers_opened.load() == opened);
  CHECK(logged() == 0);
  // Looking inside decodes it: meta.json says why, nothing else is there.
  const vfs::Ino broken = m.Lookup(lazy, "broken_listed.b2nd").ino;
  const auto items = m.ReadAllDir(broken, 1 << 16, false, &pages);
  REQUIRE(items.size() == 3);
  CHECK(items[2].name == "meta.json");
  CHECK(m.LookupError(broken, "data") == ENOENT);
  const EntryReply meta = m.Lookup(broken, "meta.json");
  const uint64_t fh = m.Open(meta.ino);
  const Reply json = m.Read(meta.ino, fh, 0, 1 << 16);
  m.Release(fh);
  CHECK(json.data.find("\"error\"") != std::string::npos);
  const size_t once = logged();
  CHECK(once >= 1);
  for (int i = 0; i < 3; ++i) {
    m.ReadAllDir(broken, 1 << 16, false, &pages);
    CHECK(m.LookupError(broken, "data") == ENOENT);
  }
  CHECK(logged() == once);
}

}  // namespace
}  // namespace b2ndfs::fuse
