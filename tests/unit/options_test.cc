#include "options.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using b2ndfs::app::ParseCommandLine;
using b2ndfs::app::ParseSize;

namespace {

b2ndfs::Result<b2ndfs::app::CommandLine> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "b2ndfs");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("sizes take K, M, G, T suffixes") {
  CHECK(ParseSize("0") == 0u);
  CHECK(ParseSize("4096") == 4096u);
  CHECK(ParseSize("64K") == 64u << 10);
  CHECK(ParseSize("512m") == 512ull << 20);
  CHECK(ParseSize("2G") == 2ull << 30);
  CHECK(ParseSize("2GiB") == 2ull << 30);
  CHECK(ParseSize("1T") == 1ull << 40);
  CHECK_FALSE(ParseSize("").has_value());
  CHECK_FALSE(ParseSize("abc").has_value());
  CHECK_FALSE(ParseSize("-1G").has_value());
  CHECK_FALSE(ParseSize("12X").has_value());
  CHECK_FALSE(ParseSize("99999999999999999999").has_value());
  CHECK_FALSE(ParseSize("17179869184G").has_value());  // overflows 64 bits
}

TEST_CASE("source, mountpoint and our options") {
  auto cl = Parse({"-o", "cache_size=64M,threads=3", "/src", "/mnt"});
  REQUIRE(cl.ok());
  CHECK(cl->source == "/src");
  CHECK(cl->mountpoint == "/mnt");
  CHECK(cl->cache_size == 64u << 20);
  CHECK(cl->threads == 3);
  CHECK(cl->fuse_options.empty());
  CHECK_FALSE(cl->foreground);
}

TEST_CASE("mount helper order and fstab options are accepted") {
  auto cl = Parse({"/src", "/mnt", "-o",
                   "ro,nofail,_netdev,noauto,defaults,x-systemd.automount,allow_other,dev"});
  REQUIRE(cl.ok());
  CHECK(cl->allow_other);
  CHECK(cl->fuse_options == std::vector<std::string>{"allow_other", "dev"});
}

TEST_CASE("-f, -d, -s and -oOPTION") {
  auto cl = Parse({"-f", "-s", "-ocache_size=1G", "a", "b"});
  REQUIRE(cl.ok());
  CHECK(cl->foreground);
  CHECK(cl->single_threaded);
  CHECK(cl->cache_size == 1ull << 30);
  auto debug = Parse({"-d", "a", "b"});
  REQUIRE(debug.ok());
  CHECK(debug->foreground);
  CHECK(debug->debug);
}

TEST_CASE("command-line errors are reported") {
  CHECK_FALSE(Parse({"/src"}).ok());
  CHECK_FALSE(Parse({"/a", "/b", "/c"}).ok());
  CHECK_FALSE(Parse({"-o", "cache_size=abc", "/a", "/b"}).ok());
  CHECK_FALSE(Parse({"-o", "threads=0", "/a", "/b"}).ok());
  CHECK_FALSE(Parse({"-o", "threads=two", "/a", "/b"}).ok());
  CHECK_FALSE(Parse({"--bogus", "/a", "/b"}).ok());
  CHECK_FALSE(Parse({"/a", "/b", "-o"}).ok());
  auto bad = Parse({"-o", "cache_size=abc", "/a", "/b"});
  CHECK(bad.status().message().find("cache_size=abc") != std::string::npos);
}

TEST_CASE("help and version need no arguments") {
  auto help = Parse({"--help"});
  REQUIRE(help.ok());
  CHECK(help->show_help);
  auto version = Parse({"-V"});
  REQUIRE(version.ok());
  CHECK(version->show_version);
}
