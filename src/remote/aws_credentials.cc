#include "b2ndfs/remote/aws_credentials.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "b2ndfs/util/log.h"

namespace b2ndfs::remote {
namespace {

std::string Trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

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

Result<AwsCredentials> FromProfile(const IniFile& ini, const std::string& profile,
                                   const std::string& path) {
  auto it = ini.find(profile);
  if (it == ini.end()) return Status(ENOENT, "no profile [" + profile + "] in " + path);
  auto get = [&](const char* key) {
    auto k = it->second.find(key);
    return k == it->second.end() ? std::string() : k->second;
  };
  AwsCredentials c;
  c.access_key_id = get("aws_access_key_id");
  c.secret_access_key = get("aws_secret_access_key");
  c.session_token = get("aws_session_token");
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return Status(EACCES, "profile [" + profile + "] in " + path +
                              " lacks aws_access_key_id or aws_secret_access_key");
  }
  return c;
}

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

Result<AwsIdentity> ResolveAwsIdentity(const AwsSettings& settings, const EnvLookup& env) {
  AwsIdentity id;
  const std::string home = HomeDir(env);
  const std::string profile = !settings.profile.empty()
                                  ? settings.profile
                                  : NonEmpty(env, "AWS_PROFILE").value_or("default");
  const std::string shared_path =
      NonEmpty(env, "AWS_SHARED_CREDENTIALS_FILE").value_or(home + "/.aws/credentials");
  const std::string config_path = NonEmpty(env, "AWS_CONFIG_FILE").value_or(home + "/.aws/config");

  std::optional<IniFile> credentials_ini;
  std::string credentials_path;
  if (settings.no_sign) {
    id.origin = "no_sign (anonymous)";
  } else if (!settings.credentials_file.empty()) {
    credentials_path = settings.credentials_file;
    B2NDFS_ASSIGN_OR_RETURN(credentials_ini, ReadIni(credentials_path, true));
    B2NDFS_ASSIGN_OR_RETURN(id.credentials,
                            FromProfile(*credentials_ini, profile, credentials_path));
    id.origin = "profile " + profile + " in " + credentials_path;
  } else {
    const auto key = NonEmpty(env, "AWS_ACCESS_KEY_ID");
    const auto secret = NonEmpty(env, "AWS_SECRET_ACCESS_KEY");
    const bool use_env = settings.profile.empty() && (key || secret);
    if (use_env) {
      if (!key || !secret) {
        return Status(EACCES, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together");
      }
      AwsCredentials c{*key, *secret, NonEmpty(env, "AWS_SESSION_TOKEN").value_or("")};
      id.credentials = std::move(c);
      id.origin = "the environment";
    } else {
      credentials_path = shared_path;
      B2NDFS_ASSIGN_OR_RETURN(credentials_ini, ReadIni(credentials_path, false));
      if (!credentials_ini) {
        return Status(ENOENT,
                      "no AWS credentials: neither AWS_ACCESS_KEY_ID in the environment "
                      "nor " +
                          credentials_path +
                          " (use credentials=FILE, or no_sign for a public bucket)");
      }
      B2NDFS_ASSIGN_OR_RETURN(id.credentials,
                              FromProfile(*credentials_ini, profile, credentials_path));
      id.origin = "profile " + profile + " in " + credentials_path;
    }
  }

  if (!settings.region.empty()) {
    id.region = settings.region;
  } else if (auto region = NonEmpty(env, "AWS_REGION")) {
    id.region = *region;
  } else if (auto default_region = NonEmpty(env, "AWS_DEFAULT_REGION")) {
    id.region = *default_region;
  } else {
    // A missing or broken config file only costs the region.
    auto config = ReadIni(config_path, false);
    const std::optional<IniFile> none;
    const std::optional<IniFile>& cfg = config.ok() ? *config : none;
    id.region = IniValue(cfg, profile == "default" ? "default" : "profile " + profile, "region");
    if (id.region.empty()) id.region = IniValue(credentials_ini, profile, "region");
    if (id.region.empty()) id.region = "us-east-1";
  }
  return id;
}

}  // namespace b2ndfs::remote
