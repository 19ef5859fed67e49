// remote/disk_cache: what is served from disk and what is fetched, versions
// (ETag), torn and corrupt files, restarts, the lock, the bound; computed
// values (source/derived_store.h) by key, version and size, tampered ones.
#include "b2ndfs/remote/disk_cache.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

using namespace b2ndfs;
using namespace b2ndfs::remote;

namespace {

// The "object": deterministic bytes, with a count of what was fetched.
struct Origin {
  std::vector<uint8_t> bytes;
  int fetches = 0;
  int64_t fetched_bytes = 0;
  explicit Origin(size_t n, uint8_t salt = 0) : bytes(n) {
    for (size_t i = 0; i < n; ++i)
      bytes[i] = static_cast<uint8_t>((i * 131 + i / 977 + salt) & 255);
  }
  DiskCache::Fetch fetch() {
    return [this](int64_t offset, size_t length, uint8_t* out) {
      ++fetches;
      fetched_bytes += static_cast<int64_t>(length);
      if (offset < 0 ||
          offset + static_cast<int64_t>(length) > static_cast<int64_t>(bytes.size())) {
        return Status(EIO, "out of range");
      }
      std::copy(bytes.begin() + offset, bytes.begin() + offset + static_cast<int64_t>(length), out);
      return Status::Ok();
    };
  }
};

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/b2ndfs_disk_cache_XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      for (auto& f : Files(path)) out.push_back(f);
    } else {
      out.push_back(path);
    }
  }
  ::closedir(d);
  return out;
}

const std::string kUrl = "http://user:secret@example.org/data/a.b2nd";

std::vector<uint8_t> ReadVia(DiskCache& cache, Origin& origin, const std::string& etag,
                             int64_t offset, size_t length) {
  std::vector<uint8_t> out(length, 0xEE);
  REQUIRE(cache
              .Read(kUrl, etag, static_cast<int64_t>(origin.bytes.size()), offset, length,
                    out.data(), origin.fetch())
              .ok());
  return out;
}

std::vector<uint8_t> Slice(const Origin& o, int64_t offset, size_t length) {
  return std::vector<uint8_t>(o.bytes.begin() + offset,
                              o.bytes.begin() + offset + static_cast<int64_t>(length));
}

}  // namespace

TEST_CASE("a range is fetched once, then served from disk; only missing bytes are fetched") {
  TempDir dir;
  auto cache = DiskCache::Open(dir.path + "/c", 64 << 20);
  REQUIRE(cache.ok());
  Origin origin(1 << 20);
  CHECK(ReadVia(**cache, origin, "\"e1\"", 1000, 200000) == Slice(origin, 1000, 200000));
  CHECK(origin.fetches == 1);
  CHECK(ReadVia(**cache, origin, "\"e1\"", 5000, 100000) == Slice(origin, 5000, 100000));
  CHECK(origin.fetches == 1);
  // Overlapping the end: only [201000, 300000) comes from the origin.
  CHECK(ReadVia(**cache, origin, "\"e1\"", 150000, 150000) == Slice(origin, 150000, 150000));
  CHECK(origin.fetches == 2);
  CHECK(origin.fetched_bytes == 200000 + 99000);
  // Two held ranges cover it together.
  CHECK(ReadVia(**cache, origin, "\"e1\"", 0 + 1000, 299000) == Slice(origin, 1000, 299000));
  CHECK(origin.fetches == 2);
  const DiskCacheStats s = (*cache)->stats();
  CHECK(s.hits == 2);
  CHECK(s.misses == 2);
  CHECK(s.entries == 2);
  // No name or secret of the URL is written anywhere.
  for (const auto& f : Files(dir.path)) {
    CHECK(f.find("secret") == std::string::npos);
    CHECK(f.find("example") == std::string::npos);
    std::ifstream in(f, std::ios::binary);
    const std::string content((std::istreambuf_iterator<char>(in)), {});
    CHECK(content.find("secret") == std::string::npos);
  }
}

TEST_CASE("a range is served only for the ETag it was fetched at, and old versions go") {
  TempDir dir;
  auto cache = DiskCache::Open(dir.path, 64 << 20);
  REQUIRE(cache.ok());
  Origin v1(300000, 0), v2(300000, 7);
  CHECK(ReadVia(**cache, v1, "\"v1\"", 0, 100000) == Slice(v1, 0, 100000));
  CHECK(ReadVia(**cache, v2, "\"v2\"", 0, 100000) == Slice(v2, 0, 100000));
  CHECK(v2.fetches == 1);
  CHECK((*cache)->stats().invalidations == 1);
  // v1's bytes are gone: asking for v1 again fetches (and never serves v2's).
  CHECK(ReadVia(**cache, v1, "\"v1\"", 0, 100000) == Slice(v1, 0, 100000));
  CHECK(v1.fetches == 2);
  // The same ETag with another size is another version too.
  Origin longer(400000, 0);
  CHECK(ReadVia(**cache, longer, "\"v1\"", 0, 1000) == Slice(longer, 0, 1000));
  CHECK(longer.fetches == 1);
  // Forget drops everything of the URL.
  (*cache)->Forget(kUrl);
  CHECK((*cache)->stats().entries == 0);
  // No ETag: no caching.
  Origin plain(1000);
  ReadVia(**cache, plain, "", 0, 100);
  ReadVia(**cache, plain, "", 0, 100);
  CHECK(plain.fetches == 2);
}

TEST_CASE("torn, truncated and corrupt files are misses, never wrong bytes") {
  TempDir dir;
  Origin origin(500000);
  auto cache = DiskCache::Open(dir.path, 64 << 20);
  REQUIRE(cache.ok());
  ReadVia(**cache, origin, "\"e\"", 0, 300000);
  auto files = Files(dir.path + "/ranges");
  REQUIRE(files.size() == 1);
  SECTION("a flipped byte in a segment") {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1000, std::ios::end);
    f.put('\x5a' ^ static_cast<char>(origin.bytes[300000 - 1000]));
  }
  SECTION("a flipped byte in the header") {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    char c = 0;
    f.seekg(40);
    f.get(c);
    f.seekp(40);
    f.put(static_cast<char>(c ^ 1));
  }
  SECTION("cut short") { REQUIRE(::truncate(files[0].c_str(), 200000) == 0); }
  SECTION("emptied") { REQUIRE(::truncate(files[0].c_str(), 0) == 0); }
  const int before = origin.fetches;
  CHECK(ReadVia(**cache, origin, "\"e\"", 0, 300000) == Slice(origin, 0, 300000));
  CHECK(origin.fetches == before + 1);
  CHECK((*cache)->stats().corrupt == 1);
  // Stored afresh: served from disk again.
  CHECK(ReadVia(**cache, origin, "\"e\"", 0, 300000) == Slice(origin, 0, 300000));
  CHECK(origin.fetches == before + 1);
}

TEST_CASE("ranges survive a restart; temporary files of a crash are deleted") {
  TempDir dir;
  Origin origin(200000);
  {
    auto cache = DiskCache::Open(dir.path, 64 << 20);
    REQUIRE(cache.ok());
    ReadVia(**cache, origin, "\"e\"", 10, 150000);
  }
  std::ofstream(dir.path + "/tmp/123.4") << "half a range";
  auto cache = DiskCache::Open(dir.path, 64 << 20);
  REQUIRE(cache.ok());
  CHECK(Files(dir.path + "/tmp").empty());
  CHECK((*cache)->stats().entries == 1);
  CHECK(ReadVia(**cache, origin, "\"e\"", 100, 1000) == Slice(origin, 100, 1000));
  CHECK(origin.fetches == 1);
}

TEST_CASE("one process per directory") {
  TempDir dir;
  auto first = DiskCache::Open(dir.path, 64 << 20);
  REQUIRE(first.ok());
  auto second = DiskCache::Open(dir.path, 64 << 20);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().error_number() == EBUSY);
  first = Status(EIO, "closed");
  CHECK(DiskCache::Open(dir.path, 64 << 20).ok());
}

TEST_CASE("the files stay within the capacity, least recently used deleted first") {
  TempDir dir;
  Origin origin(4 << 20);
  auto cache = DiskCache::Open(dir.path, 1 << 20);
  REQUIRE(cache.ok());
  const size_t n = 200 << 10;
  for (int i = 0; i < 4; ++i) ReadVia(**cache, origin, "\"e\"", i * (256 << 10), n);
  ReadVia(**cache, origin, "\"e\"", 0, n);  // the first is now the most recent
  for (int i = 4; i < 8; ++i) ReadVia(**cache, origin, "\"e\"", i * (256 << 10), n);
  const DiskCacheStats s = (*cache)->stats();
  CHECK(s.bytes_on_disk <= s.capacity_bytes);
  CHECK(s.evictions >= 3);
  uint64_t on_disk = 0;
  for (const auto& f : Files(dir.path + "/ranges")) {
    struct stat st;
    REQUIRE(::stat(f.c_str(), &st) == 0);
    on_disk += static_cast<uint64_t>(st.st_size);
  }
  CHECK(on_disk == s.bytes_on_disk);
  const int before = origin.fetches;
  CHECK(ReadVia(**cache, origin, "\"e\"", 0, n) == Slice(origin, 0, n));
  CHECK(origin.fetches == before);  // kept: it was used recently
  CHECK(ReadVia(**cache, origin, "\"e\"", 256 << 10, n) == Slice(origin, 256 << 10, n));
  CHECK(origin.fetches == before + 1);  // evicted
  // A range over a quarter of the capacity is served but not kept.
  ReadVia(**cache, origin, "\"e\"", 3 << 20, 300 << 10);
  ReadVia(**cache, origin, "\"e\"", 3 << 20, 300 << 10);
  CHECK(origin.fetches == before + 3);
}

TEST_CASE("a planted file with a range's name and forged bytes is a miss, never served") {
  // Made by a cache of another directory (so with a key of its own) from
  // an origin whose bytes differ: a well-formed file, as one who can write
  // to the directory but does not hold its key could plant it.
  TempDir dir, elsewhere;
  Origin origin(300000), forged(300000, 99);
  {
    auto cache = DiskCache::Open(dir.path, 64 << 20);  // makes the key
    REQUIRE(cache.ok());
  }
  {
    auto planter = DiskCache::Open(elsewhere.path, 64 << 20);
    REQUIRE(planter.ok());
    ReadVia(**planter, forged, "\"e\"", 0, 200000);
  }
  auto planted = Files(elsewhere.path + "/ranges");
  REQUIRE(planted.size() == 1);
  const std::string name = planted[0].substr(elsewhere.path.size());
  REQUIRE(std::system(("mkdir -p \"$(dirname '" + dir.path + name + "')\" && cp '" + planted[0] +
                       "' '" + dir.path + name + "'")
                          .c_str()) == 0);
  auto cache = DiskCache::Open(dir.path, 64 << 20);
  REQUIRE(cache.ok());
  REQUIRE((*cache)->stats().entries == 1);  // indexed by its name
  CHECK(ReadVia(**cache, origin, "\"e\"", 1000, 100000) == Slice(origin, 1000, 100000));
  CHECK(origin.fetches == 1);
  CHECK((*cache)->stats().corrupt == 1);
  CHECK((*cache)->stats().hits == 0);
  // Fetched again and kept under this directory's key: served from disk now.
  CHECK(ReadVia(**cache, origin, "\"e\"", 1000, 100000) == Slice(origin, 1000, 100000));
  CHECK(origin.fetches == 1);
}

TEST_CASE("a directory others may write to, or of another user, is refused, saying why") {
  TempDir dir;
  const std::string d = dir.path + "/c";
  REQUIRE(::mkdir(d.c_str(), 0777) == 0);
  REQUIRE(::chmod(d.c_str(), 0777) == 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const Status s =
        attempt == 0 ? DiskCache::CheckDirectory(d) : DiskCache::Open(d, 64 << 20).status();
    CHECK(s.error_number() == EACCES);
    CHECK_THAT(s.message(), Catch::Contains("writable by group or others (mode 0777)") &&
                                Catch::Contains("chmod go-w " + d));
  }
  REQUIRE(::chmod(d.c_str(), 0770) == 0);
  CHECK(DiskCache::CheckDirectory(d).error_number() == EACCES);
  REQUIRE(::chmod(d.c_str(), 0700) == 0);
  CHECK(DiskCache::CheckDirectory(d).ok());
  if (::geteuid() == 0) {
    // Another user's (only root can make one here).
    REQUIRE(::chown(d.c_str(), 65534, 65534) == 0);
    const Status s = DiskCache::CheckDirectory(d);
    CHECK(s.error_number() == EACCES);
    CHECK_THAT(s.message(), Catch::Contains("owned by uid 65534") && Catch::Contains("chown"));
    REQUIRE(::chown(d.c_str(), 0, 0) == 0);
  }
  // A symbolic link to a good directory, and a file.
  REQUIRE(::symlink(d.c_str(), (dir.path + "/link").c_str()) == 0);
  const Status link = DiskCache::Open(dir.path + "/link", 64 << 20).status();
  CHECK(link.error_number() == EACCES);
  CHECK_THAT(link.message(), Catch::Contains("symbolic link"));
  std::ofstream(dir.path + "/file") << "x";
  CHECK(DiskCache::CheckDirectory(dir.path + "/file").error_number() == ENOTDIR);
  // A missing one is made, for this user alone.
  const std::string fresh = dir.path + "/fresh";
  CHECK(DiskCache::CheckDirectory(fresh).ok());
  struct stat st;
  REQUIRE(::stat(fresh.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
}

TEST_CASE("the key file: made 0600 with the directory; refused if others may use it") {
  TempDir dir;
  const std::string key = dir.path + "/key";
  {
    auto cache = DiskCache::Open(dir.path, 64 << 20);
    REQUIRE(cache.ok());
  }
  struct stat st;
  REQUIRE(::lstat(key.c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(st.st_uid == ::geteuid());
  CHECK(st.st_size == 32);
  SECTION("readable by others") {
    REQUIRE(::chmod(key.c_str(), 0644) == 0);
    for (int attempt = 0; attempt < 2; ++attempt) {
      const Status s = attempt == 0 ? DiskCache::CheckDirectory(dir.path)
                                    : DiskCache::Open(dir.path, 64 << 20).status();
      CHECK(s.error_number() == EACCES);
      CHECK_THAT(s.message(), Catch::Contains("mode 0644") && Catch::Contains("chmod 600 " + key));
    }
  }
  SECTION("not a key") {
    REQUIRE(::truncate(key.c_str(), 5) == 0);
    CHECK(DiskCache::Open(dir.path, 64 << 20).status().error_number() == EACCES);
  }
  SECTION("a symbolic link") {
    REQUIRE(::rename(key.c_str(), (dir.path + "/elsewhere").c_str()) == 0);
    REQUIRE(::symlink((dir.path + "/elsewhere").c_str(), key.c_str()) == 0);
    CHECK(DiskCache::CheckDirectory(dir.path).error_number() == EACCES);
    CHECK(DiskCache::Open(dir.path, 64 << 20).status().error_number() == EACCES);
  }
  SECTION("another user's") {
    if (::geteuid() != 0) return;
    REQUIRE(::chown(key.c_str(), 65534, 65534) == 0);
    CHECK(DiskCache::Open(dir.path, 64 << 20).status().error_number() == EACCES);
  }
}

TEST_CASE("a directory given a new key drops the ranges it held") {
  TempDir dir;
  Origin origin(200000);
  {
    auto cache = DiskCache::Open(dir.path, 64 << 20);
    REQUIRE(cache.ok());
    ReadVia(**cache, origin, "\"e\"", 0, 100000);
  }
  REQUIRE(Files(dir.path + "/ranges").size() == 1);
  REQUIRE(::unlink((dir.path + "/key").c_str()) == 0);
  auto cache = DiskCache::Open(dir.path, 64 << 20);
  REQUIRE(cache.ok());
  CHECK(Files(dir.path + "/ranges").empty());
  CHECK((*cache)->stats().entries == 0);
  CHECK((*cache)->stats().corrupt == 0);
  CHECK(ReadVia(**cache, origin, "\"e\"", 0, 100000) == Slice(origin, 0, 100000));
  CHECK(origin.fetches == 2);
}

namespace {

std::vector<uint8_t> Value(size_t n, uint8_t salt) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 7 + salt) & 255);
  return v;
}

bool Get(DiskCache& cache, const std::string& etag, const std::string& key,
         std::vector<uint8_t>* out) {
  return cache.ReadComputed(kUrl, etag, 1000, key, std::span<uint8_t>(out->data(), out->size()));
}

void Put(DiskCache& cache, const std::string& etag, const std::string& key,
         const std::vector<uint8_t>& v) {
  cache.StoreComputed(kUrl, etag, 1000, key, std::span<const uint8_t>(v.data(), v.size()));
}

}  // namespace

TEST_CASE("computed values: kept across restarts, by key, version and size, never tampered") {
  TempDir dir;
  const std::vector<uint8_t> a = Value(100000, 1), b = Value(5000, 2);
  std::vector<uint8_t> out(100000);
  {
    auto cache = DiskCache::Open(dir.path, 64 << 20);
    REQUIRE(cache.ok());
    CHECK_FALSE((*cache)->HoldsComputed(kUrl, "\"e\"", 1000, "block a"));
    CHECK_FALSE(Get(**cache, "\"e\"", "block a", &out));  // never stored: a miss
    Put(**cache, "\"e\"", "block a", a);
    Put(**cache, "\"e\"", "block b", b);
    Put(**cache, "", "block c", b);  // no ETag: nothing kept
    CHECK((*cache)->stats().computed_stored == 2);
    CHECK((*cache)->stats().entries == 2);
  }
  auto cache = DiskCache::Open(dir.path, 64 << 20);
  REQUIRE(cache.ok());
  CHECK((*cache)->stats().entries == 2);
  CHECK((*cache)->HoldsComputed(kUrl, "\"e\"", 1000, "block a"));
  REQUIRE(Get(**cache, "\"e\"", "block a", &out));
  CHECK(out == a);
  CHECK((*cache)->stats().computed_hits == 1);
  std::vector<uint8_t> small(5000);
  REQUIRE(Get(**cache, "\"e\"", "block b", &small));
  CHECK(small == b);
  // Another key, another size asked, another ETag or size of the object:
  // misses, and never another value's bytes.
  CHECK_FALSE(Get(**cache, "\"e\"", "block c", &out));
  CHECK_FALSE(Get(**cache, "\"e\"", "block b", &out));
  CHECK_FALSE((*cache)->HoldsComputed(kUrl, "\"f\"", 1000, "block a"));
  CHECK_FALSE(Get(**cache, "\"f\"", "block a", &out));
  CHECK_FALSE((*cache)->ReadComputed(kUrl, "\"e\"", 999, "block a", out));
  CHECK_FALSE((*cache)->ReadComputed(kUrl + "x", "\"e\"", 1000, "block a", out));
  // A value is not a range of the object, nor is a range a value.
  Origin origin(1000);
  ReadVia(**cache, origin, "\"e\"", 0, 1000);
  CHECK(origin.fetches == 1);
  CHECK((*cache)->stats().corrupt == 0);

  SECTION("a tampered value is a miss, deleted; stored again, it is served") {
    std::vector<std::string> values;
    for (const auto& f : Files(dir.path + "/ranges")) {
      if (f.find("/c-") != std::string::npos) values.push_back(f);
    }
    REQUIRE(values.size() == 2);
    for (const auto& f : values) {
      std::fstream file(f, std::ios::in | std::ios::out | std::ios::binary);
      file.seekp(-100, std::ios::end);
      file.put('\x77');
    }
    CHECK_FALSE(Get(**cache, "\"e\"", "block a", &out));
    CHECK((*cache)->stats().corrupt >= 1);
    CHECK_FALSE((*cache)->HoldsComputed(kUrl, "\"e\"", 1000, "block a"));
    Put(**cache, "\"e\"", "block a", a);
    REQUIRE(Get(**cache, "\"e\"", "block a", &out));
    CHECK(out == a);
  }
  SECTION("a value renamed to another key's name is a miss") {
    std::string fa, fb;
    for (const auto& f : Files(dir.path + "/ranges")) {
      if (f.find("/c-") == std::string::npos) continue;
      (std::filesystem::file_size(f) > 50000 ? fa : fb) = f;
    }
    REQUIRE(!fa.empty());
    REQUIRE(!fb.empty());
    // b's file under a's name: its header names another key and length.
    REQUIRE(::rename(fb.c_str(), fa.c_str()) == 0);
    CHECK_FALSE(Get(**cache, "\"e\"", "block a", &out));
  }
  SECTION("the object's next version drops its values") {
    Origin next(1000, 9);
    ReadVia(**cache, next, "\"g\"", 0, 100);
    CHECK_FALSE((*cache)->HoldsComputed(kUrl, "\"e\"", 1000, "block a"));
    CHECK((*cache)->stats().invalidations >= 2);
    CHECK((*cache)->stats().entries == 1);
  }
  SECTION("Forget drops them too") {
    (*cache)->Forget(kUrl);
    CHECK((*cache)->stats().entries == 0);
    CHECK(Files(dir.path + "/ranges").empty());
  }
}

TEST_CASE("computed values count in the bound; a value over a quarter of it is not kept") {
  TempDir dir;
  auto cache = DiskCache::Open(dir.path, 400000);
  REQUIRE(cache.ok());
  const std::vector<uint8_t> v = Value(90000, 3);
  for (int i = 0; i < 8; ++i) Put(**cache, "\"e\"", "block " + std::to_string(i), v);
  const DiskCacheStats s = (*cache)->stats();
  CHECK(s.bytes_on_disk <= 400000);
  CHECK(s.evictions >= 4);
  std::vector<uint8_t> out(v.size());
  CHECK(Get(**cache, "\"e\"", "block 7", &out));
  CHECK_FALSE(Get(**cache, "\"e\"", "block 0", &out));
  Put(**cache, "\"e\"", "big", Value(120000, 4));
  CHECK_FALSE((*cache)->HoldsComputed(kUrl, "\"e\"", 1000, "big"));
}
