#include "b2ndfs/remote/s3_xml.h"

#include <cctype>
#include <cstring>
#include <ctime>

#include "b2ndfs/remote/autoindex.h"
#include "xml_doc.h"

namespace b2ndfs::remote {
namespace {

using Element = XmlElement;

Result<int64_t> ParseSize(const std::string& text) {
  if (text.empty() || text.size() > 18) return Status(EIO, "a malformed <Size>");
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return Status(EIO, "a malformed <Size>");
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

std::optional<int64_t> ParseIso8601(const std::string& text) {
  struct tm tm {};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  if (*end == '.') {
    ++end;
    if (!std::isdigit(static_cast<unsigned char>(*end))) return std::nullopt;
    while (std::isdigit(static_cast<unsigned char>(*end))) ++end;
  }
  if (std::strcmp(end, "Z") != 0) return std::nullopt;
  return static_cast<int64_t>(::timegm(&tm));
}

Result<ListObjectsPage> ParseListObjectsV2(const std::string& xml) {
  B2NDFS_ASSIGN_OR_RETURN(const Element root, ParseXml(xml));
  if (root.name != "ListBucketResult") {
    return Status(EIO,
                  "the listing is a <" + root.name.substr(0, 64) + ">, not a <ListBucketResult>");
  }
  const Element* encoding = root.Child("EncodingType");
  const bool url_encoded = encoding != nullptr && encoding->text == "url";
  auto decode = [url_encoded](const std::string& s) { return url_encoded ? DecodePercent(s) : s; };
  ListObjectsPage page;
  for (const auto& child : root.children) {
    if (child.name == "IsTruncated") {
      if (child.text != "true" && child.text != "false") {
        return Status(EIO, "a malformed <IsTruncated>");
      }
      page.truncated = child.text == "true";
    } else if (child.name == "NextContinuationToken") {
      page.next_token = child.text;
    } else if (child.name == "Contents") {
      const Element* key = child.Child("Key");
      const Element* size = child.Child("Size");
      if (key == nullptr || size == nullptr)
        return Status(EIO, "<Contents> without <Key> or <Size>");
      S3Object object;
      object.key = decode(key->text);
      B2NDFS_ASSIGN_OR_RETURN(object.size, ParseSize(size->text));
      if (const Element* m = child.Child("LastModified")) {
        object.mtime = ParseIso8601(m->text).value_or(0);
      }
      if (const Element* etag = child.Child("ETag")) object.etag = etag->text;
      page.contents.push_back(std::move(object));
    } else if (child.name == "CommonPrefixes") {
      bool any = false;
      for (const auto& p : child.children) {
        if (p.name != "Prefix") continue;
        page.common_prefixes.push_back(decode(p.text));
        any = true;
      }
      if (!any) return Status(EIO, "<CommonPrefixes> without <Prefix>");
    }
  }
  if (page.truncated && page.next_token.empty()) {
    return Status(EIO, "a truncated listing without <NextContinuationToken>");
  }
  return page;
}

namespace {

// The text of the first <TAG>...</TAG> of an error document, or "".
std::string ElementText(const std::string& body, const std::string& tag) {
  const size_t open = body.find("<" + tag + ">");
  if (open == std::string::npos) return "";
  const size_t start = open + tag.size() + 2;
  const size_t close = body.find("</" + tag + ">", start);
  if (close == std::string::npos) return "";
  return body.substr(start, close - start);
}

// `text` if it is a plain word (it goes into messages): 1 to `max_size`
// letters and digits, and '-' with `dash`; else "".
std::string PlainWord(const std::string& text, size_t max_size, bool dash) {
  if (text.empty() || text.size() > max_size) return "";
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && !(dash && c == '-')) return "";
  }
  return text;
}

}  // namespace

std::string ValidRegionName(const std::string& name) { return PlainWord(name, 32, true); }

std::string S3ErrorRegion(const std::string& body) {
  return ValidRegionName(ElementText(body, "Region"));
}

std::string S3ErrorCode(const std::string& body) {
  return PlainWord(ElementText(body, "Code"), 64, false);
}

}  // namespace b2ndfs::remote
