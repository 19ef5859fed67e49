// remote/azure_xml: the Azure Blob Storage List Blobs answer
// (EnumerationResults), read by the strict parser of the S3 listings (what
// it refuses: s3_xml.h), and the error code of an Azure error answer.
//
// Pure functions of untrusted text: malformed input is an EIO Status, never
// a crash; messages never quote the document. Thread-safety: none needed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

struct AzureBlob {
  std::string name;
  int64_t size = 0;   // Content-Length
  int64_t mtime = 0;  // seconds since the epoch (Last-Modified); 0: not given
  // As the Get Blob Properties answer's ETag header says it: quoted. (List
  // Blobs sends it bare, "0x8D...".)
  std::string etag;
  bool operator==(const AzureBlob&) const = default;
};

struct ListBlobsPage {
  std::vector<AzureBlob> blobs;
  std::vector<std::string> prefixes;  // <BlobPrefix><Name>, ending in the delimiter
  std::string next_marker;            // empty: the last page
};

// An EnumerationResults document of List Blobs with a delimiter. Names the
// service percent-encoded (<Name Encoded="true">: characters XML cannot
// carry) are decoded.
Result<ListBlobsPage> ParseListBlobs(const std::string& xml);

}  // namespace b2ndfs::remote
