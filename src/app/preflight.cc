#include "preflight.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "b2ndfs/remote/aws_credential_provider.h"
#include "b2ndfs/remote/aws_credentials.h"
#include "b2ndfs/remote/azure_tree.h"
#include "b2ndfs/remote/disk_cache.h"
#include "b2ndfs/remote/http_tree.h"
#include "b2ndfs/remote/s3_tree.h"
#include "b2ndfs/stores/store_tree.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"

namespace b2ndfs::app {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string UnescapeOctal(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' && field[i + 1] <= '3' &&
        field[i + 2] >= '0' && field[i + 2] <= '7' && field[i + 3] >= '0' && field[i + 3] <= '7') {
      out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                               (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

// A file named by an option, as an absolute path (the daemon changes to /),
// readable now; `secret`: refused when every user may read it.
Result<std::string> OptionFile(const std::string& option, const std::string& path, bool secret) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) {
    const int e = errno;
    return Status(e, option + path + ": " + std::strerror(e));
  }
  std::string absolute = real;
  std::free(real);
  struct stat st;
  if (::stat(absolute.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status(EINVAL, option + path + ": not a regular file");
  }
  if (secret && (st.st_mode & S_IROTH) != 0) {
    return Status(EACCES, option + path + " may be read by every user: chmod o-r it (it holds " +
                              "passwords)");
  }
  if (!std::ifstream(absolute)) return Status(EACCES, option + path + ": cannot be read");
  return absolute;
}

// az:// and https://ACCOUNT.blob.core... (README.md, "Azure Blob Storage").
Result<std::shared_ptr<source::Tree>> OpenAzureSource(const CommandLine& cl,
                                                      const remote::RemoteOptions& options) {
  remote::AzureOptions azure;
  azure.remote = options;
  azure.endpoint = cl.endpoint;
  azure.no_sign = cl.no_sign;
  if (!cl.credentials.empty()) {
    B2NDFS_ASSIGN_OR_RETURN(azure.credentials_file,
                            OptionFile("credentials=", cl.credentials, true));
  }
  std::string origin;
  auto tree = remote::OpenAzureTree(cl.source, azure, &origin);
  if (!tree.ok()) {
    const int e = tree.status().error_number();
    return Status(e, "source " + tree.status().message() + " (" + std::strerror(e) + ")");
  }
  // Where the credentials came from, never them.
  Log(LogLevel::kDebug, (*tree)->root() + ": credentials from " + origin);
  return tree;
}

bool IsFuseType(const std::string& type) {
  return type == "fuse" || type == "fuseblk" || type.rfind("fuse.", 0) == 0;
}

}  // namespace

Status CheckSourceKind(const std::string& source) {
  struct stat st;
  if (::stat(source.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return Status::Ok();
  const size_t slash = source.find_last_of('/');
  const std::string name = slash == std::string::npos ? source : source.substr(slash + 1);
  if (vfs::HasContainerExtension(name) || stores::HasStoreExtension(name)) return Status::Ok();
  return InvalidArgument("source " + source +
                         " is a plain file, not a container (expected a directory or a "
                         ".b2nd, .b2frame, .b2f, .b2, .caterva, .cat, .b2z or .b2e file)");
}

std::optional<std::string> MountedTypeAt(const std::string& mountinfo, const std::string& path) {
  std::optional<std::string> type;
  std::istringstream lines(mountinfo);
  std::string line;
  while (std::getline(lines, line)) {
    // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER"
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string w; words >> w;) fields.push_back(w);
    if (fields.size() < 7 || UnescapeOctal(fields[4]) != path) continue;
    for (size_t i = 6; i + 1 < fields.size(); ++i) {
      if (fields[i] == "-") {
        type = fields[i + 1];  // later lines are mounted on top of earlier ones
        break;
      }
    }
  }
  return type;
}

Status CheckMountpointFree(const std::string& mountpoint) {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return Status::Ok();  // no /proc: nothing to check against
  std::stringstream text;
  text << in.rdbuf();
  const auto type = MountedTypeAt(text.str(), mountpoint);
  if (type && IsFuseType(*type)) {
    return Status(EBUSY, "mountpoint " + mountpoint + " already has a " + *type +
                             " file system mounted on it; unmount it first (fusermount3 -u " +
                             mountpoint + ")");
  }
  return Status::Ok();
}

Result<std::string> PrepareMountpoint(const std::string& mountpoint) {
  struct stat st;
  if (mountpoint.rfind("/dev/fd/", 0) == 0 && mountpoint.size() > 8 &&
      mountpoint.find_first_not_of("0123456789", 8) == std::string::npos) {
    const int fd = std::atoi(mountpoint.c_str() + 8);
    // /dev/fuse is character device 10:229 (the kernel's FUSE_MINOR).
    if (::fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(10, 229)) {
      return Status(EBADF, "mountpoint " + mountpoint + " is not an open /dev/fuse descriptor");
    }
    return mountpoint;
  }
  char* resolved = ::realpath(mountpoint.c_str(), nullptr);
  if (resolved == nullptr || ::stat(resolved, &st) != 0) {
    const int e = errno;
    std::free(resolved);
    // ENOTCONN: what a FUSE mount whose daemon died looks like.
    return Status(e, "mountpoint " + mountpoint + ": " +
                         (e == ENOENT ? std::string("does not exist") : std::strerror(e)) +
                         (e == ENOTCONN ? " (a stale FUSE mount? fusermount3 -u it first)" : ""));
  }
  std::string absolute = resolved;
  std::free(resolved);
  if (!S_ISDIR(st.st_mode)) {
    return Status(ENOTDIR, "mountpoint " + absolute + " is not a directory");
  }
  B2NDFS_RETURN_IF_ERROR(CheckMountpointFree(absolute));
  return absolute;
}

Result<std::shared_ptr<source::Tree>> OpenRemoteTree(const CommandLine& cl,
                                                     cache::BlockCache* cache) {
  std::string scheme = cl.source.substr(0, cl.source.find("://"));
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  remote::RemoteOptions options;
  options.cache = cache;
  options.http.timeout = cl.timeout > 0 ? cl.timeout : kDefaultTimeout;
  options.http.retries = cl.retries >= 0 ? cl.retries : kDefaultRetries;
  if (cl.connections > 0) options.http.connections = static_cast<size_t>(cl.connections);
  if (cl.revalidate >= 0) options.revalidate = cl.revalidate;
  options.disk_cache_dir = cl.disk_cache;
  // A directory others could plant ranges in refuses the mount (one that
  // another daemon holds only mounts without it: the tree's open says so).
  if (!cl.disk_cache.empty()) {
    B2NDFS_RETURN_IF_ERROR(remote::DiskCache::CheckDirectory(cl.disk_cache));
  }
  if (!cl.ca_file.empty()) {
    B2NDFS_ASSIGN_OR_RETURN(options.http.ca_file, OptionFile("ca_file=", cl.ca_file, false));
  }
  if (cl.disk_cache_size > 0) options.disk_cache_size = cl.disk_cache_size;
  if (remote::IsAzureUrl(cl.source)) return OpenAzureSource(cl, options);
  Result<std::shared_ptr<source::Tree>> tree = Status(EINVAL, "unset");
  if (scheme == "s3") {
    remote::AwsSettings settings;
    settings.profile = cl.profile;
    settings.credentials_file = cl.credentials;
    settings.region = cl.region;
    settings.no_sign = cl.no_sign;
    auto resolved = remote::ResolveAwsCredentials(settings, remote::ProcessEnvironment());
    if (!resolved.ok()) {
      return Status(resolved.status().error_number(),
                    "source " + cl.source + ": " + resolved.status().message());
    }
    remote::S3Options s3;
    s3.remote = options;
    s3.endpoint = cl.endpoint.empty() ? resolved->s3_endpoint : cl.endpoint;
    s3.region = resolved->region;
    std::string origin = "no_sign (anonymous)";
    if (resolved->source) {
      auto provider = remote::CredentialProvider::Create(std::move(resolved->source));
      if (!provider.ok()) {
        return Status(provider.status().error_number(),
                      "source " + cl.source + ": " + provider.status().message());
      }
      s3.credential_provider = std::move(*provider);
      origin = s3.credential_provider->Describe();
    }
    // Which source won and until when, never the keys.
    Log(LogLevel::kInfo, cl.source + ": s3 credentials from " + origin + "; region " + s3.region);
    tree = remote::OpenS3Tree(cl.source, s3);
  } else {
    if (!cl.credentials.empty()) {
      B2NDFS_ASSIGN_OR_RETURN(options.http.netrc_file,
                              OptionFile("credentials=", cl.credentials, true));
    }
    // Logged: on the terminal that mounts, as the daemon has not detached.
    options.warn = [](const std::string& warning) { Log(LogLevel::kWarning, warning); };
    tree = remote::OpenHttpTree(cl.source, options);
  }
  if (!tree.ok()) {
    const int e = tree.status().error_number();
    return Status(e, "source " + tree.status().message() + " (" + std::strerror(e) + ")");
  }
  return tree;
}

Result<uint64_t> RaiseOpenFileLimit() {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    const int e = errno;
    return Status(e, std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(e));
  }
  if (limit.rlim_cur != limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      const int e = errno;
      return Status(e, std::string("setrlimit(RLIMIT_NOFILE): ") + std::strerror(e));
    }
  }
  return static_cast<uint64_t>(limit.rlim_cur);
}

}  // namespace b2ndfs::app
