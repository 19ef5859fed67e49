#include "b2ndfs/remote/autoindex.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "b2ndfs/remote/http_client.h"
#include "b2ndfs/util/json.h"

namespace b2ndfs::remote {
namespace {

Status Malformed(const std::string& why) { return Status(EIO, "directory index: " + why); }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A name that stays inside its directory.
bool AcceptableName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\0", 2)) == std::string::npos;
}

// The next position of NEEDLE at or after a position that only grows,
// searched again only once passed.
class NextOccurrence {
 public:
  NextOccurrence(const std::string& text, const char* needle) : text_(text), needle_(needle) {}
  size_t From(size_t pos) {
    if (!searched_ || (found_ != std::string::npos && found_ < pos)) {
      found_ = text_.find(needle_, pos);
      searched_ = true;
    }
    return found_;
  }

 private:
  const std::string& text_;
  const char* needle_;
  size_t found_ = std::string::npos;
  bool searched_ = false;
};

constexpr size_t kMaxColumnsAfterLink = 128;

// &amp; &lt; &gt; &quot; &#39; in one pass; other text is kept as it is.
std::string DecodeHtmlEntities(const std::string& in) {
  static const std::pair<const char*, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&#39;", '\''}};
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size();) {
    bool replaced = false;
    if (in[i] == '&') {
      for (const auto& [entity, c] : kEntities) {
        const size_t n = std::strlen(entity);
        if (in.compare(i, n, entity) == 0) {
          out += c;
          i += n;
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out += in[i++];
  }
  return out;
}

// " 10-Jun-2025 05:00    1234" (or "-" for a directory's size).
void ParseNginxDateAndSize(const std::string& rest, IndexEntry& e) {
  char month[4] = {0};
  int day = 0, year = 0, hour = 0, minute = 0;
  char size_text[32] = {0};
  if (std::sscanf(rest.c_str(), " %2d-%3s-%4d %2d:%2d %31s", &day, month, &year, &hour, &minute,
                  size_text) != 6) {
    return;
  }
  static const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int m = 0; m < 12; ++m) {
    if (std::string(month) == kMonths[m]) {
      struct tm tm {};
      tm.tm_mday = day;
      tm.tm_mon = m;
      tm.tm_year = year - 1900;
      tm.tm_hour = hour;
      tm.tm_min = minute;
      e.mtime = static_cast<int64_t>(::timegm(&tm));
    }
  }
  char* num_end = nullptr;
  const long long size = std::strtoll(size_text, &num_end, 10);
  if (!e.directory && num_end != size_text && *num_end == '\0' && size >= 0) e.size = size;
}

}  // namespace

std::string EncodePathSegment(const std::string& segment) { return PercentEncode(segment, false); }

std::string DecodePercent(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int hi = HexValue(text[i + 1]), lo = HexValue(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

// What nginx writes: an array of flat objects whose values are strings or
// non-negative integers.
Result<std::vector<IndexEntry>> ParseAutoindexJson(const std::string& text) {
  auto doc = json::Parse(text);
  if (!doc.ok()) return Malformed(doc.status().message());
  if (!doc->is_array()) return Malformed("expected a JSON array");
  std::vector<IndexEntry> entries;
  for (const json::Value& item : doc->items) {
    if (!item.is_object()) return Malformed("expected an object");
    IndexEntry e;
    std::string type;
    for (size_t k = 0; k < item.keys.size(); ++k) {
      const std::string& key = item.keys[k];
      const json::Value& value = item.items[k];
      if (value.is_string()) {
        if (key == "name") e.name = value.text;
        if (key == "type") type = value.text;
        if (key == "mtime") e.mtime = ParseHttpDate(value.text).value_or(0);
        continue;
      }
      const std::optional<int64_t> number = value.Int64();
      if (!number || *number < 0) return Malformed("expected a string or a number");
      if (key == "size") e.size = *number;
    }
    e.directory = type == "directory";
    if (e.directory) e.size = -1;
    // Symbolic links nginx could not follow ("other") are left out, as
    // local ones are.
    if (AcceptableName(e.name) && (type == "file" || type == "directory")) {
      entries.push_back(std::move(e));
    }
  }
  return entries;
}

Result<std::vector<IndexEntry>> ParseAutoindexHtml(const std::string& text) {
  std::vector<IndexEntry> entries;
  // Every search below starts at or after the previous one's start, and the
  // next newline and "</a>" are remembered until passed: a page of any shape
  // is parsed in time linear in its size (a served page is untrusted).
  NextOccurrence next_newline(text, "\n");
  NextOccurrence next_anchor_end(text, "</a>");
  size_t pos = 0;
  for (;;) {
    // <a href="..."> (case-insensitive tag and attribute, either quote).
    size_t a = std::string::npos;
    for (size_t i = pos; i + 2 < text.size(); ++i) {
      if (text[i] == '<' && (text[i + 1] == 'a' || text[i + 1] == 'A') &&
          std::isspace(static_cast<unsigned char>(text[i + 2]))) {
        a = i;
        break;
      }
    }
    if (a == std::string::npos) break;
    const size_t close = text.find('>', a);
    if (close == std::string::npos) break;
    pos = close + 1;
    std::string tag = text.substr(a, close - a);
    for (auto& c : tag) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const size_t h = tag.find("href=");
    if (h == std::string::npos || h + 5 >= tag.size()) continue;
    const char quote = tag[h + 5];
    if (quote != '"' && quote != '\'') continue;
    const size_t end = tag.find(quote, h + 6);  // within the tag
    if (end == std::string::npos) continue;
    std::string href = DecodeHtmlEntities(text.substr(a + h + 6, end - (h + 6)));
    if (href.empty() || href[0] == '/' || href[0] == '?' || href[0] == '#' ||
        href.find("://") != std::string::npos || href.find_first_of("?#") != std::string::npos) {
      continue;
    }
    IndexEntry e;
    e.directory = href.back() == '/';
    if (e.directory) href.pop_back();
    if (href.rfind("./", 0) == 0) href.erase(0, 2);
    e.name = DecodePercent(href);
    if (!AcceptableName(e.name)) continue;
    // nginx's page: "</a>   10-Jun-2025 05:00    1234" up to the line's end.
    const size_t line_end = next_newline.From(pos);
    const size_t a_end = next_anchor_end.From(pos);
    if (a_end != std::string::npos && (line_end == std::string::npos || a_end < line_end)) {
      const size_t rest_end = line_end == std::string::npos ? text.size() : line_end;
      // nginx pads the date and size into well under 128 columns.
      const std::string rest =
          text.substr(a_end + 4, std::min<size_t>(rest_end - (a_end + 4), kMaxColumnsAfterLink));
      ParseNginxDateAndSize(rest, e);
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

Result<std::vector<IndexEntry>> ParseAutoindex(const std::string& text) {
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    return c == '[' ? ParseAutoindexJson(text) : ParseAutoindexHtml(text);
  }
  return Malformed("empty document");
}

}  // namespace b2ndfs::remote
