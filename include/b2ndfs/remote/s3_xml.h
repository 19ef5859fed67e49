// remote/s3_xml: the S3 ListObjectsV2 answer (ListBucketResult), read by a
// small strict XML parser that knows exactly what such an answer may hold:
// elements, attributes, text with the five predefined entities and
// character references, comments, CDATA and a leading XML declaration. A
// DOCTYPE (so any entity definition), a tag that does not close, text
// outside the root, nesting deeper than 32 levels or more than a million
// elements are malformed.
//
// Pure functions of untrusted text: malformed input is an EIO Status, never
// a crash; messages never quote the document. Thread-safety: none needed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

struct S3Object {
  std::string key;
  int64_t size = 0;
  int64_t mtime = 0;  // seconds since the epoch (LastModified); 0: not given
  std::string etag;   // as sent, quotes included
  bool operator==(const S3Object&) const = default;
};

struct ListObjectsPage {
  std::vector<S3Object> contents;
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_token;  // NextContinuationToken; set when truncated
};

// A ListBucketResult document. Keys and prefixes are decoded when the
// answer says <EncodingType>url</EncodingType>.
Result<ListObjectsPage> ParseListObjectsV2(const std::string& xml);

// The <Code> of an S3 error document ("NoSuchKey"), or "" when there is none
// or it is not a plain word of at most 64 letters and digits (it goes into
// messages).
std::string S3ErrorCode(const std::string& body);

// The <Region> of an S3 error document (AuthorizationHeaderMalformed: the
// bucket's region), or "" when there is none or it is not a region name
// (letters, digits and '-', at most 32).
std::string S3ErrorRegion(const std::string& body);

// `name` if it looks like a region name (as S3ErrorRegion), else "".
std::string ValidRegionName(const std::string& name);

// "2009-10-12T17:50:30.000Z" (ISO 8601, UTC, optional fraction) as seconds
// since the epoch.
std::optional<int64_t> ParseIso8601(const std::string& text);

}  // namespace b2ndfs::remote
