// remote/aws_credentials: where the keys of an s3:// source come from, in the
// order the AWS SDKs look for them, and how temporary keys are renewed
// while the mount lives (README.md, "S3 credentials").
//
// The chain (ResolveAwsCredentials; the first that applies wins):
//   `no_sign` (anonymous);
//   `credentials=FILE`: the keys of its profile (`profile=`, else AWS_PROFILE,
//     else "default"); a file every user may read is refused;
//   the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
//     AWS_SESSION_TOKEN), unless `profile=` names a profile;
//   the profile (`profile=`, AWS_PROFILE or "default") of the shared config
//     file (AWS_CONFIG_FILE, else ~/.aws/config, section "profile NAME") and
//     credentials file (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials,
//     whose keys win): `role_arn` with `web_identity_token_file`,
//     `source_profile` (its keys, or its own role, sign an STS AssumeRole)
//     or `credential_source` (Environment, Ec2InstanceMetadata,
//     EcsContainer), with `role_session_name`, `external_id`,
//     `duration_seconds`;
//   web identity from the environment (AWS_WEB_IDENTITY_TOKEN_FILE and
//     AWS_ROLE_ARN, AWS_ROLE_SESSION_NAME), unless `profile=` names a
//     profile: STS AssumeRoleWithWebIdentity;
//   the profile's static keys, then its `credential_process`;
//   the container endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI, or
//     _RELATIVE_URI under http://169.254.170.2; Authorization from
//     AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or _TOKEN);
//   EC2 instance metadata v2 (AWS_EC2_METADATA_SERVICE_ENDPOINT, else
//     http://169.254.169.254), unless AWS_EC2_METADATA_DISABLED=true.
// STS answers at AWS_ENDPOINT_URL_STS (else AWS_ENDPOINT_URL, else
// https://sts.REGION.amazonaws.com). The region: `region=`, AWS_REGION,
// AWS_DEFAULT_REGION, the profile's `region`, else us-east-1.
//
// Renewal: a CredentialProvider (aws_credential_provider.h) holds the current
// keys of one source and renews them before they expire.
//
// Secrets: keys, secrets, session and web identity tokens are never in a
// returned message or description, nor logged; messages name files,
// profiles, roles, URLs (redacted) and line numbers.
// Thread-safety: the resolution functions and sources are called from one
// thread at a time; a CredentialProvider from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/remote/sigv4.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

// Sections ("default", "profile x", ...) of keys (lower-cased) and values.
using IniFile = std::map<std::string, std::map<std::string, std::string>>;
// AWS's INI dialect: "[section]", "key = value", '#' and ';' comments,
// indented lines (nested settings) ignored. A line that is none of these is
// an EIO naming its line number.
Result<IniFile> ParseIni(const std::string& text);

struct AwsSettings {
  std::string profile;           // profile=; empty: AWS_PROFILE or "default"
  std::string credentials_file;  // credentials=; empty: the shared file
  std::string region;            // region=
  bool no_sign = false;
};

// Looks up an environment variable (std::getenv in production).
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnvironment();

// Seconds since the epoch (::time in production; tests inject their own).
using Clock = std::function<int64_t()>;
Clock SystemClock();

// Keys and when they stop working.
struct ExpiringCredentials {
  AwsCredentials keys;
  std::optional<int64_t> expiration;  // seconds since the epoch; nullopt: never
};

// One HTTP exchange with a credentials service (IMDS, a container endpoint,
// STS): no redirects, a body of at most kMaxCredentialAnswer bytes.
struct AwsHttpRequest {
  std::string method;  // "GET", "PUT", "POST"
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  double timeout = 5;  // seconds, connecting included
};
struct AwsHttpAnswer {
  long status = 0;
  std::string body;
};
constexpr size_t kMaxCredentialAnswer = 1u << 20;
using AwsHttpSend = std::function<Result<AwsHttpAnswer>(const AwsHttpRequest&)>;
// libcurl; messages name the redacted URL only.
AwsHttpSend CurlHttpSend();

// One link of the chain, which fetches keys when asked.
class CredentialSource {
 public:
  virtual ~CredentialSource() = default;
  virtual Result<ExpiringCredentials> Fetch() = 0;
  // Where keys come from, for the log: "web identity (role ARN)". Never a
  // secret. May name what the last Fetch learnt (the instance's role).
  virtual std::string Describe() const = 0;
  // Keys that never change (environment, files): no renewal, no thread.
  virtual bool is_static() const { return false; }
};

// Parses what credential_process prints (JSON, "Version": 1), what the
// instance metadata service and container endpoints answer (JSON with
// "Token"), and an STS AssumeRole[WithWebIdentity]Response (XML). Messages
// never quote the text.
Result<ExpiringCredentials> ParseProcessCredentials(const std::string& json);
Result<ExpiringCredentials> ParseEndpointCredentials(const std::string& json);
Result<ExpiringCredentials> ParseStsCredentials(const std::string& xml);
// A flat JSON object's string members (numbers, true, false and null as
// their text); nested values or malformed text are EIO.
Result<std::map<std::string, std::string>> ParseFlatJson(const std::string& text);
// "2026-11-27T20:00:00Z".
std::string FormatExpiration(int64_t seconds);

// Sources (aws_credential_sources.cc).
std::unique_ptr<CredentialSource> StaticCredentialSource(AwsCredentials keys,
                                                         std::string description);
// Runs `command` with /bin/sh -c (the user's own configuration), its output
// read for at most `timeout` seconds.
std::unique_ptr<CredentialSource> ProcessCredentialSource(std::string command, std::string profile,
                                                          double timeout = 60);
std::unique_ptr<CredentialSource> ContainerCredentialSource(std::string url, std::string token,
                                                            std::string token_file,
                                                            AwsHttpSend send);
// The http:// container endpoints the SDKs accept (loopback, the ECS and
// EKS link-local addresses); every https:// URL is accepted.
bool AllowedContainerUrl(const std::string& url);
// `hint` is appended to its errors (what else was looked for, as the last
// source of the chain).
std::unique_ptr<CredentialSource> ImdsCredentialSource(std::string endpoint, double timeout,
                                                       AwsHttpSend send, std::string hint = "");

struct StsRole {
  std::string endpoint;  // "https://sts.us-east-1.amazonaws.com"
  std::string region;    // the signing region
  std::string role_arn;
  std::string session_name;
  std::string external_id;
  int duration_seconds = 0;  // 0: STS's default (an hour)
};
// AssumeRole signed with the keys of `base` (fetched on first use, and
// again when they are due).
std::unique_ptr<CredentialSource> AssumeRoleSource(StsRole role,
                                                   std::unique_ptr<CredentialSource> base,
                                                   AwsHttpSend send);
// AssumeRoleWithWebIdentity (unsigned) with the token of `token_file`,
// read afresh on each fetch.
std::unique_ptr<CredentialSource> WebIdentitySource(StsRole role, std::string token_file,
                                                    AwsHttpSend send);

// The winner of the chain, not yet fetched.
struct AwsResolution {
  std::unique_ptr<CredentialSource> source;  // null: anonymous (no_sign)
  std::string region;
  // AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL; empty: AWS.
  std::string s3_endpoint;
};
// EACCES or ENOENT when nothing usable is found; reads files and the
// environment only (the network is asked when the source is fetched).
Result<AwsResolution> ResolveAwsCredentials(const AwsSettings& settings, const EnvLookup& env,
                                            AwsHttpSend send = CurlHttpSend());

// The keys and region once (sources that need no network only: the
// instance metadata service, last in the chain, is an ENOENT here).
struct AwsIdentity {
  std::optional<AwsCredentials> credentials;  // nullopt: anonymous
  std::string region;
  std::string origin;  // for messages: "the environment", "profile default in FILE"
};
Result<AwsIdentity> ResolveAwsIdentity(const AwsSettings& settings, const EnvLookup& env);

}  // namespace b2ndfs::remote
