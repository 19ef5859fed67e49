// The pure parts of a remote object tree (src/remote/object_listing.h,
// remote_stats.h): listings sorted without repeated names, the listing hash
// that versions a sparse frame's directory, the attributes shown for listed
// entries, and the "remote" object of .b2ndfs/stats.
#include "object_listing.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "remote_stats.h"

using namespace b2ndfs;
using namespace b2ndfs::remote;

namespace {

IndexEntry Entry(std::string name, int64_t size, std::string etag = "", bool directory = false,
                 int64_t mtime = 1700000000) {
  IndexEntry e;
  e.name = std::move(name);
  e.size = size;
  e.etag = std::move(etag);
  e.directory = directory;
  e.mtime = mtime;
  return e;
}

// `"key": value` appears in `json` (value as rendered).
bool Has(const std::string& json, const std::string& key, const std::string& value) {
  return json.find("\"" + key + "\": " + value) != std::string::npos;
}

}  // namespace

TEST_CASE("a listing is sorted by name, the first entry of a name kept", "[remote]") {
  const Listing listing = SortedListing(
      {Entry("c", 3), Entry("a", 1, "\"first\""), Entry("b", 2), Entry("a", 9, "\"second\"")});
  REQUIRE(listing->size() == 3);
  CHECK((*listing)[0].name == "a");
  CHECK((*listing)[1].name == "b");
  CHECK((*listing)[2].name == "c");
  // std::sort is not stable: either "a" may be kept, but only one.
  CHECK(((*listing)[0].etag == "\"first\"" || (*listing)[0].etag == "\"second\""));
  CHECK(SortedListing({})->empty());
}

TEST_CASE("the listing hash changes with every name, size, time, kind and ETag", "[remote]") {
  const std::vector<IndexEntry> base = {Entry("chunks.b2frame", 100, "\"e1\""),
                                        Entry("00000000.chunk", 40, "\"e2\"")};
  const uint64_t h = ListingHash(base);
  CHECK(ListingHash(base) == h);  // a function of the entries alone
  auto changed = [&](auto&& edit) {
    std::vector<IndexEntry> copy = base;
    edit(copy);
    return ListingHash(copy) != h;
  };
  CHECK(changed([](auto& v) { v[1].name = "00000001.chunk"; }));
  CHECK(changed([](auto& v) { v[1].size = 41; }));
  CHECK(changed([](auto& v) { v[1].mtime += 1; }));
  CHECK(changed([](auto& v) { v[1].directory = true; }));
  CHECK(changed([](auto& v) { v[1].etag = "\"e3\""; }));
  CHECK(changed([](auto& v) { v.pop_back(); }));
  CHECK(changed([](auto& v) { v.push_back(Entry("00000001.chunk", 40)); }));
  // Fields do not run into each other: ("ab", "c") is not ("a", "bc").
  CHECK(ListingHash({Entry("ab", 1, "c")}) != ListingHash({Entry("a", 1, "bc")}));
  CHECK(ListingHash({}) != h);
}

TEST_CASE("listed entries are read-only files and directories of the mounting user", "[remote]") {
  const struct stat file = MakeStat(false, 5000, 1700000000);
  CHECK(S_ISREG(file.st_mode));
  CHECK((file.st_mode & 07777) == 0444);
  CHECK(file.st_size == 5000);
  CHECK(file.st_blocks == (5000 + 511) / 512);
  CHECK(file.st_nlink == 1);
  CHECK(file.st_mtim.tv_sec == 1700000000);
  CHECK(file.st_atim.tv_sec == 1700000000);
  CHECK(file.st_ctim.tv_sec == 1700000000);
  CHECK(file.st_uid == ::getuid());
  CHECK(file.st_gid == ::getgid());
  const struct stat dir = MakeStat(true, 5000, 0);
  CHECK(S_ISDIR(dir.st_mode));
  CHECK((dir.st_mode & 07777) == 0555);
  CHECK(dir.st_size == 0);
  CHECK(dir.st_nlink == 2);

  // A size the listing leaves out shows as 0 until the file is asked about.
  const source::TreeEntry unsized = TreeEntryOf(Entry("x.b2nd", -1));
  CHECK(unsized.name == "x.b2nd");
  CHECK(unsized.st.st_size == 0);
  CHECK(S_ISREG(unsized.st.st_mode));
  const source::TreeEntry sub = TreeEntryOf(Entry("run1", -1, "", true, 42));
  CHECK(S_ISDIR(sub.st.st_mode));
  CHECK(sub.st.st_mtim.tv_sec == 42);
}

TEST_CASE("the remote stats object names every counter, each error kind and the disk cache",
          "[remote]") {
  HttpStats s;
  s.requests = 17;
  s.retries = 3;
  s.errors = 2;
  s.errors_by_kind[static_cast<int>(ErrorKind::kTimeout)] = 1;
  s.errors_by_kind[static_cast<int>(ErrorKind::kDown)] = 1;
  s.bytes_fetched = 123456;
  s.peak_in_flight = 9;
  s.latency.count = 20;
  s.latency.p50_us = 500;
  s.latency.p90_us = 900;
  s.latency.p99_us = 990;
  s.latency.max_us = 1234;
  // A source name is a JSON string, escaped.
  const std::string json = RemoteStatsJson("http://host/a \"b\"\tc", s, nullptr);
  CHECK(json.rfind("  \"remote\": {\n", 0) == 0);
  CHECK(json.substr(json.size() - 5) == "  },\n");
  CHECK(Has(json, "source", "\"http://host/a \\\"b\\\"\\tc\""));
  CHECK(Has(json, "requests", "17,"));
  CHECK(Has(json, "retries", "3,"));
  CHECK(Has(json, "peak_requests_in_flight", "9,"));
  CHECK(Has(json, "errors", "2,"));
  CHECK(Has(json, "bytes_fetched", "123456,"));
  for (int k = 0; k < static_cast<int>(ErrorKind::kCount); ++k) {
    const std::string name = ErrorKindName(static_cast<ErrorKind>(k));
    INFO(name);
    CHECK(json.find("\"" + name + "\": ") != std::string::npos);
  }
  CHECK(Has(json, "timeout", "1,"));
  CHECK(Has(json, "server_down", "1\n"));  // the last kind: no comma
  CHECK(Has(json, "p50", "500,"));
  CHECK(Has(json, "max", "1234\n"));
  // Without a disk cache: shown, disabled, zero.
  CHECK(Has(json, "enabled", "0,"));
  CHECK(Has(json, "capacity_bytes", "0,"));
  CHECK(Has(json, "write_errors", "0\n"));
  // Balanced braces (the caller closes the document around it).
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    if (in_string) {
      if (json[i] == '\\') {
        ++i;
      } else if (json[i] == '"') {
        in_string = false;
      }
    } else if (json[i] == '"') {
      in_string = true;
    } else if (json[i] == '{') {
      ++depth;
    } else if (json[i] == '}') {
      --depth;
      CHECK(depth >= 0);
    }
  }
  CHECK(depth == 0);
  CHECK_FALSE(in_string);
}
