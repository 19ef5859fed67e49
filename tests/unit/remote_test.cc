// The pure parts of remote sources: URL redaction, Content-Range and HTTP
// dates, nginx directory indexes (JSON and HTML, as nginx 1.22 writes them),
// percent-encoding.
#include <catch2/catch.hpp>

#include "b2ndfs/remote/autoindex.h"
#include "b2ndfs/remote/http_client.h"

using namespace b2ndfs::remote;

TEST_CASE("RedactUrl drops credentials, query and fragment") {
  CHECK(RedactUrl("https://user:secret@host.example/a/b.b2nd?X-Amz-Signature=abc") ==
        "https://host.example/a/b.b2nd");
  CHECK(RedactUrl("http://127.0.0.1:8080") == "http://127.0.0.1:8080");
  CHECK(RedactUrl("http://h/p#frag") == "http://h/p");
  CHECK(RedactUrl("http://tok@h/p@q") == "http://h/p@q");
  CHECK(RedactUrl("http://h/a@b/c") == "http://h/a@b/c");
}

TEST_CASE("ParseRetryAfter: seconds or an HTTP date") {
  CHECK(ParseRetryAfter("120", 0) == 120.0);
  CHECK(ParseRetryAfter("0", 0) == 0.0);
  CHECK_FALSE(ParseRetryAfter("-5", 0));
  CHECK_FALSE(ParseRetryAfter("soon", 0));
  // Sun, 06 Nov 1994 08:49:37 GMT is 784111777.
  CHECK(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", 784111770) == 7.0);
  CHECK(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", 784111800) == 0.0);  // past
}

TEST_CASE("ParseContentRange") {
  auto r = ParseContentRange("bytes 0-9/100");
  REQUIRE(r);
  CHECK(r->first == 0);
  CHECK(r->last == 9);
  CHECK(r->total == 100);
  r = ParseContentRange(" Bytes 10-10/*\r\n");
  REQUIRE(r);
  CHECK(r->total == -1);
  CHECK_FALSE(ParseContentRange("bytes 9-0/100"));
  CHECK_FALSE(ParseContentRange("bytes 0-99/99"));  // past the end
  CHECK_FALSE(ParseContentRange("bytes */100"));    // the 416 form
  CHECK_FALSE(ParseContentRange("items 0-9/100"));
  CHECK_FALSE(ParseContentRange("bytes 0-9"));
  CHECK_FALSE(ParseContentRange("bytes -1-9/100"));
}

TEST_CASE("ParseHttpDate") {
  CHECK(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777);
  CHECK(ParseHttpDate("Thu, 01 Jan 1970 00:00:00 GMT") == 0);
  CHECK_FALSE(ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT"));
  CHECK_FALSE(ParseHttpDate("garbage"));
}

TEST_CASE("nginx autoindex JSON") {
  const std::string json = R"([
{ "name":"a.b2nd", "type":"file", "mtime":"Sun, 06 Nov 1994 08:49:37 GMT", "size":1234 },
{ "name":"sub dir", "type":"directory", "mtime":"Sun, 06 Nov 1994 08:49:37 GMT" },
{ "name":"q\"uote\\d\u00e9", "type":"file", "mtime":"Sun, 06 Nov 1994 08:49:37 GMT", "size":0 },
{ "name":"dangling", "type":"other", "mtime":"Sun, 06 Nov 1994 08:49:37 GMT" },
{ "name":"..", "type":"directory", "mtime":"Sun, 06 Nov 1994 08:49:37 GMT" }
]
)";
  auto entries = ParseAutoindexJson(json);
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 3);
  CHECK((*entries)[0] == IndexEntry{"a.b2nd", false, 1234, 784111777});
  CHECK((*entries)[1] == IndexEntry{"sub dir", true, -1, 784111777});
  CHECK((*entries)[2].name == "q\"uote\\d\xc3\xa9");
  CHECK((*entries)[2].size == 0);
  CHECK(ParseAutoindex(json)->size() == 3);
  CHECK(ParseAutoindexJson("[]")->empty());
  for (const char* bad : {"", "[", "[{", "[{\"name\":}]", "[{\"name\":\"x\"}", "{}",
                          "[{\"name\":\"x\\q\"}]", "[{\"size\":123456789012345678901}]", "[] x"}) {
    CHECK_FALSE(ParseAutoindexJson(bad).ok());
  }
}

TEST_CASE("nginx autoindex HTML") {
  const std::string html =
      "<html>\r\n<head><title>Index of /d/</title></head>\r\n<body>\r\n"
      "<h1>Index of /d/</h1><hr><pre><a href=\"../\">../</a>\r\n"
      "<a href=\"nested/\">nested/</a>                     "
      "06-Nov-1994 08:49                   -\r\n"
      "<a href=\"a%20b.b2nd\">a b.b2nd</a>                  "
      "06-Nov-1994 08:49                1234\r\n"
      "<a href=\"x&amp;y.txt\">x&amp;y.txt</a>               "
      "06-Nov-1994 08:49                  7\r\n"
      "<a href=\"/abs\">abs</a> <a href=\"http://e/x\">x</a> <a href=\"?C=M\">sort</a>\r\n"
      "</pre><hr></body>\r\n</html>\r\n";
  auto entries = ParseAutoindexHtml(html);
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 3);
  CHECK((*entries)[0] == IndexEntry{"nested", true, -1, 784111740});
  CHECK((*entries)[1] == IndexEntry{"a b.b2nd", false, 1234, 784111740});
  CHECK((*entries)[2] == IndexEntry{"x&y.txt", false, 7, 784111740});
  // Pages of bare links: names only.
  auto bare = ParseAutoindex("<ul><li><A HREF='f.b2nd'>f</A><li><a href=\"d/\">d</a></ul>");
  REQUIRE(bare.ok());
  REQUIRE(bare->size() == 2);
  CHECK((*bare)[0] == IndexEntry{"f.b2nd", false, -1, 0});
  CHECK((*bare)[1] == IndexEntry{"d", true, -1, 0});
  // Links that leave the directory or smuggle a separator are not entries.
  CHECK(ParseAutoindexHtml("<a href=\"a%2Fb\">x</a><a href=\"%2E%2E/\">y</a>")->empty());
}

TEST_CASE("nginx autoindex HTML of a hostile shape parses in linear time") {
  // 300,000 links on one line and no "</a>": a parser that searched to the
  // end of the page for each link's line or "</a>" would take hours here.
  std::string one_line;
  constexpr int kLinks = 300000;
  for (int i = 0; i < kLinks; ++i) one_line += "<a href=\"f" + std::to_string(i) + "\">";
  auto entries = ParseAutoindexHtml(one_line);
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == kLinks);
  CHECK(entries->back() == IndexEntry{"f" + std::to_string(kLinks - 1), false, -1, 0});
  // One link whose name is 1 MB of entities: decoded in one pass.
  std::string entities;
  for (int i = 0; i < 200000; ++i) entities += "&amp;";
  auto one = ParseAutoindexHtml("<a href=\"" + entities + "\">x</a>   06-Nov-1994 08:49  5\n");
  REQUIRE(one.ok());
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].name == std::string(200000, '&'));
  CHECK((*one)[0].size == 5);
  // Entities are decoded once: "&amp;lt;" is the text "&lt;".
  CHECK(ParseAutoindexHtml("<a href=\"a&amp;lt;b\">x</a>")->at(0).name == "a&lt;b");
}

TEST_CASE("percent-encoding of path segments") {
  CHECK(EncodePathSegment("a b+c%/d.b2nd~_-") == "a%20b%2Bc%25%2Fd.b2nd~_-");
  CHECK(DecodePercent(EncodePathSegment("caf\xc3\xa9 #?&")) == "caf\xc3\xa9 #?&");
  CHECK(DecodePercent("%zz%4") == "%zz%4");
}
