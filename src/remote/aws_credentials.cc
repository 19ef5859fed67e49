#include "b2ndfs/remote/aws_credentials.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "b2ndfs/remote/http_client.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/util/text.h"

namespace b2ndfs::remote {
namespace {

constexpr int kMaxSourceProfiles = 4;  // role chains deeper than this are refused

using ::b2ndfs::text::Lower;
using ::b2ndfs::text::Trim;

std::string HomeDir(const EnvLookup& env) {
  if (auto home = env("HOME"); home && !home->empty()) return *home;
  if (const struct passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) {
    return pw->pw_dir;
  }
  return "/";
}

std::optional<std::string> NonEmpty(const EnvLookup& env, const char* name) {
  auto v = env(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

// Reads an INI file; nullopt when it does not exist. `strict`: refuse a
// file that every user may read (a credentials= file for a system unit).
Result<std::optional<IniFile>> ReadIni(const std::string& path, bool strict) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT && !strict) return std::optional<IniFile>();
    const int e = errno;
    return Status(e, path + ": " + std::strerror(e));
  }
  if ((st.st_mode & S_IROTH) != 0) {
    if (strict) {
      return Status(EACCES,
                    path + " may be read by every user: chmod o-r it (it holds secret keys)");
    }
    Log(LogLevel::kWarning, path + " may be read by every user; chmod o-r it");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(EACCES, path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  auto ini = ParseIni(text.str());
  if (!ini.ok()) return Status(EIO, path + ": " + ini.status().message());
  return std::optional<IniFile>(std::move(*ini));
}

using Section = std::map<std::string, std::string>;

std::string Get(const Section& section, const char* key) {
  auto k = section.find(key);
  return k == section.end() ? std::string() : k->second;
}

Result<AwsCredentials> KeysOf(const Section& section, const std::string& what) {
  AwsCredentials c;
  c.access_key_id = Get(section, "aws_access_key_id");
  c.secret_access_key = Get(section, "aws_secret_access_key");
  c.session_token = Get(section, "aws_session_token");
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return Status(EACCES, what + " lacks aws_access_key_id or aws_secret_access_key");
  }
  return c;
}

// What the chain reads: both shared files, the environment, where STS is.
struct Chain {
  const EnvLookup& env;
  AwsHttpSend send;
  std::string region;
  std::string credentials_path, config_path;
  std::optional<IniFile> credentials, config;

  // The profile's settings: the config file's [profile NAME] ([default])
  // under the credentials file's [NAME]; nullopt if neither has it.
  std::optional<Section> Profile(const std::string& name) const {
    std::optional<Section> out;
    if (config) {
      auto it = config->find(name == "default" ? "default" : "profile " + name);
      if (it != config->end()) out = it->second;
    }
    if (credentials) {
      auto it = credentials->find(name);
      if (it != credentials->end()) {
        if (!out) out.emplace();
        for (const auto& [k, v] : it->second) (*out)[k] = v;
      }
    }
    return out;
  }
  std::string Where() const { return credentials_path + " or " + config_path; }

  std::string StsEndpoint() const {
    if (auto e = NonEmpty(env, "AWS_ENDPOINT_URL_STS")) return *e;
    if (auto e = NonEmpty(env, "AWS_ENDPOINT_URL")) return *e;
    return "https://sts." + region + ".amazonaws.com";
  }

  Result<StsRole> Role(const Section& p, const std::string& role_arn) const {
    StsRole role;
    role.endpoint = StsEndpoint();
    role.region = region;
    role.role_arn = role_arn;
    role.session_name = Get(p, "role_session_name");
    role.external_id = Get(p, "external_id");
    if (const std::string d = Get(p, "duration_seconds"); !d.empty()) {
      char* end = nullptr;
      const long v = std::strtol(d.c_str(), &end, 10);
      if (*end != '\0' || v < 900 || v > 43200) {
        return InvalidArgument("duration_seconds = " + d + ": not 900 to 43200 seconds");
      }
      role.duration_seconds = static_cast<int>(v);
    }
    return role;
  }

  Result<std::unique_ptr<CredentialSource>> Environment() const {
    const auto key = NonEmpty(env, "AWS_ACCESS_KEY_ID");
    const auto secret = NonEmpty(env, "AWS_SECRET_ACCESS_KEY");
    if (!key || !secret) {
      return Status(EACCES, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together");
    }
    return StaticCredentialSource(
        AwsCredentials{*key, *secret, NonEmpty(env, "AWS_SESSION_TOKEN").value_or("")},
        "the environment (AWS_ACCESS_KEY_ID)");
  }

  // Container endpoint, or nullptr when none is configured.
  Result<std::unique_ptr<CredentialSource>> Container() const {
    std::string url;
    if (auto relative = NonEmpty(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) {
      url = "http://169.254.170.2" + *relative;
    } else if (auto full_uri = NonEmpty(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
      url = *full_uri;
      if (!AllowedContainerUrl(url)) {
        return Status(EACCES, "AWS_CONTAINER_CREDENTIALS_FULL_URI=" + RedactUrl(url) +
                                  ": only https://, or http:// to a loopback or the ECS/EKS "
                                  "link-local address, is accepted");
      }
    } else {
      return std::unique_ptr<CredentialSource>();
    }
    return ContainerCredentialSource(
        url, NonEmpty(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN").value_or(""),
        NonEmpty(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").value_or(""), send);
  }

  std::unique_ptr<CredentialSource> Imds(std::string hint = "") const {
    const std::string endpoint =
        NonEmpty(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT").value_or("http://169.254.169.254");
    double timeout = 1;
    if (auto t = NonEmpty(env, "AWS_METADATA_SERVICE_TIMEOUT")) {
      timeout = std::clamp(std::atof(t->c_str()), 0.1, 60.0);
    }
    return ImdsCredentialSource(endpoint, timeout, send, std::move(hint));
  }

  bool ImdsDisabled() const {
    return Lower(NonEmpty(env, "AWS_EC2_METADATA_DISABLED").value_or("")) == "true";
  }

  // A profile's own credentials: a role, then static keys, then a
  // credential_process; nullptr when it has none of these.
  Result<std::unique_ptr<CredentialSource>> FromProfile(const std::string& name, const Section& p,
                                                        int depth) const {
    const std::string what = "profile " + name;
    if (const std::string role_arn = Get(p, "role_arn"); !role_arn.empty()) {
      B2NDFS_ASSIGN_OR_RETURN(StsRole role, Role(p, role_arn));
      if (const std::string token = Get(p, "web_identity_token_file"); !token.empty()) {
        return WebIdentitySource(std::move(role), token, send);
      }
      std::unique_ptr<CredentialSource> base;
      if (const std::string source = Get(p, "source_profile"); !source.empty()) {
        if (depth >= kMaxSourceProfiles) {
          return Status(EINVAL, what + ": source_profile chains deeper than " +
                                    std::to_string(kMaxSourceProfiles) + " profiles");
        }
        const auto sp = Profile(source);
        if (!sp)
          return Status(ENOENT, what + ": source_profile " + source + " is not in " + Where());
        if (source == name) {
          B2NDFS_ASSIGN_OR_RETURN(AwsCredentials keys, KeysOf(p, what));
          base = StaticCredentialSource(std::move(keys), what + " in " + Where());
        } else {
          B2NDFS_ASSIGN_OR_RETURN(base, FromProfile(source, *sp, depth + 1));
          if (!base)
            return Status(EACCES, "profile " + source + " (source_profile of " + what +
                                      ") has no credentials");
        }
      } else if (const std::string cs = Get(p, "credential_source"); !cs.empty()) {
        if (cs == "Environment") {
          B2NDFS_ASSIGN_OR_RETURN(base, Environment());
        } else if (cs == "EcsContainer") {
          B2NDFS_ASSIGN_OR_RETURN(base, Container());
          if (!base)
            return Status(
                EACCES,
                what + ": credential_source EcsContainer without AWS_CONTAINER_CREDENTIALS_*_URI");
        } else if (cs == "Ec2InstanceMetadata") {
          base = Imds();
        } else {
          return Status(EINVAL, what + ": credential_source " + cs +
                                    " is not Environment, Ec2InstanceMetadata or EcsContainer");
        }
      } else {
        return Status(EINVAL, what +
                                  " has role_arn but no source_profile, credential_source "
                                  "or web_identity_token_file");
      }
      return AssumeRoleSource(std::move(role), std::move(base), send);
    }
    if (!Get(p, "aws_access_key_id").empty() || !Get(p, "aws_secret_access_key").empty()) {
      B2NDFS_ASSIGN_OR_RETURN(AwsCredentials keys, KeysOf(p, "[" + name + "] in " + Where()));
      return StaticCredentialSource(std::move(keys), what + " in " + Where());
    }
    if (const std::string command = Get(p, "credential_process"); !command.empty()) {
      return ProcessCredentialSource(command, name);
    }
    return std::unique_ptr<CredentialSource>();
  }
};

std::string IniValue(const std::optional<IniFile>& ini, const std::string& section,
                     const char* key) {
  if (!ini) return "";
  auto it = ini->find(section);
  if (it == ini->end()) return "";
  auto k = it->second.find(key);
  return k == it->second.end() ? "" : k->second;
}

}  // namespace

Result<IniFile> ParseIni(const std::string& text) {
  IniFile ini;
  std::istringstream lines(text);
  std::string line;
  std::string section;
  bool in_section = false;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const bool indented = !line.empty() && (line[0] == ' ' || line[0] == '\t');
    const std::string t = Trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t[0] == '[') {
      if (t.back() != ']' || t.size() < 3) {
        return Status(EIO, "line " + std::to_string(number) + ": a malformed [section]");
      }
      section = Trim(t.substr(1, t.size() - 2));
      in_section = true;
      ini[section];
      continue;
    }
    const size_t eq = t.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status(EIO, "line " + std::to_string(number) + ": neither [section] nor key = value");
    }
    if (indented) continue;  // nested settings ("s3 =" followed by indented keys)
    if (!in_section) {
      return Status(EIO, "line " + std::to_string(number) + ": a setting before any [section]");
    }
    ini[section][Lower(Trim(t.substr(0, eq)))] = Trim(t.substr(eq + 1));
  }
  return ini;
}

EnvLookup ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Result<AwsResolution> ResolveAwsCredentials(const AwsSettings& settings, const EnvLookup& env,
                                            AwsHttpSend send) {
  AwsResolution out;
  out.s3_endpoint =
      NonEmpty(env, "AWS_ENDPOINT_URL_S3").value_or(NonEmpty(env, "AWS_ENDPOINT_URL").value_or(""));
  const std::string home = HomeDir(env);
  const bool explicit_profile = !settings.profile.empty();
  const auto env_profile = NonEmpty(env, "AWS_PROFILE");
  const std::string profile = explicit_profile ? settings.profile : env_profile.value_or("default");
  Chain chain{env, std::move(send)};
  chain.credentials_path =
      NonEmpty(env, "AWS_SHARED_CREDENTIALS_FILE").value_or(home + "/.aws/credentials");
  chain.config_path = NonEmpty(env, "AWS_CONFIG_FILE").value_or(home + "/.aws/config");
  if (settings.credentials_file.empty()) {
    B2NDFS_ASSIGN_OR_RETURN(chain.credentials, ReadIni(chain.credentials_path, false));
  } else {
    chain.credentials_path = settings.credentials_file;
    B2NDFS_ASSIGN_OR_RETURN(chain.credentials, ReadIni(chain.credentials_path, true));
  }
  {
    // A missing or broken config file only costs what it would say.
    auto config = ReadIni(chain.config_path, false);
    if (config.ok()) chain.config = std::move(*config);
  }

  if (!settings.region.empty()) {
    out.region = settings.region;
  } else if (auto region = NonEmpty(env, "AWS_REGION")) {
    out.region = *region;
  } else if (auto default_region = NonEmpty(env, "AWS_DEFAULT_REGION")) {
    out.region = *default_region;
  } else {
    out.region =
        IniValue(chain.config, profile == "default" ? "default" : "profile " + profile, "region");
    if (out.region.empty()) out.region = IniValue(chain.credentials, profile, "region");
    if (out.region.empty()) out.region = "us-east-1";
  }
  chain.region = out.region;
  if (settings.no_sign) return out;

  if (!settings.credentials_file.empty()) {
    // credentials=FILE: that file's keys and nothing else.
    auto it = chain.credentials->find(profile);
    if (it == chain.credentials->end()) {
      return Status(ENOENT, "no profile [" + profile + "] in " + chain.credentials_path);
    }
    B2NDFS_ASSIGN_OR_RETURN(
        AwsCredentials keys,
        KeysOf(it->second, "profile [" + profile + "] in " + chain.credentials_path));
    out.source = StaticCredentialSource(std::move(keys),
                                        "profile " + profile + " in " + chain.credentials_path);
    return out;
  }
  if (!explicit_profile &&
      (NonEmpty(env, "AWS_ACCESS_KEY_ID") || NonEmpty(env, "AWS_SECRET_ACCESS_KEY"))) {
    B2NDFS_ASSIGN_OR_RETURN(out.source, chain.Environment());
    return out;
  }
  const std::optional<Section> p = chain.Profile(profile);
  if (!p && (explicit_profile || env_profile)) {
    return Status(ENOENT, "no profile [" + profile + "] in " + chain.Where());
  }
  // A profile's role first, then a web identity of the environment, then
  // the profile's keys or program (the SDKs' order).
  if (p && !Get(*p, "role_arn").empty()) {
    B2NDFS_ASSIGN_OR_RETURN(out.source, chain.FromProfile(profile, *p, 0));
    return out;
  }
  // (profile= turns the environment's web identity off, as it does its keys.)
  if (auto token_file = NonEmpty(env, "AWS_WEB_IDENTITY_TOKEN_FILE");
      token_file && !explicit_profile) {
    auto role_arn = NonEmpty(env, "AWS_ROLE_ARN");
    if (!role_arn) return Status(EACCES, "AWS_WEB_IDENTITY_TOKEN_FILE without AWS_ROLE_ARN");
    Section names;
    if (auto name = NonEmpty(env, "AWS_ROLE_SESSION_NAME")) names["role_session_name"] = *name;
    B2NDFS_ASSIGN_OR_RETURN(StsRole role, chain.Role(names, *role_arn));
    out.source = WebIdentitySource(std::move(role), *token_file, chain.send);
    return out;
  }
  if (p) {
    B2NDFS_ASSIGN_OR_RETURN(out.source, chain.FromProfile(profile, *p, 0));
    if (out.source) return out;
  }
  B2NDFS_ASSIGN_OR_RETURN(out.source, chain.Container());
  if (out.source) return out;
  const std::string none = "no AWS credentials: neither AWS_ACCESS_KEY_ID in the environment nor " +
                           chain.credentials_path +
                           " (use credentials=FILE, or no_sign for a public bucket)";
  if (chain.ImdsDisabled()) return Status(ENOENT, none + "; AWS_EC2_METADATA_DISABLED is set");
  // Last: the instance's role, if this is an EC2 instance.
  out.source = chain.Imds("; and " + none);
  return out;
}

Result<AwsIdentity> ResolveAwsIdentity(const AwsSettings& settings, const EnvLookup& env) {
  B2NDFS_ASSIGN_OR_RETURN(AwsResolution resolved, ResolveAwsCredentials(settings, env));
  AwsIdentity id;
  id.region = resolved.region;
  if (!resolved.source) {
    id.origin = "no_sign (anonymous)";
    return id;
  }
  id.origin = resolved.source->Describe();
  if (!resolved.source->is_static()) {
    return Status(ENOENT, "no AWS credentials without asking " + id.origin +
                              " (use credentials=FILE, or no_sign for a public bucket)");
  }
  B2NDFS_ASSIGN_OR_RETURN(ExpiringCredentials keys, resolved.source->Fetch());
  id.credentials = std::move(keys.keys);
  return id;
}

}  // namespace b2ndfs::remote
