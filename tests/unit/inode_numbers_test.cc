// Inode numbers of the mirrored tree (src/vfs/path_numbers.h, README.md
// "Inode numbers"): every path and kind a mount meets has a number of its
// own, the same across FORGET and a new lookup, apart from the fixed numbers
// and the counted ones (generation blocks, unlisted names); 64-bit by
// default, below 2^32 with ino32.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"
#include "fake_tree.h"
#include "inode_table.h"
#include "path_numbers.h"
#include "test_store.h"

namespace b2ndfs {
namespace {

using vfs::Ino;
using vfs::InodeNumbering;
using vfs::InodeTable;

constexpr Ino k2to31 = Ino{1} << 31;
constexpr Ino k2to32 = Ino{1} << 32;

std::shared_ptr<vfs::PathNode> Candidate(const std::string& path, vfs::NodeType type) {
  auto node = std::make_shared<vfs::PathNode>();
  node->path = path;
  node->type = type;
  return node;
}

// The i-th of many names: 1000 to a directory, as a walk meets them.
std::string NameOf(size_t i) {
  return "/src/d" + std::to_string(i / 1000) + "/f" + std::to_string(i % 1000) + ".txt";
}

TEST_CASE("SipHash-2-4-128 gives the reference's values", "[inodes]") {
  const uint64_t key[2] = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
  // The reference's first vector, and OpenSSL's SIPHASH (size 16) of
  // "\x00\x01\x02" and of 20 'a's (a whole word and a tail).
  auto hex = [](const vfs::PathNumbers::Key& k) {
    char out[33];
    for (int i = 0; i < 16; ++i) {
      const uint64_t word = i < 8 ? k.a : k.b;
      std::snprintf(out + 2 * i, 3, "%02x", static_cast<unsigned>((word >> (8 * (i % 8))) & 0xff));
    }
    return std::string(out, 32);
  };
  CHECK(hex(vfs::SipHash128(key, "")) == "a3817f04ba25a8e66df67214c7550293");
  CHECK(hex(vfs::SipHash128(key, std::string("\x00\x01\x02", 3))) ==
        "9c70b60c5267a94e5f33b6b02985ed51");
  CHECK(hex(vfs::SipHash128(key, std::string(20, 'a'))) == "0404da4e4c2fa43d3a0e69ec3598448c");
}

TEST_CASE("200,000 paths get distinct numbers, stable across forget, apart from the others",
          "[inodes]") {
  const bool ino32 = GENERATE(false, true);
  INFO("ino32 " << ino32);
  InodeTable table(InodeNumbering{ino32});
  // Counted numbers taken before and among the paths.
  const Ino block = table.Reserve(5000);
  constexpr size_t kNames = 200000;
  std::vector<Ino> numbers(kNames);
  std::unordered_set<Ino> seen;
  for (size_t i = 0; i < kNames; ++i) {
    numbers[i] = table.PathIno(NameOf(i), S_IFREG);
    REQUIRE(numbers[i] != 0);
    CHECK(table.IsPathIno(numbers[i]));
    if (ino32) {
      CHECK(numbers[i] < k2to32);
    } else {
      CHECK(numbers[i] >= k2to32);
    }
    CHECK(seen.insert(numbers[i]).second);
  }
  // The directories, and a path that is a file and then a directory: other
  // numbers.
  for (size_t d = 0; d < kNames / 1000; ++d) {
    const Ino dir = table.PathIno("/src/d" + std::to_string(d), S_IFDIR);
    CHECK(seen.insert(dir).second);
  }
  CHECK(seen.insert(table.PathIno(NameOf(7), S_IFDIR)).second);
  CHECK(table.path_numbers() == kNames + kNames / 1000 + 1);
  CHECK(table.path_number_bytes() < 40 * table.path_numbers() + (1 << 20));
  // Fixed and counted numbers are none of them.
  const Ino unlisted = table.AddUnlisted({}, nullptr);
  for (Ino n : {Ino{1}, Ino{2}, Ino{3}, Ino{4}, block, block + 4999, unlisted, table.Reserve(1)}) {
    CHECK_FALSE(table.IsPathIno(n));
    CHECK(seen.count(n) == 0);
  }
  // Held, forgotten, looked up again: the same number; listing again too.
  for (size_t i = 0; i < kNames; i += 997) {
    auto node = table.RefPath(Candidate(NameOf(i), vfs::NodeType::kFile));
    CHECK(node->ino == numbers[i]);
    CHECK(table.FindPathByName(NameOf(i)) == node);
    table.Forget(node->ino, 1);
    CHECK(table.FindPath(numbers[i]) == nullptr);
    CHECK(table.RefPath(Candidate(NameOf(i), vfs::NodeType::kFile))->ino == numbers[i]);
    table.Forget(numbers[i], 1);
    CHECK(table.PathIno(NameOf(i), S_IFREG) == numbers[i]);
  }
  CHECK(table.size() == 1);  // the unlisted name
  // A name looked up before any listing gets the number a listing gives.
  const Ino fresh = table.RefPath(Candidate("/src/new", vfs::NodeType::kDir))->ino;
  CHECK(table.PathIno("/src/new", S_IFDIR) == fresh);
  CHECK(seen.insert(fresh).second);
}

TEST_CASE("threads listing and looking up the same names agree on their numbers", "[inodes]") {
  InodeTable table;
  constexpr size_t kNames = 20000;
  constexpr int kThreads = 4;
  std::vector<std::vector<Ino>> seen(kThreads, std::vector<Ino>(kNames));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&table, &seen, t] {
      // Each thread meets the names in its own order, half by listing, half
      // by lookup and forget, while the index grows under them.
      for (size_t k = 0; k < kNames; ++k) {
        const size_t i = t % 2 == 0 ? k : kNames - 1 - k;
        if ((i + static_cast<size_t>(t)) % 2 == 0) {
          seen[t][i] = table.PathIno(NameOf(i), S_IFREG);
        } else {
          auto node = table.RefPath(Candidate(NameOf(i), vfs::NodeType::kFile));
          seen[t][i] = node->ino;
          table.Forget(node->ino, 1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::unordered_set<Ino> distinct;
  for (size_t i = 0; i < kNames; ++i) {
    for (int t = 1; t < kThreads; ++t) CHECK(seen[t][i] == seen[0][i]);
    CHECK(distinct.insert(seen[0][i]).second);
  }
  CHECK(table.path_numbers() == kNames);
  CHECK(table.size() == 0);
}

TEST_CASE("ino32 past its 32-bit names, and a full table", "[inodes]") {
  // As past 2^31 names: the next ones are numbered above 2^32, still unique.
  InodeTable narrow(InodeNumbering{true, 1000, 5000});
  std::unordered_set<Ino> seen;
  for (size_t i = 0; i < 3000; ++i) {
    const Ino n = narrow.PathIno(NameOf(i), S_IFREG);
    CHECK((i < 1000 ? n >= k2to31 && n < k2to31 + 1000 : n >= k2to32));
    CHECK(narrow.IsPathIno(n));
    CHECK(seen.insert(n).second);
  }
  CHECK(narrow.PathIno(NameOf(2500), S_IFREG) == narrow.PathIno(NameOf(2500), S_IFREG));
  CHECK_FALSE(narrow.IsPathIno(narrow.Reserve(1)));

  // Past the most names kept: listings give 0, a lookup a counted number
  // while the kernel holds the name (the same one for a second lookup).
  InodeTable full(InodeNumbering{false, 0, 100});
  for (size_t i = 0; i < 100; ++i) CHECK(full.PathIno(NameOf(i), S_IFREG) != 0);
  CHECK(full.PathIno(NameOf(100), S_IFREG) == 0);
  CHECK(full.PathIno(NameOf(5), S_IFREG) != 0);  // numbered ones keep theirs
  auto held = full.RefPath(Candidate(NameOf(100), vfs::NodeType::kFile));
  CHECK(held->ino != 0);
  CHECK_FALSE(full.IsPathIno(held->ino));
  CHECK(full.RefPath(Candidate(NameOf(100), vfs::NodeType::kFile)) == held);
  CHECK(full.FindPathByName(NameOf(100)) == held);
  CHECK(full.FindPath(held->ino) == held);
  full.Forget(held->ino, 2);
  CHECK(full.FindPathByName(NameOf(100)) == nullptr);
  CHECK(full.size() == 0);
}

TEST_CASE("a walk through the filesystem: listing and lookup agree, numbers unique and stable",
          "[inodes]") {
  const bool ino32 = GENERATE(false, true);
  INFO("ino32 " << ino32);
  SetLogLevel(LogLevel::kWarning);
  auto tree = std::make_shared<testing::FakeTree>();
  for (int d = 0; d < 4; ++d) {
    tree->PutDir("d" + std::to_string(d));
    for (int f = 0; f < 500; ++f) {
      tree->PutFile("d" + std::to_string(d) + "/f" + std::to_string(f), {1, 2, 3});
    }
  }
  testing::TestStore store(16 << 20, 4, 0);
  vfs::Options options;
  options.source = testing::FakeTree::kRoot;
  options.tree = tree;
  options.ino32 = ino32;
  vfs::Filesystem fs(options, &store.ctx);
  auto walk = [&fs] {
    std::unordered_map<std::string, Ino> out;
    auto root = fs.OpenDir(vfs::kRootIno);
    REQUIRE(root.ok());
    for (size_t i = 0; *(*root)->Has(i); ++i) {
      const vfs::DirEntry dir = (*root)->at(i);
      auto attr = fs.Lookup(vfs::kRootIno, dir.name);
      REQUIRE(attr.ok());
      CHECK(attr->st.st_ino == dir.ino);
      out[dir.name] = dir.ino;
      auto listing = fs.OpenDir(dir.ino);
      REQUIRE(listing.ok());
      for (size_t j = 0; *(*listing)->Has(j); ++j) {
        const vfs::DirEntry e = (*listing)->at(j);
        auto file = fs.Lookup(dir.ino, e.name);
        REQUIRE(file.ok());
        CHECK(file->st.st_ino == e.ino);
        out[dir.name + "/" + e.name] = e.ino;
        fs.Forget(e.ino, 1);
      }
      fs.Forget(dir.ino, 1);
    }
    return out;
  };
  const auto first = walk();
  REQUIRE(first.size() == 4 + 4 * 500);
  CHECK(fs.NodeCount() == 0);  // every record forgotten
  std::unordered_set<Ino> distinct;
  for (const auto& [name, ino] : first) {
    CHECK(distinct.insert(ino).second);
    CHECK(ino > vfs::kRootIno + 15);
    CHECK((ino32 ? ino < k2to32 : ino >= k2to32));
  }
  CHECK(walk() == first);
}

}  // namespace
}  // namespace b2ndfs
