#include "b2ndfs/remote/azure_xml.h"

#include "b2ndfs/remote/autoindex.h"
#include "b2ndfs/remote/http_client.h"
#include "xml_doc.h"

namespace b2ndfs::remote {
namespace {

// List Blobs caps a page at 5,000 entries; a marker is an opaque token of
// about a hundred characters. Anything far beyond that is not an answer.
constexpr size_t kMaxMarker = 4096;

Result<int64_t> ParseLength(const std::string& text) {
  if (text.empty() || text.size() > 18) return Status(EIO, "a malformed <Content-Length>");
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return Status(EIO, "a malformed <Content-Length>");
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string NameOf(const XmlElement& name) {
  return name.Attribute("Encoded") == "true" ? DecodePercent(name.text) : name.text;
}

}  // namespace

Result<ListBlobsPage> ParseListBlobs(const std::string& xml) {
  B2NDFS_ASSIGN_OR_RETURN(const XmlElement root, ParseXml(xml));
  if (root.name != "EnumerationResults") {
    return Status(
        EIO, "the listing is a <" + root.name.substr(0, 64) + ">, not an <EnumerationResults>");
  }
  ListBlobsPage page;
  for (const auto& child : root.children) {
    if (child.name == "NextMarker") {
      if (child.text.size() > kMaxMarker) return Status(EIO, "a <NextMarker> too long");
      page.next_marker = child.text;
    } else if (child.name == "Blobs") {
      for (const auto& entry : child.children) {
        const XmlElement* name = entry.Child("Name");
        if (entry.name == "BlobPrefix") {
          if (name == nullptr) return Status(EIO, "<BlobPrefix> without <Name>");
          page.prefixes.push_back(NameOf(*name));
          continue;
        }
        if (entry.name != "Blob") continue;
        const XmlElement* properties = entry.Child("Properties");
        const XmlElement* length =
            properties == nullptr ? nullptr : properties->Child("Content-Length");
        if (name == nullptr || length == nullptr) {
          return Status(EIO, "<Blob> without <Name> or <Content-Length>");
        }
        AzureBlob blob;
        blob.name = NameOf(*name);
        B2NDFS_ASSIGN_OR_RETURN(blob.size, ParseLength(length->text));
        if (const XmlElement* m = properties->Child("Last-Modified")) {
          blob.mtime = ParseHttpDate(m->text).value_or(0);
        }
        if (const XmlElement* etag = properties->Child("Etag")) {
          blob.etag = etag->text;
          if (!blob.etag.empty() && blob.etag.front() != '"') blob.etag = '"' + blob.etag + '"';
        }
        page.blobs.push_back(std::move(blob));
      }
    }
  }
  return page;
}

}  // namespace b2ndfs::remote
