#include "options.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "b2ndfs/remote/azure_tree.h"
#include "b2ndfs/views/view.h"

namespace b2ndfs::app {
namespace {

constexpr long kMaxThreads = 1024;
constexpr long kMaxOpen = 1 << 20;

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Options that belong to mount(8), fstab or systemd; other FUSE filesystems
// accept and ignore them, so we do too.
bool IsIgnoredMountOption(const std::string& option) {
  static const char* const kIgnored[] = {
      "_netdev", "nofail",      "noauto", "auto",     "defaults", "user",
      "users",   "nouser",      "owner",  "group",    "rw",       "ro",
      "comment", "x-gvfs-show", "sw",     "_rnetdev", "nonempty"};
  const std::string name = option.substr(0, option.find('='));
  for (const char* ignored : kIgnored) {
    if (name == ignored) return true;
  }
  return StartsWith(option, "x-") || StartsWith(option, "comment=");
}

// The mount options libfuse 3.14 itself takes (lib/mount.c and
// fuse_lowlevel.c): passed on. Anything else would reach libfuse as "unknown
// option(s)" after the command line was accepted, so it is refused here.
bool IsFuseMountOption(const std::string& option) {
  static const char* const kFlags[] = {
      "allow_other", "allow_root",  "auto_unmount",  "blkdev",     "default_permissions",
      "debug",       "suid",        "nosuid",        "dev",        "nodev",
      "exec",        "noexec",      "async",         "sync",       "dirsync",
      "atime",       "noatime",     "diratime",      "nodiratime", "relatime",
      "norelatime",  "strictatime", "nostrictatime", "lazytime",   "nolazytime"};
  static const char* const kValued[] = {"fsname=",  "subtype=",   "blksize=",    "max_read=",
                                        "context=", "fscontext=", "defcontext=", "rootcontext="};
  for (const char* flag : kFlags) {
    if (option == flag) return true;
  }
  for (const char* prefix : kValued) {
    if (StartsWith(option, prefix) && option.size() > std::strlen(prefix)) return true;
  }
  return false;
}

// Splits a -o argument on commas; "\," escapes a comma.
std::vector<std::string> SplitOptions(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      current += text[++i];
    } else if (text[i] == ',') {
      out.push_back(current);
      current.clear();
    } else {
      current += text[i];
    }
  }
  out.push_back(current);
  return out;
}

bool IsViewKind(const std::string& name) {
  for (const auto& [kind, files] : views::Registry::Kinds()) {
    if (name == kind) return true;
  }
  return false;
}

std::string KnownKinds() {
  std::string known;
  for (const auto& [name, files] : views::Registry::Kinds()) {
    known += (known.empty() ? "" : ", ") + name;
  }
  return known;
}

// Parses the value of "name=N" as an integer in [min, max].
Result<int> ParseIntOption(const std::string& option, size_t name_length, long min, long max) {
  const std::string value = option.substr(name_length);
  char* end = nullptr;
  errno = 0;
  const long n = value.empty() ? 0 : std::strtol(value.c_str(), &end, 10);
  if (value.empty() || !std::isdigit(static_cast<unsigned char>(value[0])) || *end != '\0' ||
      errno == ERANGE || n < min || n > max) {
    return InvalidArgument("bad value in '" + option + "': expected a number from " +
                           std::to_string(min) + " to " + std::to_string(max));
  }
  return static_cast<int>(n);
}

// Parses the value of "name=SECONDS" as a number in [min, max] (`range`
// says so in the message).
Result<double> ParseSecondsOption(const std::string& option, size_t name_length, double min,
                                  double max, const char* range) {
  const std::string value = option.substr(name_length);
  char* end = nullptr;
  errno = 0;
  const double seconds = value.empty() ? 0 : std::strtod(value.c_str(), &end);
  if (value.empty() || !std::isdigit(static_cast<unsigned char>(value[0])) || *end != '\0' ||
      errno == ERANGE || !(seconds >= min && seconds <= max)) {
    return InvalidArgument("bad value in '" + option + "': expected seconds from " + range);
  }
  return seconds;
}

// The groups of b2ndfs's own options: each returns nullopt when `option`
// is none of its group's.
// Memory and threads of the core.
std::optional<Status> AddEngineOption(CommandLine& cl, const std::string& option) {
  if (StartsWith(option, "cache_size=")) {
    auto size = ParseSize(option.substr(11));
    if (!size) return InvalidArgument("bad value in '" + option + "': expected e.g. 512M or 2G");
    cl.cache_size = static_cast<size_t>(*size);
    return Status::Ok();
  }
  if (StartsWith(option, "readahead=")) {
    auto size = ParseSize(option.substr(10));
    if (!size) return InvalidArgument("bad value in '" + option + "': expected e.g. 8M or 0");
    cl.readahead = static_cast<int64_t>(*size);
    return Status::Ok();
  }
  if (StartsWith(option, "threads=")) {
    B2NDFS_ASSIGN_OR_RETURN(cl.threads, ParseIntOption(option, 8, 1, kMaxThreads));
    return Status::Ok();
  }
  if (StartsWith(option, "max_threads=")) {
    B2NDFS_ASSIGN_OR_RETURN(cl.max_threads, ParseIntOption(option, 12, 1, kMaxThreads));
    return Status::Ok();
  }
  if (StartsWith(option, "max_open=")) {
    B2NDFS_ASSIGN_OR_RETURN(cl.max_open, ParseIntOption(option, 9, 0, kMaxOpen));
    return Status::Ok();
  }
  if (option == "no_hugepages") {
    cl.no_hugepages = true;
    return Status::Ok();
  }
  return std::nullopt;
}

// Remote sources: time, retries, connections, where keys are, the disk
// cache.
std::optional<Status> AddRemoteOption(CommandLine& cl, const std::string& option) {
  if (StartsWith(option, "timeout=")) {
    B2NDFS_ASSIGN_OR_RETURN(cl.timeout, ParseSecondsOption(option, 8, 0.1, 3600, "0.1 to 3600"));
    return Status::Ok();
  }
  if (StartsWith(option, "retries=")) {
    B2NDFS_ASSIGN_OR_RETURN(cl.retries, ParseIntOption(option, 8, 0, 100));
    return Status::Ok();
  }
  if (StartsWith(option, "connections=")) {
    B2NDFS_ASSIGN_OR_RETURN(cl.connections, ParseIntOption(option, 12, 1, 1024));
    return Status::Ok();
  }
  if (StartsWith(option, "revalidate=")) {
    B2NDFS_ASSIGN_OR_RETURN(cl.revalidate, ParseSecondsOption(option, 11, 0, 86400, "0 to 86400"));
    return Status::Ok();
  }
  if (StartsWith(option, "prefetch_heads=")) {
    B2NDFS_ASSIGN_OR_RETURN(cl.prefetch_heads, ParseIntOption(option, 15, 0, 1 << 20));
    return Status::Ok();
  }
  // S3 settings; where credentials are (never the keys themselves: the
  // command line is visible in the process list).
  for (auto [name, field] : {std::pair<const char*, std::string*>{"endpoint=", &cl.endpoint},
                             {"region=", &cl.region},
                             {"profile=", &cl.profile},
                             {"credentials=", &cl.credentials},
                             {"ca_file=", &cl.ca_file}}) {
    if (StartsWith(option, name)) {
      *field = option.substr(std::strlen(name));
      if (field->empty()) return InvalidArgument("'" + option + "' needs a value");
      return Status::Ok();
    }
  }
  if (StartsWith(option, "disk_cache=")) {
    cl.disk_cache = option.substr(11);
    if (cl.disk_cache.empty()) return InvalidArgument("'" + option + "' needs a directory");
    return Status::Ok();
  }
  if (StartsWith(option, "disk_cache_size=")) {
    auto size = ParseSize(option.substr(16));
    if (!size || *size < (uint64_t{1} << 20)) {
      return InvalidArgument("bad value in '" + option +
                             "': expected e.g. 512M or 4G (at least 1M)");
    }
    cl.disk_cache_size = *size;
    return Status::Ok();
  }
  if (option == "no_sign") {
    cl.no_sign = true;
    return Status::Ok();
  }
  if (StartsWith(option, "access_key") || StartsWith(option, "secret_key") ||
      StartsWith(option, "aws_access_key_id") || StartsWith(option, "aws_secret_access_key")) {
    return InvalidArgument(
        "credentials are not taken on the command line (anyone can read it in the process "
        "list): use the AWS environment variables, ~/.aws/credentials (profile=) or "
        "credentials=FILE");
  }
  return std::nullopt;
}

// Logs, which views, inode numbers.
std::optional<Status> AddPresentationOption(CommandLine& cl, const std::string& option) {
  if (StartsWith(option, "log_access=")) {
    const std::string value = option.substr(11);
    if (value != "owner" && value != "all") {
      return InvalidArgument("bad value in '" + option + "': expected owner or all");
    }
    cl.log_access_all = value == "all";
    return Status::Ok();
  }
  if (option == "ino32") {
    cl.ino32 = true;
    return Status::Ok();
  }
  if (StartsWith(option, "log_file=")) {
    cl.log_file = option.substr(9);
    if (cl.log_file.empty()) return InvalidArgument("'" + option + "' needs a file name");
    return Status::Ok();
  }
  if (StartsWith(option, "views=")) {
    // views=meta,data,npy arrives split on its commas: the first kind here,
    // the others through ParseCommandLine's continuation (also views=a\,b).
    for (const std::string& kind : SplitOptions(option.substr(6))) {
      if (!IsViewKind(kind)) {
        return InvalidArgument("bad value in '" + option + "': '" + kind +
                               "' is not a kind of view (known: " + KnownKinds() + ")");
      }
      cl.views.push_back(kind);
    }
    return Status::Ok();
  }
  if (StartsWith(option, "log_level=")) {
    cl.log_level = ParseLogLevel(option.substr(10));
    if (!cl.log_level) {
      return InvalidArgument("bad value in '" + option +
                             "': expected error, warning, info or debug");
    }
    return Status::Ok();
  }
  return std::nullopt;
}

Status AddOption(CommandLine& cl, const std::string& option) {
  if (option.empty() || IsIgnoredMountOption(option)) return Status::Ok();
  for (auto* group : {AddEngineOption, AddRemoteOption, AddPresentationOption}) {
    if (std::optional<Status> added = group(cl, option)) return *added;
  }
  if (!IsFuseMountOption(option)) {
    return InvalidArgument("unknown option '" + option +
                           "' (neither one of b2ndfs's nor a libfuse mount option)");
  }
  if (option == "allow_other") cl.allow_other = true;
  if (option == "default_permissions") cl.has_default_permissions = true;
  cl.fuse_options.push_back(option);
  return Status::Ok();
}

}  // namespace

void HidePasswordsInArguments(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* arg = argv[i];
    char* scheme_end = std::strstr(arg, "://");
    if (scheme_end == nullptr) continue;
    char* authority = scheme_end + 3;
    char* at = nullptr;
    for (char* p = authority; *p != '\0' && *p != '/' && *p != '?' && *p != '#'; ++p) {
      if (*p == '@') at = p;
    }
    if (at == nullptr) continue;
    char* colon = std::find(authority, at, ':');
    for (char* p = colon == at ? colon : colon + 1; p < at; ++p) *p = '*';
  }
}

bool IsRemoteSource(const std::string& source) {
  std::string scheme = source.substr(0, source.find("://"));
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return source.find("://") != std::string::npos &&
         (scheme == "http" || scheme == "https" || scheme == "s3" || scheme == "az");
}

int DefaultMaxThreads(int decompression_threads) {
  return std::clamp(2 * decompression_threads, 10, 64);
}

std::optional<uint64_t> ParseSize(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  size_t pos = 0;
  uint64_t value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    if (value > (UINT64_MAX - 9) / 10) return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(text[pos++] - '0');
  }
  std::string suffix = text.substr(pos);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix == "B") suffix.clear();
  if (suffix.size() == 2 && suffix[1] == 'B') suffix.pop_back();         // "MB"
  if (suffix.size() == 3 && suffix.substr(1) == "IB") suffix.resize(1);  // "MiB"
  int shift = 0;
  if (suffix.empty()) {
    shift = 0;
  } else if (suffix == "K") {
    shift = 10;
  } else if (suffix == "M") {
    shift = 20;
  } else if (suffix == "G") {
    shift = 30;
  } else if (suffix == "T") {
    shift = 40;
  } else {
    return std::nullopt;
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

namespace {

// The options that only some kinds of SOURCE take (remote ones; s3:// or
// az:// ones), and those that exclude each other.
Status CheckSourceOptions(const CommandLine& cl) {
  if (!IsRemoteSource(cl.source) &&
      (cl.timeout > 0 || cl.retries >= 0 || cl.connections > 0 || cl.prefetch_heads >= 0 ||
       cl.revalidate >= 0 || !cl.endpoint.empty() || !cl.region.empty() || !cl.profile.empty() ||
       !cl.credentials.empty() || cl.no_sign || !cl.disk_cache.empty() || cl.disk_cache_size > 0 ||
       !cl.ca_file.empty())) {
    return InvalidArgument(
        "timeout=, retries=, connections=, prefetch_heads=, revalidate=, endpoint=, region=, "
        "profile=, "
        "credentials=, no_sign, ca_file=, disk_cache= and disk_cache_size= are for remote "
        "sources (http://, https://, s3://), not " +
        cl.source);
  }
  if (cl.disk_cache_size > 0 && cl.disk_cache.empty()) {
    return InvalidArgument("disk_cache_size= needs disk_cache=DIR");
  }
  // az:// (and https://ACCOUNT.blob.core...): endpoint=, credentials= or
  // no_sign (README.md, "Azure Blob Storage").
  if (remote::IsAzureUrl(cl.source)) {
    if (!cl.region.empty() || !cl.profile.empty()) {
      return InvalidArgument("region= and profile= are for s3:// sources, not az://");
    }
    if (cl.no_sign && !cl.credentials.empty()) {
      return InvalidArgument("no_sign (anonymous requests) excludes credentials=");
    }
    return Status::Ok();
  }
  std::string scheme = cl.source.substr(0, 5);
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "s3://" &&
      (!cl.endpoint.empty() || !cl.region.empty() || !cl.profile.empty() || cl.no_sign)) {
    return InvalidArgument("endpoint=, region=, profile= and no_sign are for s3:// sources");
  }
  if (cl.no_sign && (!cl.profile.empty() || !cl.credentials.empty())) {
    return InvalidArgument("no_sign (anonymous requests) excludes profile= and credentials=");
  }
  return Status::Ok();
}

}  // namespace

Result<CommandLine> ParseCommandLine(int argc, char** argv) {
  CommandLine cl;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      cl.show_help = true;
    } else if (arg == "-V" || arg == "--version") {
      cl.show_version = true;
    } else if (arg == "-f") {
      cl.foreground = true;
    } else if (arg == "-d" || arg == "--debug") {
      cl.debug = true;
      cl.foreground = true;
    } else if (arg == "-s") {
      cl.single_threaded = true;
    } else if (arg == "-o" || StartsWith(arg, "-o")) {
      std::string value;
      if (arg == "-o") {
        if (i + 1 >= argc) return InvalidArgument("-o needs an argument");
        value = argv[++i];
      } else {
        value = arg.substr(2);
      }
      // In "views=meta,data,npy" the names after the first are kinds too,
      // up to the first option that is not one.
      bool views_list = false;
      for (const auto& option : SplitOptions(value)) {
        if (views_list && IsViewKind(option)) {
          cl.views.push_back(option);
          continue;
        }
        Status added = AddOption(cl, option);
        if (!added.ok() && views_list && option.find('=') == std::string::npos) {
          // "views=meta,nii": most likely a misspelt kind, so say both.
          return InvalidArgument(
              "'" + option + "' after views= is neither a kind of view (known: " + KnownKinds() +
              ") nor an option");
        }
        B2NDFS_RETURN_IF_ERROR(added);
        views_list = StartsWith(option, "views=");
      }
    } else if (arg == "--") {
      for (++i; i < argc; ++i) positional.emplace_back(argv[i]);
    } else if (StartsWith(arg, "-") && arg.size() > 1) {
      return InvalidArgument("unknown option '" + arg + "'");
    } else {
      positional.push_back(arg);
    }
  }
  if (cl.show_help || cl.show_version) return cl;
  if (positional.size() != 2) {
    return InvalidArgument(positional.size() < 2 ? "missing SOURCE or MOUNTPOINT"
                                                 : "too many arguments");
  }
  cl.source = positional[0];
  cl.mountpoint = positional[1];
  B2NDFS_RETURN_IF_ERROR(CheckSourceOptions(cl));
  return cl;
}

}  // namespace b2ndfs::app
