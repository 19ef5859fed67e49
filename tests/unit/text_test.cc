// util/text: the shared Lower, Trim and Now.
#include "b2ndfs/util/text.h"

#include <catch2/catch.hpp>
#include <string>

using namespace b2ndfs;

TEST_CASE("Lower folds ASCII letters only") {
  CHECK(text::Lower("Content-Type: X-Amz") == "content-type: x-amz");
  CHECK(text::Lower("") == "");
  // Bytes beyond ASCII (UTF-8 here) are left as they are, whatever the locale.
  CHECK(text::Lower("\xC3\x89T\xC3\x89") == "\xC3\x89t\xC3\x89");
}

TEST_CASE("Trim drops ASCII white space at both ends, never inside") {
  CHECK(text::Trim("  a b\t\r\n") == "a b");
  CHECK(text::Trim("\r\n\v\fkey = value \f") == "key = value");
  CHECK(text::Trim(" \t\r\n") == "");
  CHECK(text::Trim("") == "");
  const std::string line = "  x-range: bytes  ";
  const std::string_view view = text::TrimView(line);
  CHECK(view == "x-range: bytes");
  CHECK(view.data() == line.data() + 2);  // a view into the line, no copy
}

TEST_CASE("Now is monotonic seconds") {
  const double a = text::Now();
  const double b = text::Now();
  CHECK(b >= a);
  CHECK(a > 0);
}
