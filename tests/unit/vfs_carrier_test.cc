// Carrier evaluation without FUSE: a saved expression (a python-blosc2
// LazyExpr) over an int32 operand, read through vfs::Filesystem from a
// local directory as the mount reads it: data holds the expression computed
// as NumPy computes it (integers wrap), chunks and slices the same values;
// an operand that changes on disk gives new values to the next open, while
// an open file reads the values it opened; an expression the grammar refuses
// and a missing operand leave the carrier without data, meta.json saying
// why (README.md, "Variable-length data, carriers and caches"). An operand
// is read through its generation, so a carrier shares a direct read's cached
// blocks of it; a cycle of carriers is refused, also when its two carriers
// are opened on two threads at once.
#include <fcntl.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"
#include "carrier_writer.h"
#include "temp_dir.h"
#include "test_store.h"
#include "vfs_walk.h"

namespace b2ndfs {
namespace {

namespace fs = std::filesystem;

struct Mount {
  explicit Mount(const std::string& root) : store(64 << 20, 4, 2) {
    SetLogLevel(LogLevel::kError);
    vfs::Options options;
    options.source = root;
    filesystem = std::make_unique<vfs::Filesystem>(options, &store.ctx);
  }
  Result<vfs::Attr> Walk(const std::string& rel) { return testing::WalkPath(*filesystem, rel); }
  Result<vfs::FileHandle> Open(const std::string& rel) {
    B2NDFS_ASSIGN_OR_RETURN(vfs::Attr attr, Walk(rel));
    return filesystem->Open(attr.st.st_ino, O_RDONLY);
  }
  Result<std::vector<uint8_t>> Read(const vfs::FileHandle& handle, size_t size) {
    std::vector<uint8_t> out(size);
    B2NDFS_ASSIGN_OR_RETURN(const size_t n, filesystem->Read(handle, 0, out.size(), out.data()));
    out.resize(n);
    return out;
  }
  std::vector<int32_t> Int32s(const std::string& rel) {
    auto attr = Walk(rel);
    INFO(rel << ": " << (attr.ok() ? "" : attr.status().message()));
    REQUIRE(attr.ok());
    auto handle = Open(rel);
    REQUIRE(handle.ok());
    auto bytes = Read(*handle, static_cast<size_t>(attr->st.st_size));
    REQUIRE(bytes.ok());
    std::vector<int32_t> values(bytes->size() / 4);
    std::memcpy(values.data(), bytes->data(), values.size() * 4);
    return values;
  }
  std::string Text(const std::string& rel) {
    auto attr = Walk(rel);
    REQUIRE(attr.ok());
    auto handle = Open(rel);
    REQUIRE(handle.ok());
    auto bytes = Read(*handle, static_cast<size_t>(attr->st.st_size));
    REQUIRE(bytes.ok());
    return std::string(bytes->begin(), bytes->end());
  }
  testing::TestStore store;
  std::unique_ptr<vfs::Filesystem> filesystem;
};

const std::vector<int64_t> kShape{30, 20};

std::vector<int32_t> Values(int32_t seed) {
  std::vector<int32_t> v(600);
  for (size_t i = 0; i < v.size(); ++i) v[i] = seed + static_cast<int32_t>(i * 37 % 1001) - 500;
  // Where int32 arithmetic wraps.
  v[7] = INT32_MAX;
  v[8] = INT32_MIN;
  return v;
}

// NumPy's int32 results (two's complement wrap).
int32_t Wrap(int64_t x) { return static_cast<int32_t>(static_cast<uint32_t>(x)); }

TEST_CASE("carriers: data, chunks and slices hold the expression NumPy computes",
          "[vfs][carrier]") {
  testing::TempDir dir("b2ndfs_carrier");
  const std::vector<int32_t> x = Values(3);
  testing::WriteInt32((dir.path / "x.b2nd").string(), kShape, {10, 20}, {5, 20}, x);
  testing::WriteCarrier((dir.path / "times.b2nd").string(), kShape, {10, 20}, {5, 20}, "o0 * 3 - 7",
                        "x.b2nd");
  testing::WriteCarrier((dir.path / "most.b2nd").string(), kShape, {10, 10}, {5, 5},
                        "maximum(o0, 100)", "x.b2nd");
  testing::WriteCarrier((dir.path / "neg.b2nd").string(), kShape, {30, 20}, {30, 20}, "-o0",
                        "x.b2nd");
  Mount m(dir.path.string());
  std::vector<int32_t> times, most, neg;
  for (int32_t v : x) {
    times.push_back(Wrap(int64_t{v} * 3 - 7));
    most.push_back(std::max(v, 100));
    neg.push_back(Wrap(-int64_t{v}));
  }
  CHECK(m.Int32s("times.b2nd/data") == times);
  CHECK(m.Int32s("most.b2nd/data") == most);
  CHECK(m.Int32s("neg.b2nd/data") == neg);
  // Row 12 of 20 items: slices/0/12; chunk (1, 0) of 10 x 20: rows 10..19.
  const std::vector<int32_t> row(times.begin() + 12 * 20, times.begin() + 13 * 20);
  CHECK(m.Int32s("times.b2nd/slices/0/12") == row);
  const std::vector<int32_t> chunk(times.begin() + 10 * 20, times.begin() + 20 * 20);
  CHECK(m.Int32s("times.b2nd/chunks/1.0") == chunk);
}

TEST_CASE("carriers: an operand replaced on disk gives the next open new values",
          "[vfs][carrier]") {
  testing::TempDir dir("b2ndfs_carrier");
  const std::vector<int32_t> x1 = Values(3), x2 = Values(1000);
  testing::WriteInt32((dir.path / "x.b2nd").string(), kShape, {10, 20}, {5, 20}, x1);
  testing::WriteCarrier((dir.path / "c.b2nd").string(), kShape, {10, 20}, {5, 20}, "o0 + 1",
                        "x.b2nd");
  Mount m(dir.path.string());
  auto plus_one = [](const std::vector<int32_t>& x) {
    std::vector<int32_t> out;
    for (int32_t v : x) out.push_back(Wrap(int64_t{v} + 1));
    return out;
  };
  auto old = m.Open("c.b2nd/data");
  REQUIRE(old.ok());
  CHECK(m.Int32s("c.b2nd/data") == plus_one(x1));
  // Replaced as tools do: written beside it, renamed over it.
  testing::WriteInt32((dir.path / "x.tmp").string(), kShape, {10, 20}, {5, 20}, x2);
  fs::rename(dir.path / "x.tmp", dir.path / "x.b2nd");
  CHECK(m.Int32s("c.b2nd/data") == plus_one(x2));
  auto held = m.Read(*old, 600 * 4);
  REQUIRE(held.ok());
  std::vector<int32_t> held_values(600);
  std::memcpy(held_values.data(), held->data(), held->size());
  CHECK(held_values == plus_one(x1));
}

TEST_CASE("carriers: a refused expression or a missing operand: no data, meta.json says why",
          "[vfs][carrier]") {
  testing::TempDir dir("b2ndfs_carrier");
  testing::WriteInt32((dir.path / "x.b2nd").string(), kShape, {10, 20}, {5, 20}, Values(3));
  testing::WriteCarrier((dir.path / "mod.b2nd").string(), kShape, {10, 20}, {5, 20}, "o0 % 2",
                        "x.b2nd");
  testing::WriteCarrier((dir.path / "lost.b2nd").string(), kShape, {10, 20}, {5, 20}, "o0 + 1",
                        "gone.b2nd");
  Mount m(dir.path.string());
  for (const char* carrier : {"mod.b2nd", "lost.b2nd"}) {
    INFO(carrier);
    CHECK(m.Walk(std::string(carrier) + "/data").status().error_number() == ENOENT);
    const std::string meta = m.Text(std::string(carrier) + "/meta.json");
    CHECK(meta.find("\"evaluation\"") != std::string::npos);
  }
  CHECK(m.Text("mod.b2nd/meta.json").find("%") != std::string::npos);
  CHECK(m.Text("lost.b2nd/meta.json").find("gone.b2nd") != std::string::npos);
}

// Reads `rel` whole; "" with the error's text on failure (Catch2's
// assertions are for the main thread only).
std::string ReadText(vfs::Filesystem& filesystem, const std::string& rel) {
  auto attr = testing::WalkPath(filesystem, rel);
  if (!attr.ok()) return "error: " + attr.status().message();
  auto handle = filesystem.Open(attr->st.st_ino, O_RDONLY);
  if (!handle.ok()) return "error: " + handle.status().message();
  std::string out(static_cast<size_t>(attr->st.st_size), '\0');
  auto n = filesystem.Read(*handle, 0, out.size(), reinterpret_cast<uint8_t*>(out.data()));
  if (!n.ok()) return "error: " + n.status().message();
  out.resize(*n);
  return out;
}

TEST_CASE("carriers: an operand's cached blocks are shared with a direct read of it",
          "[vfs][carrier]") {
  testing::TempDir dir("b2ndfs_carrier");
  // 30 x 20 in blocks of 5 x 20: six blocks.
  testing::WriteInt32((dir.path / "x.b2nd").string(), kShape, {10, 20}, {5, 20}, Values(3));
  testing::WriteCarrier((dir.path / "c.b2nd").string(), kShape, {10, 20}, {5, 20}, "o0 + 1",
                        "x.b2nd");
  constexpr uint64_t kOperandBytes = 600 * 4;
  // What the carrier's read decompresses and computes: alone, then after a
  // direct read of its operand.
  uint64_t loaded_alone = 0, loaded_after_direct = 0;
  {
    Mount m(dir.path.string());
    const uint64_t before = m.store.cache.stats().bytes_loaded;
    CHECK(m.Int32s("c.b2nd/data").size() == 600);
    loaded_alone = m.store.cache.stats().bytes_loaded - before;
  }
  {
    Mount m(dir.path.string());
    CHECK(m.Int32s("x.b2nd/data") == Values(3));
    const uint64_t before = m.store.cache.stats().bytes_loaded;
    CHECK(m.Int32s("c.b2nd/data").size() == 600);
    loaded_after_direct = m.store.cache.stats().bytes_loaded - before;
  }
  // Every block of x the carrier reads is found where the direct read left
  // it: only the carrier's own blocks are made.
  INFO(loaded_alone << " bytes loaded alone, " << loaded_after_direct << " after x was read");
  CHECK(loaded_after_direct + kOperandBytes <= loaded_alone);
}

TEST_CASE("carriers: a cycle of carriers is refused, also opened on two threads at once",
          "[vfs][carrier]") {
  testing::TempDir dir("b2ndfs_carrier");
  testing::WriteCarrier((dir.path / "a.b2nd").string(), kShape, {10, 20}, {5, 20}, "o0 + 1",
                        "b.b2nd");
  testing::WriteCarrier((dir.path / "b.b2nd").string(), kShape, {10, 20}, {5, 20}, "o0 * 2",
                        "a.b2nd");
  const std::string cycle_a = "a cycle of carriers (a.b2nd is being evaluated already)";
  const std::string cycle_b = "a cycle of carriers (b.b2nd is being evaluated already)";
  {
    Mount m(dir.path.string());
    // One after the other: each names itself as where the cycle closes.
    CHECK(ReadText(*m.filesystem, "a.b2nd/meta.json").find(cycle_a) != std::string::npos);
    CHECK(ReadText(*m.filesystem, "b.b2nd/meta.json").find(cycle_b) != std::string::npos);
    CHECK(m.Walk("a.b2nd/data").status().error_number() == ENOENT);
    CHECK(m.Walk("b.b2nd/data").status().error_number() == ENOENT);
  }
  // Two threads, each opening one of them, many times: neither waits for
  // the other (this test hangs, under ctest's timeout, if one does).
  for (int round = 0; round < 20; ++round) {
    Mount m(dir.path.string());
    std::string meta_a, meta_b;
    std::thread other([&] { meta_b = ReadText(*m.filesystem, "b.b2nd/meta.json"); });
    meta_a = ReadText(*m.filesystem, "a.b2nd/meta.json");
    other.join();
    INFO(meta_a << "\n" << meta_b);
    CHECK(meta_a.find(cycle_a) != std::string::npos);
    CHECK(meta_b.find(cycle_b) != std::string::npos);
  }
}

}  // namespace
}  // namespace b2ndfs
