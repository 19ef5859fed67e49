// remote/aws_credentials: where the keys of an s3:// source come from, as the
// AWS CLI looks for them, and the INI files that hold them.
//
// Order: `no_sign` (anonymous); `credentials=FILE` (its profile `profile=`,
// else AWS_PROFILE, else "default"); `profile=` in the shared credentials
// file (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials); the
// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN);
// then AWS_PROFILE or "default" in the shared file. The region: `region=`,
// AWS_REGION, AWS_DEFAULT_REGION, the profile's `region` in the config file
// (AWS_CONFIG_FILE, else ~/.aws/config) or in the credentials file, else
// us-east-1.
// Secrets: never in a returned message (messages name files, profiles and
// line numbers only). A credentials= file that everyone may read is refused.
// Thread-safety: none needed (called once, before the mount).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

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

struct AwsIdentity {
  std::optional<AwsCredentials> credentials;  // nullopt: anonymous
  std::string region;
  std::string origin;  // for messages: "the environment", "profile default in FILE"
};

// Looks up an environment variable (std::getenv in production).
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnvironment();

// Resolves keys and region; EACCES or ENOENT when nothing usable is found.
Result<AwsIdentity> ResolveAwsIdentity(const AwsSettings& settings, const EnvLookup& env);

}  // namespace b2ndfs::remote
