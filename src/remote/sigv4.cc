#include "b2ndfs/remote/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>

#include "b2ndfs/remote/http_client.h"
#include "b2ndfs/util/text.h"

namespace b2ndfs::remote {
namespace {

std::string Hex(const unsigned char* data, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += kHex[data[i] >> 4];
    out += kHex[data[i] & 15];
  }
  return out;
}

std::string HmacSha256(const std::string& key, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &n);
  return std::string(reinterpret_cast<const char*>(out), n);
}

using ::b2ndfs::text::Lower;

// Header values: leading and trailing blanks dropped, inner runs of blanks
// squeezed to one space.
std::string CanonicalValue(const std::string& value) {
  std::string out;
  bool blank = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      blank = !out.empty();
      continue;
    }
    if (blank) out += ' ';
    blank = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string AwsUriEncode(const std::string& text, bool encode_slash) {
  return PercentEncode(text, !encode_slash);
}

std::string Sha256Hex(const std::string& data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return Hex(digest, sizeof digest);
}

SigV4Signature SignV4(const SigV4Request& request, const AwsCredentials& credentials,
                      const std::string& region, const std::string& service,
                      const std::string& amz_date) {
  SigV4Signature s;
  std::vector<std::pair<std::string, std::string>> query;
  for (const auto& [k, v] : request.query) {
    query.emplace_back(AwsUriEncode(k, true), AwsUriEncode(v, true));
  }
  std::sort(query.begin(), query.end());
  std::string canonical_query;
  for (const auto& [k, v] : query) {
    canonical_query += (canonical_query.empty() ? "" : "&") + k + "=" + v;
  }
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [k, v] : request.headers) headers.emplace_back(Lower(k), CanonicalValue(v));
  if (!credentials.session_token.empty()) {
    headers.emplace_back("x-amz-security-token", credentials.session_token);
  }
  std::stable_sort(headers.begin(), headers.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // Repeated names join their values with commas, in order.
  std::string canonical_headers;
  for (size_t i = 0; i < headers.size(); ++i) {
    if (i > 0 && headers[i].first == headers[i - 1].first) {
      canonical_headers.back() = ',';
      canonical_headers += headers[i].second + "\n";
      continue;
    }
    canonical_headers += headers[i].first + ":" + headers[i].second + "\n";
    s.signed_headers += (s.signed_headers.empty() ? "" : ";") + headers[i].first;
  }
  s.canonical_request = request.method + "\n" + (request.path.empty() ? "/" : request.path) + "\n" +
                        canonical_query + "\n" + canonical_headers + "\n" + s.signed_headers +
                        "\n" + request.payload_hash;
  const std::string date = amz_date.substr(0, 8);
  const std::string scope = date + "/" + region + "/" + service + "/aws4_request";
  s.string_to_sign =
      "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + Sha256Hex(s.canonical_request);
  std::string key = HmacSha256("AWS4" + credentials.secret_access_key, date);
  key = HmacSha256(key, region);
  key = HmacSha256(key, service);
  key = HmacSha256(key, "aws4_request");
  const std::string mac = HmacSha256(key, s.string_to_sign);
  s.signature = Hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
  s.authorization = "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + scope +
                    ",SignedHeaders=" + s.signed_headers + ",Signature=" + s.signature;
  return s;
}

}  // namespace b2ndfs::remote
