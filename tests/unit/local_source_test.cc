// Local byte sources across change: a hold (ByteSource::HoldVersion) keeps a
// version readable when its container is replaced by rename or unlinked and
// the mount-wide descriptor cache moved on to the new file; without a hold
// that reads as ESTALE; an in-place rewrite reads as ESTALE either way. A
// source reads parts, it does not decode: any bytes make a container here.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/source/descriptor_cache.h"
#include "temp_dir.h"

using namespace b2ndfs;
using source::kFramePart;

namespace {

constexpr size_t kBytes = 4096;

std::vector<uint8_t> Pattern(uint8_t seed, size_t n = kBytes) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 13);
  return v;
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

// Writes over the file's bytes in place (same inode, same size).
void RewriteInPlace(const std::string& path, const std::vector<uint8_t>& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

int64_t Nanos(const timespec& t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

// Waits until the clock that stamps files has passed `path`'s ctime, so that
// what happens next is stamped later than what happened before (files
// written in one tick share a time). A condition, not a guess at a schedule.
void WaitPastCtime(const std::string& path) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  for (;;) {
    timespec now;
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
    if (Nanos(now) > Nanos(st.st_ctim)) return;
    const timespec pause{0, 1000000};
    ::nanosleep(&pause, nullptr);
  }
}

// Returns once the coarse clock that stamps file changes has passed the
// current (fine) time: a change made then is stamped after a source opened
// before this call (the miss window of a change within the open's tick).
void WaitPastNow() {
  timespec fine;
  ::clock_gettime(CLOCK_REALTIME, &fine);
  for (;;) {
    timespec now;
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
    if (Nanos(now) > Nanos(fine)) return;
    const timespec pause{0, 1000000};
    ::nanosleep(&pause, nullptr);
  }
}

std::shared_ptr<const source::ByteSource> Open(const std::string& path,
                                               source::DescriptorCache* cache) {
  auto opened = source::OpenLocal(path, cache);
  REQUIRE(opened.ok());
  return *opened;
}

Status ReadPart(const source::ByteSource& s, int64_t part, std::vector<uint8_t>* out) {
  out->assign(kBytes, 0);
  return s.Read(part, 0, kBytes, out->data());
}

}  // namespace

TEST_CASE("a held frame keeps reading its version after a rename over its path", "[source]") {
  testing::TempDir dir;
  const std::string path = (dir.path / "a.b2frame").string();
  const std::string next = (dir.path / "a.b2frame.tmp").string();
  const bool hold = GENERATE(false, true);
  CAPTURE(hold);
  source::DescriptorCache cache(8);
  WriteFile(path, Pattern(1));
  auto old = Open(path, &cache);
  std::shared_ptr<const void> token = hold ? old->HoldVersion() : nullptr;
  WriteFile(next, Pattern(2));
  REQUIRE(::rename(next.c_str(), path.c_str()) == 0);
  // The new version, through the same cache: its descriptor of the path is
  // now the new file's.
  auto fresh = Open(path, &cache);
  std::vector<uint8_t> bytes;
  REQUIRE(ReadPart(*fresh, kFramePart, &bytes).ok());
  CHECK(bytes == Pattern(2));
  const Status s = ReadPart(*old, kFramePart, &bytes);
  if (hold) {
    REQUIRE(s.ok());
    CHECK(bytes == Pattern(1));
    CHECK_FALSE(old->found_stale());
    // Released: the cache's descriptor is the new file's, which is not
    // this version.
    token.reset();
    CHECK(ReadPart(*old, kFramePart, &bytes).error_number() == ESTALE);
  } else {
    // Never the new version's bytes.
    CHECK(s.error_number() == ESTALE);
    CHECK(old->found_stale());
  }
}

TEST_CASE("a held frame stays readable when unlinked and out of the cache", "[source]") {
  testing::TempDir dir;
  const std::string path = (dir.path / "a.b2frame").string();
  const std::string other = (dir.path / "b.b2frame").string();
  source::DescriptorCache cache(1);
  WriteFile(path, Pattern(3));
  WriteFile(other, Pattern(4));
  auto old = Open(path, &cache);
  auto token = old->HoldVersion();
  auto second = old->HoldVersion();  // shares the first one's descriptors
  CHECK(second == token);
  REQUIRE(::unlink(path.c_str()) == 0);
  Open(other, &cache);  // the cache's one descriptor is now b's
  std::vector<uint8_t> bytes;
  token.reset();
  REQUIRE(ReadPart(*old, kFramePart, &bytes).ok());
  CHECK(bytes == Pattern(3));
  second.reset();
  CHECK(ReadPart(*old, kFramePart, &bytes).error_number() == ENOENT);
}

TEST_CASE("a hold does not make bytes rewritten in place right", "[source]") {
  testing::TempDir dir;
  const std::string path = (dir.path / "a.b2frame").string();
  source::DescriptorCache cache(8);
  WriteFile(path, Pattern(5));
  auto old = Open(path, &cache);
  auto token = old->HoldVersion();
  WaitPastCtime(path);
  RewriteInPlace(path, Pattern(6));
  std::vector<uint8_t> bytes;
  CHECK(ReadPart(*old, kFramePart, &bytes).error_number() == ESTALE);
  CHECK(old->found_stale());
}

TEST_CASE("a held sparse frame keeps its index and chunk files across a replacement", "[source]") {
  testing::TempDir dir;
  const std::string path = (dir.path / "s.b2frame").string();
  const bool hold = GENERATE(false, true);
  CAPTURE(hold);
  source::DescriptorCache cache(8);
  REQUIRE(::mkdir(path.c_str(), 0755) == 0);
  WriteFile(path + "/chunks.b2frame", Pattern(7));
  WriteFile(path + "/00000000.chunk", Pattern(8));
  WriteFile(path + "/00000001.chunk", Pattern(9));
  WaitPastCtime(path + "/00000001.chunk");
  auto old = Open(path, &cache);
  std::shared_ptr<const void> token = hold ? old->HoldVersion() : nullptr;
  std::vector<uint8_t> bytes;
  REQUIRE(ReadPart(*old, 0, &bytes).ok());  // opened while held
  // Replaced as a writer replaces a directory: the old one moved aside and
  // removed, the new one moved in.
  const std::string aside = path + ".old";
  const std::string next = path + ".tmp";
  REQUIRE(::mkdir(next.c_str(), 0755) == 0);
  WriteFile(next + "/chunks.b2frame", Pattern(10));
  WriteFile(next + "/00000000.chunk", Pattern(11));
  REQUIRE(::rename(path.c_str(), aside.c_str()) == 0);
  REQUIRE(::rename(next.c_str(), path.c_str()) == 0);
  auto fresh = Open(path, &cache);
  REQUIRE(ReadPart(*fresh, kFramePart, &bytes).ok());
  REQUIRE(ReadPart(*fresh, 0, &bytes).ok());
  CHECK(bytes == Pattern(11));
  std::filesystem::remove_all(aside);
  const Status frame = ReadPart(*old, kFramePart, &bytes);
  if (hold) {
    REQUIRE(frame.ok());
    CHECK(bytes == Pattern(7));
    REQUIRE(ReadPart(*old, 0, &bytes).ok());
    CHECK(bytes == Pattern(8));
    CHECK_FALSE(old->found_stale());
  } else {
    CHECK(frame.error_number() == ESTALE);
    CHECK(ReadPart(*old, 0, &bytes).error_number() == ESTALE);
  }
}

TEST_CASE("a chunk file rewritten after its sparse frame was opened ends the generation",
          "[source]") {
  testing::TempDir dir;
  const std::string path = (dir.path / "s.b2frame").string();
  source::DescriptorCache cache(8);
  REQUIRE(::mkdir(path.c_str(), 0755) == 0);
  // As writers do: chunk files, then the index that names them. Opened at
  // once (the same clock tick, often): the chunk files are this version's.
  WriteFile(path + "/00000000.chunk", Pattern(20));
  WriteFile(path + "/00000001.chunk", Pattern(21));
  WriteFile(path + "/00000002.chunk", Pattern(22));
  WriteFile(path + "/chunks.b2frame", Pattern(23));
  auto opened = Open(path, &cache);
  std::vector<uint8_t> bytes;
  REQUIRE(ReadPart(*opened, 0, &bytes).ok());
  CHECK(bytes == Pattern(20));
  // Chunk file 1, never read yet, rewritten in place (same size and inode).
  WaitPastNow();
  RewriteInPlace(path + "/00000001.chunk", Pattern(31));
  CHECK(ReadPart(*opened, 1, &bytes).error_number() == ESTALE);
  CHECK(bytes != Pattern(31));
  CHECK(opened->found_stale());
  // The unchanged ones still read.
  REQUIRE(ReadPart(*opened, 2, &bytes).ok());
  CHECK(bytes == Pattern(22));
  REQUIRE(ReadPart(*opened, 0, &bytes).ok());
  CHECK(bytes == Pattern(20));
  // The next generation reads the new chunk file as its own.
  WaitPastCtime(path + "/00000001.chunk");
  auto next = Open(path, &cache);
  REQUIRE(ReadPart(*next, 1, &bytes).ok());
  CHECK(bytes == Pattern(31));
}

TEST_CASE("holds taken and released while other threads read", "[source]") {
  testing::TempDir dir;
  const std::string path = (dir.path / "s.b2frame").string();
  source::DescriptorCache cache(4);
  REQUIRE(::mkdir(path.c_str(), 0755) == 0);
  constexpr int kChunks = 6;
  for (int c = 0; c < kChunks; ++c) {
    char name[32];
    std::snprintf(name, sizeof name, "/%08X.chunk", c);
    WriteFile(path + name, Pattern(static_cast<uint8_t>(40 + c)));
  }
  WriteFile(path + "/chunks.b2frame", Pattern(39));
  auto opened = Open(path, &cache);
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      std::vector<uint8_t> bytes;
      for (int i = 0; i < 300; ++i) {
        const int64_t part = (i + t) % (kChunks + 1) - 1;  // the frame too
        if (!ReadPart(*opened, part, &bytes).ok() ||
            bytes != Pattern(static_cast<uint8_t>(40 + part))) {
          ++wrong;
        }
        if (i % 7 == t) opened->HoldVersion();  // taken and released at once
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    auto a = opened->HoldVersion();
    auto b = opened->HoldVersion();
    CHECK(a == b);
  }
  for (auto& r : readers) r.join();
  CHECK(wrong == 0);
  CHECK_FALSE(opened->found_stale());
}
