#pragma once
// A directory under /tmp made for one test case and removed with its files.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <system_error>

namespace b2ndfs::testing {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "b2ndfs_test") {
    std::string tmpl = "/tmp/" + prefix + "_XXXXXX";
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace b2ndfs::testing
