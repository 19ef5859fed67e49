#include "options.h"

#include <cctype>
#include <cstdlib>

namespace b2ndfs::app {
namespace {

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Options that belong to mount(8), fstab or systemd; other FUSE filesystems
// accept and ignore them, so we do too.
bool IsIgnoredMountOption(const std::string& option) {
  static const char* const kIgnored[] = {
      "_netdev", "nofail", "noauto", "auto", "defaults", "user",        "users", "nouser",
      "owner",   "group",  "rw",     "ro",   "comment",  "x-gvfs-show", "sw",    "_rnetdev"};
  const std::string name = option.substr(0, option.find('='));
  for (const char* ignored : kIgnored) {
    if (name == ignored) return true;
  }
  return StartsWith(option, "x-") || StartsWith(option, "comment=");
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

Status AddOption(CommandLine& cl, const std::string& option) {
  if (option.empty() || IsIgnoredMountOption(option)) return Status::Ok();
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
    const std::string value = option.substr(8);
    char* end = nullptr;
    long n = value.empty() ? -1 : std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || n < 1 || n > 1024) {
      return InvalidArgument("bad value in '" + option + "': expected a number from 1 to 1024");
    }
    cl.threads = static_cast<int>(n);
    return Status::Ok();
  }
  if (option == "allow_other") cl.allow_other = true;
  if (option == "default_permissions") cl.has_default_permissions = true;
  cl.fuse_options.push_back(option);
  return Status::Ok();
}

}  // namespace

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
      for (const auto& option : SplitOptions(value)) B2NDFS_RETURN_IF_ERROR(AddOption(cl, option));
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
  return cl;
}

std::string Usage(const std::string& program) {
  return "usage: " + program +
         " [-f] [-d] [-s] [-o OPTION[,OPTION...]] SOURCE MOUNTPOINT\n"
         "\n"
         "Mounts the Blosc2 b2nd containers under SOURCE (a directory, or one container)\n"
         "read-only at MOUNTPOINT, each as a directory of plain files.\n"
         "\n"
         "options:\n"
         "  -f                     stay in the foreground\n"
         "  -d                     debug: foreground, log every FUSE request\n"
         "  -s                     single-threaded FUSE loop\n"
         "  -o cache_size=SIZE     bytes of decompressed blocks to keep (K, M, G suffixes);\n"
         "                         default: 1/8 of RAM, at most 4G\n"
         "  -o threads=N           decompression workers (default: number of CPUs)\n"
         "  -o readahead=SIZE      how far ahead of a sequential reader blocks are\n"
         "                         decompressed (default 8M; 0 turns it off)\n"
         "  -o allow_other         let other users in (permission bits still apply)\n"
         "  -o OPTION              any other libfuse mount option; fstab/systemd options\n"
         "                         (_netdev, nofail, noauto, x-systemd.*, defaults) are ignored\n";
}

}  // namespace b2ndfs::app
