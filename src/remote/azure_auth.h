// remote/azure_auth (private to src/remote; azure_tree.h resolves it for
// its callers): how requests to Azure Blob Storage are authorized.
//
// SharedKey ("Authorize with Shared Key" of the Azure Storage REST
// reference): the StringToSign of a request (verb, the standard headers in
// their fixed order, the x-ms-* headers sorted, the canonicalized resource
// with its query parameters sorted) signed with HMAC-SHA256 under the
// base64-decoded account key. A SAS token instead rides in every request's
// query; none of either: anonymous (a public container).
// Credentials: `credentials=FILE` (lines account_name=, account_key=,
// sas_token=), else AZURE_STORAGE_KEY (for the source's account; a set
// AZURE_STORAGE_ACCOUNT must name it too), else AZURE_STORAGE_SAS_TOKEN.
// Secrets: never in a returned message (messages name files, variables and
// line numbers only). Pure functions; thread-safety: none needed.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/remote/aws_credentials.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

// The x-ms-version requests name: List Blobs without encoded names before
// it, Range and If-Match as every version since 2011 has them.
inline constexpr const char* kAzureApiVersion = "2021-08-06";

struct AzureCredentials {
  std::string account;  // the source's account (the URL's)
  std::string key;      // the account key, decoded (binary); empty: none
  std::string sas;      // a SAS token without its '?'; empty: none
  std::string origin;   // for messages: "AZURE_STORAGE_KEY", "credentials=FILE"
  bool anonymous() const { return key.empty() && sas.empty(); }
};

struct AzureSettings {
  std::string account;           // from the source URL
  std::string credentials_file;  // credentials= (already checked: not world-readable)
  bool no_sign = false;
};

// Resolves what authorizes the requests: EACCES (with what to set) when
// nothing does and no_sign is not given; EINVAL for a malformed key, token
// or file, or one of another account.
Result<AzureCredentials> ResolveAzureCredentials(const AzureSettings& settings,
                                                 const EnvLookup& env);

// A credentials= file: "name=value" lines (account_name, account_key,
// sas_token; blanks around them and '#' comment lines allowed). Unknown
// names and lines without '=' are errors naming the line number.
Result<std::vector<std::pair<std::string, std::string>>> ParseAzureCredentialsFile(
    const std::string& text);

// Base64 (RFC 4648, padded); nullopt-like EINVAL for anything else.
Result<std::string> DecodeBase64(const std::string& text);
std::string EncodeBase64(const std::string& bytes);

// One request as SharedKey signs it. The URL as sent: its path already
// percent-encoded, its query parameters encoded (they are decoded to sign).
struct AzureRequest {
  std::string method;
  std::string url;
  std::string range;  // the Range header's value, or ""
  std::string if_match;
  std::string if_unmodified_since;
  std::string date;  // x-ms-date, RFC 1123 ("Fri, 27 Nov 2026 19:07:33 GMT")
};

// The StringToSign of `request` for `account` (headers sent: x-ms-date and
// x-ms-version, kAzureApiVersion).
std::string AzureStringToSign(const AzureRequest& request, const std::string& account);

// The headers of one request: x-ms-date, x-ms-version, and with a key the
// Authorization "SharedKey ACCOUNT:SIGNATURE".
std::vector<std::string> AzureSignedHeaders(const AzureRequest& request,
                                            const AzureCredentials& credentials);

// `url` with the SAS token appended to its query (unchanged without one).
std::string AzureSasUrl(const std::string& url, const AzureCredentials& credentials);

// The time now as x-ms-date wants it.
std::string AzureDateNow();

}  // namespace b2ndfs::remote
