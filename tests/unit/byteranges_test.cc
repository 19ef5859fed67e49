// ByterangesParser: nginx-shaped multipart/byteranges answers land exact
// bytes however the body is split; hostile answers (missing or wrong
// boundary, parts out of order or twice, a part joining several ranges, a
// part covering a range only partly, another total size, garbage after the
// end) are refused or handled as the header says.
#include "b2ndfs/remote/byteranges.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

using b2ndfs::remote::ByterangesBoundary;
using b2ndfs::remote::ByterangesParser;

namespace {

constexpr int64_t kTotal = 100000;

char ByteAt(int64_t i) { return static_cast<char>('a' + (i * 7 + i / 13) % 26); }

std::string Part(const std::string& boundary, int64_t first, int64_t last, int64_t total = kTotal) {
  std::string s =
      "\r\n--" + boundary + "\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes " +
      std::to_string(first) + "-" + std::to_string(last) + "/" + std::to_string(total) + "\r\n\r\n";
  for (int64_t i = first; i <= last; ++i) s += ByteAt(i);
  return s;
}

std::string End(const std::string& boundary) { return "\r\n--" + boundary + "--\r\n"; }

struct Ranges {
  std::vector<std::pair<int64_t, int64_t>> asked;
  std::vector<std::vector<uint8_t>> out;
  ByterangesParser Parser(int64_t total = kTotal) {
    out.clear();
    std::vector<ByterangesParser::Target> targets;
    for (auto [a, b] : asked) out.emplace_back(static_cast<size_t>(b - a + 1), 0);
    for (size_t i = 0; i < asked.size(); ++i) {
      targets.push_back({asked[i].first, asked[i].second, out[i].data()});
    }
    return ByterangesParser(targets, total);
  }
  bool Exact() const {
    for (size_t i = 0; i < asked.size(); ++i) {
      for (int64_t k = asked[i].first; k <= asked[i].second; ++k) {
        if (out[i][static_cast<size_t>(k - asked[i].first)] != static_cast<uint8_t>(ByteAt(k))) {
          return false;
        }
      }
    }
    return true;
  }
};

// Feeds `body` in pieces of random sizes (1 to `max_piece` bytes).
bool FeedSplit(ByterangesParser& p, const std::string& body, size_t max_piece, uint64_t seed) {
  std::mt19937_64 rng(seed);
  size_t at = 0;
  while (at < body.size()) {
    const size_t n =
        std::min(body.size() - at, std::uniform_int_distribution<size_t>(1, max_piece)(rng));
    if (!p.Feed(body.data() + at, n)) return false;
    at += n;
  }
  return true;
}

}  // namespace

TEST_CASE("ByterangesBoundary", "[byteranges]") {
  CHECK(ByterangesBoundary("multipart/byteranges; boundary=00000000001") == "00000000001");
  CHECK(ByterangesBoundary("Multipart/ByteRanges;boundary=\"a b\"") == "a b");
  CHECK(ByterangesBoundary("multipart/byteranges; boundary=x; charset=y") == "x");
  CHECK(!ByterangesBoundary("application/octet-stream"));
  CHECK(!ByterangesBoundary("multipart/byteranges"));
  CHECK(!ByterangesBoundary("multipart/byteranges; boundary="));
  CHECK(!ByterangesBoundary("multipart/byteranges; boundary=" + std::string(71, 'x')));
  CHECK(!ByterangesBoundary("multipart/mixed; boundary=x"));
}

TEST_CASE("an nginx-shaped answer lands exact bytes, however it is split", "[byteranges]") {
  Ranges r;
  r.asked = {{0, 99}, {1000, 1999}, {5000, 5000}, {70000, 79999}};
  std::string body;
  for (auto [a, b] : r.asked) body += Part("00000000042", a, b);
  body += End("00000000042");
  for (size_t max_piece : {size_t{1}, size_t{3}, size_t{17}, size_t{4096}, body.size()}) {
    CAPTURE(max_piece);
    ByterangesParser p = r.Parser();
    p.StartMultipart("00000000042");
    REQUIRE(FeedSplit(p, body, max_piece, max_piece));
    REQUIRE(p.Finish());
    CHECK(r.Exact());
  }
}

TEST_CASE("parts in another order, and one part joining ranges", "[byteranges]") {
  Ranges r;
  r.asked = {{0, 99}, {200, 299}, {400, 499}};
  SECTION("out of order") {
    ByterangesParser p = r.Parser();
    p.StartMultipart("b");
    const std::string body =
        Part("b", 400, 499) + Part("b", 0, 99) + Part("b", 200, 299) + End("b");
    REQUIRE(p.Feed(body.data(), body.size()));
    REQUIRE(p.Finish());
    CHECK(r.Exact());
  }
  SECTION("a server coalescing ranges into one multipart part") {
    ByterangesParser p = r.Parser();
    p.StartMultipart("b");
    const std::string body = Part("b", 0, 299) + Part("b", 400, 499) + End("b");
    REQUIRE(p.Feed(body.data(), body.size()));
    REQUIRE(p.Finish());
    CHECK(r.Exact());
  }
  SECTION("a single 206 part covering every range") {
    ByterangesParser p = r.Parser();
    REQUIRE(p.StartSinglePart("bytes 0-499/100000"));
    std::string body;
    for (int64_t i = 0; i <= 499; ++i) body += ByteAt(i);
    REQUIRE(FeedSplit(p, body, 7, 1));
    REQUIRE(p.Finish());
    CHECK(r.Exact());
  }
  SECTION("a single 206 part missing a range") {
    ByterangesParser p = r.Parser();
    REQUIRE(p.StartSinglePart("bytes 0-299/100000"));
    std::string body;
    for (int64_t i = 0; i <= 299; ++i) body += ByteAt(i);
    REQUIRE(p.Feed(body.data(), body.size()));
    CHECK(!p.Finish());
    CHECK(p.error().find("no part for bytes 400-499") != std::string::npos);
  }
}

TEST_CASE("each range is reported whole as soon as its part ends", "[byteranges]") {
  Ranges r;
  r.asked = {{0, 99}, {200, 299}, {400, 499}, {600, 699}};
  ByterangesParser p = r.Parser();
  p.StartMultipart("b");
  // Parts out of order, one joining two ranges; fed a byte at a time.
  const std::string parts[] = {Part("b", 400, 499), Part("b", 0, 299), Part("b", 600, 699)};
  const std::vector<std::vector<size_t>> expected = {{2}, {0, 1}, {3}};
  std::vector<size_t> seen;
  for (size_t k = 0; k < 3; ++k) {
    // Up to the part's last byte nothing new is whole; with it, its ranges.
    for (size_t i = 0; i + 1 < parts[k].size(); ++i) {
      REQUIRE(p.Feed(parts[k].data() + i, 1));
      p.TakeCompleted(&seen);
      REQUIRE(seen.empty());
    }
    REQUIRE(p.Feed(parts[k].data() + parts[k].size() - 1, 1));
    p.TakeCompleted(&seen);
    CHECK(seen == expected[k]);
    seen.clear();
  }
  const std::string end = End("b");
  REQUIRE(p.Feed(end.data(), end.size()));
  p.TakeCompleted(&seen);
  CHECK(seen.empty());
  REQUIRE(p.Finish());
  CHECK(r.Exact());
}

TEST_CASE("the parts before a refused one stay reported", "[byteranges]") {
  Ranges r;
  r.asked = {{0, 99}, {200, 299}};
  ByterangesParser p = r.Parser();
  p.StartMultipart("b");
  const std::string body = Part("b", 0, 99) + Part("b", 250, 299);  // covers 200-299 only partly
  CHECK(!p.Feed(body.data(), body.size()));
  std::vector<size_t> seen;
  p.TakeCompleted(&seen);
  CHECK(seen == std::vector<size_t>{0});
  CHECK(!p.Finish());
}

TEST_CASE("hostile answers are refused", "[byteranges]") {
  Ranges r;
  r.asked = {{0, 99}, {200, 299}};
  auto refuse = [&](const std::string& body, const std::string& why, bool fed_ok = false) {
    ByterangesParser p = r.Parser();
    p.StartMultipart("b");
    const bool fed = p.Feed(body.data(), body.size());
    CHECK(fed == fed_ok);
    CHECK(!p.Finish());
    CAPTURE(p.error());
    CHECK(p.error().find(why) != std::string::npos);
    return p.changed();
  };
  refuse(std::string(9000, 'x'), "no boundary");
  refuse(Part("other", 0, 99) + End("other"), "no boundary", true);
  refuse(Part("b", 0, 99) + Part("b", 0, 99) + End("b"), "came twice");
  refuse(Part("b", 0, 49) + End("b"), "only some");
  refuse(Part("b", 1000, 1099) + End("b"), "no range asked for");
  refuse(Part("b", 0, 99) + End("b"), "no part for bytes 200-299", true);
  refuse(Part("b", 0, 99) + "\r\n--c\r\n", "not followed by the boundary");
  refuse(Part("b", 0, 99) + Part("b", 200, 299), "ended inside", true);
  refuse("\r\n--b\r\nContent-Type: x\r\n\r\n" + std::string(100, 'x'), "without Content-Range");
  refuse("\r\n--b\r\nContent-Range: bytes 0-99/100000\r\nContent-Range: bytes 0-99/100000\r\n\r\n",
         "two Content-Range");
  refuse("\r\n--b\r\nContent-Range: bytes zero/100000\r\n\r\n", "malformed");
  refuse("\r\n--b\r\n" + std::string(9000, 'h'), "too long");
  refuse(Part("b", 0, 99) + Part("b", 200, 299) + End("b") + std::string(2000, 'x'),
         "after the closing");
  CHECK(refuse(Part("b", 0, 99, kTotal + 1), "another total size"));
  // A single part with more bytes than its Content-Range.
  ByterangesParser p = r.Parser();
  REQUIRE(p.StartSinglePart("bytes 0-299/100000"));
  const std::string body(301, 'x');
  CHECK(!p.Feed(body.data(), body.size()));
  CHECK(!p.StartSinglePart("bytes 5-1/100000"));
}
