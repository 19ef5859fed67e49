// Unit tests of util/log: LogOnce reports a key once, forgets on request,
// and remembers a bounded number of keys, least recently seen dropped first.
#include "b2ndfs/util/log.h"

#include <catch2/catch.hpp>
#include <string>

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

}  // namespace
}  // namespace b2ndfs
