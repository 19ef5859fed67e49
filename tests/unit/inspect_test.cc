// b2ndfs-inspect's pieces (src/tools/inspect.h) without the program: the
// small readers of the JSON b2ndfs writes, the message trimming, and the
// driver over vfs::Filesystem (walk, read, list, meta.json, check) over a
// directory of containers c-blosc2 writes here, one good and one broken.
#include "inspect.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "b2nd_writer.h"
#include "temp_dir.h"

using namespace b2ndfs;
using namespace b2ndfs::inspect;

namespace {

constexpr int64_t kRows = 12, kCols = 10;

// SOURCE/sub/a.b2nd: a 12x10 int32 array (0, 1, 2, ...), 2x2 chunks of
// 6x5 items, blocks of 3x5; returns its C-order bytes.
std::vector<int32_t> WriteArray(const std::string& path) {
  std::vector<int32_t> values(kRows * kCols);
  std::iota(values.begin(), values.end(), 0);
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = sizeof(int32_t);
  cparams.nthreads = 1;
  const int64_t shape[] = {kRows, kCols};
  const int32_t chunks[] = {6, 5};
  const int32_t blocks[] = {3, 5};
  b2nd_array_t* array =
      testing::WriteContiguous(path, cparams, 2, shape, chunks, blocks, "<i4", values.data(),
                               static_cast<int64_t>(values.size() * sizeof(int32_t)));
  b2nd_free(array);
  return values;
}

void WriteGarbage(const std::string& path) {
  std::ofstream(path, std::ios::binary) << std::string(3000, 'x');
}

std::string Bytes(const std::vector<int32_t>& values, size_t first, size_t count) {
  return std::string(reinterpret_cast<const char*>(values.data()) + first, count);
}

}  // namespace

TEST_CASE("StringField and ScalarField read the first key at any depth", "[inspect]") {
  const std::string json =
      "{\n  \"format\": \"b2nd\",\n  \"shape\": [12, 10],\n  \"nested\": {\"ndim\": 2},\n"
      "  \"note\": \"a \\\"quoted\\\" word\",\n  \"cratio\": null\n}\n";
  CHECK(StringField(json, "format") == "b2nd");
  CHECK(StringField(json, "note") == "a \"quoted\" word");
  CHECK(ScalarField(json, "ndim") == "2");
  CHECK(ScalarField(json, "cratio") == "null");
  CHECK(ScalarField(json, "shape") == "[12");  // a scalar reader: stops at the first comma
  // Absent keys, and a string asked of a number, are empty.
  CHECK(StringField(json, "dtype").empty());
  CHECK(ScalarField(json, "dtype").empty());
  CHECK(StringField(json, "ndim").empty());
  // A value cut off at the end of the text.
  CHECK(StringField("{\"format\": \"b2", "format") == "b2");
  CHECK(StringField("{\"format\": ", "format").empty());
}

TEST_CASE("ErrorOf is the reason of a meta.json that is only an error", "[inspect]") {
  CHECK(ErrorOf("{\n  \"error\": \"not a Blosc2 frame (bad magic)\"\n}\n") ==
        "not a Blosc2 frame (bad magic)");
  CHECK(ErrorOf("  {\"error\": \"\"}") == "cannot be decoded");
  // A description that merely has an "error" key further in is no error.
  CHECK(ErrorOf("{\n  \"format\": \"b2nd\",\n  \"error\": \"x\"\n}").empty());
  CHECK(ErrorOf("").empty());
  CHECK(ErrorOf("[\"error\"]").empty());
}

TEST_CASE("Unprefixed drops the file's own path from a message, and only that", "[inspect]") {
  CHECK(Unprefixed("sub/a.b2nd: chunk 3: bad", "sub/a.b2nd") == "chunk 3: bad");
  CHECK(Unprefixed("other.b2nd: chunk 3: bad", "sub/a.b2nd") == "other.b2nd: chunk 3: bad");
  CHECK(Unprefixed("sub/a.b2nd", "sub/a.b2nd") == "sub/a.b2nd");
  CHECK(Unprefixed("", "x") == "");
}

TEST_CASE("inspect walks, lists, reads and describes a source as the mount shows it", "[inspect]") {
  testing::TempDir dir("b2ndfs_inspect");
  std::filesystem::create_directories(dir.path / "sub");
  const std::vector<int32_t> values = WriteArray((dir.path / "sub" / "a.b2nd").string());
  std::ofstream(dir.path / "notes.txt") << "plain\n";
  Inspected inspected(dir.path.string());
  vfs::Filesystem& fs = *inspected.fs;

  SECTION("a walk reaches a container's files; a missing part is ENOENT") {
    auto data = Walk(fs, "sub/a.b2nd/data");
    REQUIRE(data.ok());
    auto again = Walk(fs, "/sub//a.b2nd/data");  // empty parts are skipped
    REQUIRE(again.ok());
    CHECK(*again == *data);
    auto root = Walk(fs, "");
    REQUIRE(root.ok());
    CHECK(*root == vfs::kRootIno);
    auto missing = Walk(fs, "sub/a.b2nd/datax");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.status().error_number() == ENOENT);
  }

  SECTION("lists show directories and files as readdir does") {
    auto root = List(fs, vfs::kRootIno);
    REQUIRE(root.ok());
    bool sub = false, notes = false;
    for (const auto& e : *root) {
      if (e.name == "sub") sub = S_ISDIR(e.type);
      if (e.name == "notes.txt") notes = !S_ISDIR(e.type);
    }
    CHECK(sub);
    CHECK(notes);
    auto container = Walk(fs, "sub/a.b2nd");
    REQUIRE(container.ok());
    auto files = List(fs, *container);
    REQUIRE(files.ok());
    std::vector<std::string> names;
    for (const auto& e : *files) names.push_back(e.name);
    CHECK(std::find(names.begin(), names.end(), "meta.json") != names.end());
    CHECK(std::find(names.begin(), names.end(), "data") != names.end());
  }

  SECTION("reads give c-blosc2's bytes, whole or a range, in pieces to the sink") {
    auto data = Walk(fs, "sub/a.b2nd/data");
    REQUIRE(data.ok());
    auto text = ReadText(fs, *data);
    REQUIRE(text.ok());
    CHECK(*text == Bytes(values, 0, values.size() * sizeof(int32_t)));
    std::string part;
    size_t calls = 0;
    REQUIRE(ReadFile(fs, *data, 37, 101, [&](const uint8_t* p, size_t n) {
              part.append(reinterpret_cast<const char*>(p), n);
              ++calls;
              return Status::Ok();
            }).ok());
    CHECK(part == Bytes(values, 37, 101));
    CHECK(calls >= 1);
    // To the end of the file when no length is given; past it, nothing.
    std::string tail;
    const int64_t size = static_cast<int64_t>(values.size() * sizeof(int32_t));
    REQUIRE(ReadFile(fs, *data, size - 8, -1, [&](const uint8_t* p, size_t n) {
              tail.append(reinterpret_cast<const char*>(p), n);
              return Status::Ok();
            }).ok());
    CHECK(tail == Bytes(values, static_cast<size_t>(size - 8), 8));
    // A sink's error ends the read with it.
    Status stopped = ReadFile(
        fs, *data, 0, -1, [](const uint8_t*, size_t) { return Status(EPIPE, "stdout closed"); });
    CHECK(stopped.error_number() == EPIPE);
  }

  SECTION("a directory is not read; its meta.json describes the container") {
    auto container = Walk(fs, "sub/a.b2nd");
    REQUIRE(container.ok());
    Status read =
        ReadFile(fs, *container, 0, -1, [](const uint8_t*, size_t) { return Status::Ok(); });
    CHECK(read.error_number() == EISDIR);
    auto meta = MetaJson(fs, "sub/a.b2nd");
    REQUIRE(meta.ok());
    CHECK(StringField(*meta, "format") == "b2nd");
    CHECK(StringField(*meta, "dtype") == "<i4");
    CHECK(ScalarField(*meta, "ndim") == "2");
    CHECK(ErrorOf(*meta).empty());
    auto none = MetaJson(fs, "sub");
    REQUIRE_FALSE(none.ok());
    CHECK(none.status().error_number() == ENOENT);
  }
}

TEST_CASE("a broken container's meta.json is its error, and check fails on it", "[inspect]") {
  testing::TempDir dir("b2ndfs_inspect");
  WriteArray((dir.path / "a.b2nd").string());
  // Check of a directory of good containers: exit status 0.
  CHECK(Check(dir.path.string(), false) == 0);
  CHECK(Check(dir.path.string(), true) == 0);

  WriteGarbage((dir.path / "broken.b2nd").string());
  {
    Inspected inspected(dir.path.string());
    auto meta = MetaJson(*inspected.fs, "broken.b2nd");
    REQUIRE(meta.ok());
    CHECK(ErrorOf(*meta).find("not a Blosc2 frame") != std::string::npos);
    // Its directory holds meta.json alone: no data to read.
    auto data = Walk(*inspected.fs, "broken.b2nd/data");
    REQUIRE_FALSE(data.ok());
    INFO(data.status().message());
    CHECK(data.status().error_number() == ENOENT);
    auto listed = Walk(*inspected.fs, "broken.b2nd");
    REQUIRE(listed.ok());
    auto files = List(*inspected.fs, *listed);
    REQUIRE(files.ok());
    REQUIRE(files->size() == 1);
    CHECK(files->front().name == "meta.json");
  }
  CHECK(Check(dir.path.string(), false) == 1);
  CHECK(Check(dir.path.string(), true) == 1);
  // One container alone as SOURCE.
  CHECK(Check((dir.path / "a.b2nd").string(), false) == 0);
  CHECK(Check((dir.path / "broken.b2nd").string(), false) == 1);
}
