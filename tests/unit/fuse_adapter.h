#pragma once
// The FUSE operations (src/fuse/operations.h) over a vfs::Filesystem of a
// fake source tree, driven by fake requests (fake_request.h): what
// fuse_ops_test.cc and fuse_xattr_test.cc share. Each helper REQUIREs the
// reply it expects.
#include <fcntl.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "array_frame.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"
#include "fake_request.h"
#include "fake_tree.h"
#include "operations.h"
#include "temp_dir.h"
#include "test_store.h"

namespace b2ndfs::fuse::testing {

using b2ndfs::testing::Bytes;
using b2ndfs::testing::DirItem;
using b2ndfs::testing::FakeRequest;
using b2ndfs::testing::FakeTree;
using b2ndfs::testing::Reply;

using b2ndfs::testing::Array;
using b2ndfs::testing::MakeArray;

inline std::string Text(const Bytes& b, size_t offset, size_t length) {
  return std::string(reinterpret_cast<const char*>(b.data()) + offset, length);
}

// The operations over a filesystem over a fake tree.
struct Adapter {
  explicit Adapter(bool remote = false)
      : tree(std::make_shared<FakeTree>(remote)), store(64 << 20, 4, 2) {}
  void Start() {
    SetLogLevel(LogLevel::kWarning);
    vfs::Options options;
    options.source = FakeTree::kRoot;
    options.tree = tree;
    fs = std::make_unique<vfs::Filesystem>(options, &store.ctx);
    ops = std::make_unique<Operations>(*fs, 1 << 20);
  }
  // A successful LOOKUP's entry.
  EntryReply Lookup(vfs::Ino parent, const std::string& name) {
    FakeRequest req;
    ops->Lookup(req, parent, name.c_str());
    const Reply r = req.only();
    INFO(name << ": " << (r.kind == Reply::kErr ? strerror(r.error) : ""));
    REQUIRE(r.kind == Reply::kEntry);
    return r.entry;
  }
  int LookupError(vfs::Ino parent, const std::string& name) {
    FakeRequest req;
    ops->Lookup(req, parent, name.c_str());
    const Reply r = req.only();
    return r.kind == Reply::kErr ? r.error : 0;
  }
  uint64_t Open(vfs::Ino ino) {
    FakeRequest req;
    ops->Open(req, ino, O_RDONLY);
    const Reply r = req.only();
    REQUIRE(r.kind == Reply::kOpen);
    REQUIRE(r.open.fh != 0);
    return r.open.fh;
  }
  uint64_t OpenDir(vfs::Ino ino) {
    FakeRequest req;
    ops->OpenDir(req, ino);
    const Reply r = req.only();
    REQUIRE(r.kind == Reply::kOpen);
    return r.open.fh;
  }
  Reply Read(vfs::Ino ino, uint64_t fh, off_t offset, size_t size) {
    FakeRequest req;
    ops->Read(req, ino, size, offset, fh);
    return req.only();
  }
  void Release(uint64_t fh) {
    FakeRequest req;
    ops->Release(req, fh);
    CHECK(req.only().error == 0);
  }
  // Every entry of directory `ino` read in pages of `size` bytes, each page
  // continued from the offset the last entry of the one before gave.
  std::vector<DirItem> ReadAllDir(vfs::Ino ino, size_t size, bool plus, int* pages) {
    const uint64_t fh = OpenDir(ino);
    std::vector<DirItem> all;
    off_t offset = 0;
    size_t last_bytes = 0;
    *pages = 0;
    for (;;) {
      FakeRequest req;
      ops->ReadDir(req, ino, size, offset, fh, plus);
      const Reply r = req.only();
      REQUIRE(r.kind == Reply::kBuf);
      CHECK(r.data.size() <= size);
      CHECK(r.data.size() == r.dir_bytes);  // the entries' kernel layout, no more
      if (r.dir.empty()) break;
      // The page before was as full as the buffer allowed.
      if (*pages > 0) CHECK(last_bytes + FakeRequest::DirEntryBytes(r.dir[0].name, plus) > size);
      last_bytes = r.dir_bytes;
      ++*pages;
      all.insert(all.end(), r.dir.begin(), r.dir.end());
      offset = r.dir.back().next;
      REQUIRE(*pages < 10000);
    }
    FakeRequest release;
    ops->ReleaseDir(release, fh);
    CHECK(release.only().error == 0);
    return all;
  }

  std::shared_ptr<FakeTree> tree;
  b2ndfs::testing::TestStore store;
  std::unique_ptr<vfs::Filesystem> fs;
  std::unique_ptr<Operations> ops;
};

}  // namespace b2ndfs::fuse::testing
