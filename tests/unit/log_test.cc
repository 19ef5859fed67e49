// Unit tests of util/log: LogOnce reports a key once, forgets on request,
// and remembers a bounded number of keys, least recently seen dropped first.
#include "b2ndfs/util/log.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "temp_dir.h"

namespace b2ndfs {
namespace {

// Messages below the level are not printed, but LogOnce still remembers
// their keys: the tests stay quiet.
struct QuietLog {
  QuietLog() { SetLogLevel(LogLevel::kError); }
  ~QuietLog() { SetLogLevel(LogLevel::kInfo); }
};

TEST_CASE("LogOnce reports a key once until it is forgotten") {
  QuietLog quiet;
  CHECK(LogOnce("once:a", LogLevel::kDebug, "a"));
  CHECK_FALSE(LogOnce("once:a", LogLevel::kDebug, "a again"));
  CHECK(LogOnce("once:b", LogLevel::kDebug, "b"));
  ForgetLogOnce("once:a");
  CHECK(LogOnce("once:a", LogLevel::kDebug, "a after forget"));
  CHECK_FALSE(LogOnce("once:b", LogLevel::kDebug, "b again"));
}

TEST_CASE("LogOnce remembers at most kLogOnceCapacity keys") {
  QuietLog quiet;
  // A corrupt array that fails with a new message on every read.
  for (size_t i = 0; i < 3 * kLogOnceCapacity; ++i) {
    const std::string key = "read:/data/broken.b2nd:chunk " + std::to_string(i) + " is bad";
    REQUIRE(LogOnce(key, LogLevel::kDebug, key));
    REQUIRE(LogOnceKeyCount() <= kLogOnceCapacity);
  }
  CHECK(LogOnceKeyCount() == kLogOnceCapacity);
  // Long keys cost no more than short ones: only their hash is kept.
  const std::string huge(1 << 20, 'x');
  CHECK(LogOnce(huge, LogLevel::kDebug, "huge"));
  CHECK_FALSE(LogOnce(huge, LogLevel::kDebug, "huge"));
  CHECK(LogOnceKeyCount() == kLogOnceCapacity);
}

TEST_CASE("the least recently seen key is forgotten first") {
  QuietLog quiet;
  // Fill the set with keys of this test only.
  for (size_t i = 0; i < kLogOnceCapacity; ++i) {
    (void)LogOnce("lru:" + std::to_string(i), LogLevel::kDebug, "");
  }
  REQUIRE(LogOnceKeyCount() == kLogOnceCapacity);
  // lru:0 is the oldest; seeing it again makes lru:1 the oldest.
  CHECK_FALSE(LogOnce("lru:0", LogLevel::kDebug, ""));
  CHECK(LogOnce("lru:new", LogLevel::kDebug, ""));  // evicts lru:1
  CHECK_FALSE(LogOnce("lru:0", LogLevel::kDebug, ""));
  CHECK_FALSE(LogOnce("lru:2", LogLevel::kDebug, ""));
  CHECK(LogOnce("lru:1", LogLevel::kDebug, ""));  // forgotten: reported again
  CHECK(LogOnceKeyCount() == kLogOnceCapacity);
}

TEST_CASE("log levels by name") {
  CHECK(ParseLogLevel("error") == LogLevel::kError);
  CHECK(ParseLogLevel("warning") == LogLevel::kWarning);
  CHECK(ParseLogLevel("info") == LogLevel::kInfo);
  CHECK(ParseLogLevel("debug") == LogLevel::kDebug);
  CHECK_FALSE(ParseLogLevel("").has_value());
  CHECK_FALSE(ParseLogLevel("Debug").has_value());
  CHECK_FALSE(ParseLogLevel("verbose").has_value());
  SetLogLevel(LogLevel::kWarning);
  CHECK(GetLogLevel() == LogLevel::kWarning);
  SetLogLevel(LogLevel::kInfo);
}

std::string FileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t Lines(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

// Messages of these tests go to the ring (and a file) but not to stderr.
struct NoStderr {
  NoStderr() { SetLogToStderr(false); }
  ~NoStderr() { SetLogToStderr(true); }
};

TEST_CASE("the ring keeps the most recent messages that pass the level, oldest first") {
  NoStderr quiet;
  SetLogLevel(LogLevel::kWarning);
  for (size_t i = 0; i < kRecentLogCapacity + 7; ++i) {
    Log(LogLevel::kWarning, "ring message " + std::to_string(i));
    Log(LogLevel::kInfo, "below the level " + std::to_string(i));
  }
  SetLogLevel(LogLevel::kInfo);
  const std::string text = RecentLogText();
  CHECK(Lines(text) == kRecentLogCapacity);
  CHECK(text.find("below the level") == std::string::npos);
  CHECK(text.find("ring message 6\n") == std::string::npos);  // pushed out
  const size_t first = text.find(" warning: ring message 7\n");
  const size_t last = text.find(" warning: ring message " + std::to_string(kRecentLogCapacity + 6));
  REQUIRE(first != std::string::npos);
  REQUIRE(last != std::string::npos);
  CHECK(first < last);
  // Each line starts with its UTC time: "2026-11-27T21:56:10Z warning: ...".
  CHECK(text.size() > 21);
  CHECK(text[4] == '-');
  CHECK(text[10] == 'T');
  CHECK(text[19] == 'Z');
  // A huge message is cut, so the ring stays bounded.
  Log(LogLevel::kError, std::string(1 << 20, 'x'));
  const std::string after = RecentLogText();
  CHECK(after.size() <= kRecentLogCapacity * (kRecentLogLineMax + 1));
}

TEST_CASE("the log file is appended to and opened again by its path") {
  NoStderr quiet;
  testing::TempDir dir("b2ndfs_log");
  const std::string path = (dir.path / "b2ndfs.log").string();
  {
    std::ofstream old(path);
    old << "kept\n";
  }
  CHECK_FALSE(SetLogFile("relative.log").ok());
  CHECK(SetLogFile((dir.path / "missing" / "x.log").string()).error_number() == ENOENT);
  CHECK_FALSE(SetLogFile(dir.path.string()).ok());  // a directory
  REQUIRE(SetLogFile(path).ok());
  Log(LogLevel::kWarning, "first line");
  CHECK(FileText(path).rfind("kept\n", 0) == 0);  // appended, not truncated
  CHECK(FileText(path).find("]: warning: first line\n") != std::string::npos);
  // logrotate moves the file away, then sends SIGHUP.
  const std::string rotated = path + ".1";
  REQUIRE(std::rename(path.c_str(), rotated.c_str()) == 0);
  Log(LogLevel::kWarning, "into the moved file");
  ReopenLogFile();
  Log(LogLevel::kWarning, "into the new file");
  CHECK(FileText(rotated).find("into the moved file") != std::string::npos);
  CHECK(FileText(rotated).find("into the new file") == std::string::npos);
  CHECK(FileText(path).find("into the new file") != std::string::npos);
  CHECK(Lines(FileText(path)) == 1);
}

TEST_CASE("a rate limit lets a burst through per window and counts the rest") {
  const int64_t minute = int64_t{60} * 1000000000;
  LogRateLimit limit(3, minute);
  uint64_t suppressed = 99;
  for (int i = 0; i < 3; ++i) {
    CHECK(limit.Allow(1000 + i, &suppressed));
    CHECK(suppressed == 0);
  }
  CHECK_FALSE(limit.Allow(2000, &suppressed));
  CHECK_FALSE(limit.Allow(1000 + minute - 1, &suppressed));
  // The next window: let through, with the count of those refused.
  CHECK(limit.Allow(1000 + minute, &suppressed));
  CHECK(suppressed == 2);
  CHECK(limit.Allow(1000 + minute + 1, &suppressed));
  CHECK(suppressed == 0);
}

}  // namespace
}  // namespace b2ndfs
