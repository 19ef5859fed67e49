// remote/s3_tree: a source tree in an S3 bucket (s3://BUCKET[/PREFIX]).
//
// Addressing: with an endpoint (an S3-compatible server) path-style,
// ENDPOINT/BUCKET/KEY; without one, AWS's virtual-hosted style,
// https://BUCKET.s3.REGION.amazonaws.com/KEY (path-style on
// s3.REGION.amazonaws.com for bucket names that are not DNS labels: dots,
// which TLS certificates do not cover, upper case or '_' of old buckets).
// Listing: ListObjectsV2 with delimiter '/', continuation tokens followed up
// to kMaxListPages pages; common prefixes are directories, so a prefix with a
// container extension holding chunks.b2frame is a sparse frame. A PREFIX
// that names an object is a single container; else it is a directory, which
// must hold something.
// Versions, caching and errors are those of every remote tree (see
// http_tree.h): size + ETag, If-Match on every Range GET, answers reused for
// `revalidate` seconds; 403 EACCES, 404 ENOENT. Requests are signed with
// SigV4 (x-amz-content-sha256 of the empty body) unless anonymous, with the
// keys a CredentialProvider holds at the moment of each attempt (renewed
// before they expire, see aws_credentials.h); the keys stay in the signer
// and never reach a message, the stats or the mount table (root() is
// "s3://BUCKET/PREFIX").
// Thread-safety: every method may be called from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/remote/aws_credential_provider.h"
#include "b2ndfs/remote/aws_credentials.h"
#include "b2ndfs/remote/http_tree.h"
#include "b2ndfs/remote/sigv4.h"
#include "b2ndfs/source/tree.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

// A listing longer than this many pages (1000 keys each on AWS) is EIO.
constexpr int kMaxListPages = 1000;

struct S3Url {
  std::string bucket;
  std::string prefix;  // no leading '/'; a trailing '/' kept as given
};
// "s3://BUCKET[/PREFIX]"; bucket names are 3 to 63 of [a-z0-9.-] (upper
// case and '_' are accepted for older buckets and other servers).
Result<S3Url> ParseS3Url(const std::string& url);

// The URL of the bucket's root, without a trailing '/': path-style under
// `endpoint` when one is given, else virtual-hosted on AWS in `region`.
Result<std::string> S3BucketUrl(const std::string& bucket, const std::string& endpoint,
                                const std::string& region);
// The ListObjectsV2 request for the keys under `prefix` (query parameters
// sorted and encoded as SigV4 wants them); `max_keys` > 0 asks for at most
// that many (else the server's page, 1,000 on AWS).
std::string S3ListUrl(const std::string& bucket_url, const std::string& prefix,
                      const std::string& continuation_token, int max_keys = 0);

// The headers that sign one request (Host, x-amz-content-sha256,
// x-amz-date, x-amz-security-token if any, Authorization) for `url` as sent,
// at `amz_date` ("20130524T000000Z"); `range` ("bytes=0-9" or empty) is
// signed when given.
std::vector<std::string> S3SignedHeaders(const std::string& method, const std::string& url,
                                         const std::string& range,
                                         const AwsCredentials& credentials,
                                         const std::string& region, const std::string& amz_date);

struct S3Options {
  RemoteOptions remote;
  std::string endpoint;  // empty: AWS
  std::string region = "us-east-1";
  std::optional<AwsCredentials> credentials;  // nullopt: anonymous (no_sign)
  // When set, asked for the current keys on every request (and
  // `credentials` is ignored): keys that are renewed while the mount lives.
  std::shared_ptr<CredentialProvider> credential_provider;
};

// The tree at an s3:// URL; its root has answered.
Result<std::shared_ptr<source::Tree>> OpenS3Tree(const std::string& url, const S3Options& options);

}  // namespace b2ndfs::remote
