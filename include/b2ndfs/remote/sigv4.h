// remote/sigv4: AWS Signature Version 4 for S3 requests (the signing of
// "Authenticating Requests (AWS Signature Version 4)" of the S3 API
// reference), kept apart from any transport so that tests reproduce AWS's
// published example signatures byte for byte.
//
// Pure functions; the secret key only enters the HMAC chain and never any
// returned string but the signature. Thread-safety: none needed.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace b2ndfs::remote {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // sent as x-amz-security-token when set
};

struct SigV4Request {
  std::string method;  // "GET", "HEAD"
  // The path as sent: already URI-encoded (each segment once, '/' kept).
  std::string path;
  // Query parameters, decoded; they are encoded and sorted when signing.
  std::vector<std::pair<std::string, std::string>> query;
  // Every header to sign, host and x-amz-date included (names in any case).
  std::vector<std::pair<std::string, std::string>> headers;
  // Hex SHA-256 of the body, or "UNSIGNED-PAYLOAD".
  std::string payload_hash;
};

struct SigV4Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signed_headers;  // "host;range;x-amz-date"
  std::string signature;       // 64 hex digits
  std::string authorization;   // the Authorization header's value
};

// Signs at `amz_date` (ISO 8601 basic, "20130524T000000Z", the value of
// the x-amz-date header) for `region` and `service` ("s3").
SigV4Signature SignV4(const SigV4Request& request, const AwsCredentials& credentials,
                      const std::string& region, const std::string& service,
                      const std::string& amz_date);

// RFC 3986 encoding as SigV4 wants it: unreserved characters kept, every
// other byte %XX (upper-case hex); '/' kept unless `encode_slash`.
std::string AwsUriEncode(const std::string& text, bool encode_slash);
// Lower-case hex SHA-256.
std::string Sha256Hex(const std::string& data);

}  // namespace b2ndfs::remote
