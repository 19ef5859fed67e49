// b2ndfs-inspect: look inside a container without mounting it, through the
// same core the filesystem uses (as squashfuse_ls reuses its format library).
//
//   b2ndfs-inspect meta CONTAINER                 print meta.json
//   b2ndfs-inspect ls CONTAINER [DIR]             list a directory of the container view
//   b2ndfs-inspect read CONTAINER FILE [OFFSET [LENGTH]]
//                                                 write bytes of a virtual file to stdout
//                                                 (FILE: data, data.npy, chunks/0.1, slices/0/07)
//   b2ndfs-inspect check [--quick] DIR|CONTAINER  every container below DIR, one line each
//                                                 (all its data read, or only its metadata);
//                                                 exit 1 when any is broken
// Each problem is reported once, by the tool (the core's own log lines are
// not printed: they would repeat it).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"

namespace {

using namespace b2ndfs;

int Fail(const std::string& message) {
  std::fprintf(stderr, "b2ndfs-inspect: %s\n", message.c_str());
  return 1;
}

// Asked for (--help): stdout, success; a wrong command line: stderr, 2.
int Usage(bool asked = false) {
  std::fputs(
      "usage: b2ndfs-inspect meta CONTAINER\n"
      "       b2ndfs-inspect ls CONTAINER [DIR]\n"
      "       b2ndfs-inspect read CONTAINER FILE [OFFSET [LENGTH]]\n"
      "       b2ndfs-inspect check [--quick] DIR|CONTAINER\n",
      asked ? stdout : stderr);
  return asked ? 0 : 2;
}

// Walks a slash-separated path from the container's root.
Result<vfs::Ino> Walk(vfs::Filesystem& fs, const std::string& path) {
  vfs::Ino ino = vfs::kRootIno;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    std::string part =
        path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (!part.empty()) {
      auto attr = fs.Lookup(ino, part);
      if (!attr.ok()) return attr.status().WithContext(part);
      ino = attr->st.st_ino;
    }
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  return ino;
}

// The reason of a meta.json that is {"error": "REASON"}; empty for a
// container that decodes.
std::string ErrorOf(const std::string& meta_json) {
  const size_t brace = meta_json.find_first_not_of(" \t\r\n");
  const std::string key = "\"error\"";
  if (brace == std::string::npos || meta_json[brace] != '{') return "";
  const size_t at = meta_json.find_first_not_of(" \t\r\n", brace + 1);
  if (at == std::string::npos || meta_json.compare(at, key.size(), key) != 0) return "";
  const size_t open = meta_json.find('"', meta_json.find(':', at + key.size()));
  std::string reason;
  for (size_t i = open + 1; open != std::string::npos && i < meta_json.size(); ++i) {
    if (meta_json[i] == '"') break;
    if (meta_json[i] == '\\' && i + 1 < meta_json.size()) ++i;
    reason += meta_json[i];
  }
  return reason.empty() ? "cannot be decoded" : reason;
}

// The core's read errors start with the container's name; said once here.
std::string Unprefixed(const std::string& message, const std::string& path) {
  const std::string prefix = path + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

// One container, opened as the inspect commands open it.
struct Inspected {
  explicit Inspected(const std::string& source) : cache(256u << 20), decompressors(4) {
    store.cache = &cache;
    store.decompressors = &decompressors;
    vfs::Options options;
    options.source = source;
    fs = std::make_unique<vfs::Filesystem>(options, &store);
  }
  cache::BlockCache cache;
  codec::DecompressorPool decompressors;
  store::StoreContext store;
  std::unique_ptr<vfs::Filesystem> fs;
};

// Reads [offset, offset + length) of a file of the container (to the end
// when length < 0), handing each piece to `out`.
template <typename Out>
Status ReadFile(vfs::Filesystem& fs, vfs::Ino ino, int64_t offset, int64_t length, Out out) {
  B2NDFS_ASSIGN_OR_RETURN(vfs::Attr attr, fs.GetAttr(ino));
  B2NDFS_ASSIGN_OR_RETURN(vfs::FileHandle handle, fs.Open(ino, 0));
  if (length < 0) length = attr.st.st_size - offset;
  std::vector<uint8_t> buffer(1 << 20);
  while (length > 0) {
    const size_t want =
        static_cast<size_t>(std::min<int64_t>(length, static_cast<int64_t>(buffer.size())));
    B2NDFS_ASSIGN_OR_RETURN(size_t n, fs.Read(handle, offset, want, buffer.data()));
    if (n == 0) break;
    B2NDFS_RETURN_IF_ERROR(out(buffer.data(), n));
    offset += static_cast<int64_t>(n);
    length -= static_cast<int64_t>(n);
  }
  return Status::Ok();
}

Result<std::string> MetaJson(vfs::Filesystem& fs) {
  B2NDFS_ASSIGN_OR_RETURN(vfs::Ino ino, Walk(fs, "meta.json"));
  std::string text;
  B2NDFS_RETURN_IF_ERROR(ReadFile(fs, ino, 0, -1, [&](const uint8_t* p, size_t n) {
    text.append(reinterpret_cast<const char*>(p), n);
    return Status::Ok();
  }));
  return text;
}

// "" when the container decodes (and, unless quick, all its data reads).
std::string Problem(const std::string& path, bool quick) {
  Inspected c(path);
  auto meta = MetaJson(*c.fs);
  if (!meta.ok()) return meta.status().message();
  if (std::string error = ErrorOf(*meta); !error.empty()) return error;
  if (quick) return "";
  auto data = Walk(*c.fs, "data");
  if (!data.ok()) return "no data file: " + data.status().message();
  Status read = ReadFile(*c.fs, *data, 0, -1, [](const uint8_t*, size_t) { return Status::Ok(); });
  return read.ok() ? "" : Unprefixed(read.message(), path);
}

// check: every container at or below `root` (not inside a container).
int Check(const std::string& root, bool quick) {
  namespace fs = std::filesystem;
  std::vector<std::string> containers;
  std::error_code ec;
  if (vfs::HasContainerExtension(fs::path(root).filename().string())) {
    containers.push_back(root);
  } else {
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    if (ec) return Fail(root + ": " + ec.message());
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) return Fail(root + ": " + ec.message());
      if (!vfs::HasContainerExtension(it->path().filename().string())) continue;
      containers.push_back(it->path().string());
      // A sparse-frame container is a directory: its chunk files are its own.
      if (it->is_directory(ec)) it.disable_recursion_pending();
    }
  }
  std::sort(containers.begin(), containers.end());
  int broken = 0;
  for (const std::string& path : containers) {
    const std::string problem = Problem(path, quick);
    if (problem.empty()) {
      std::printf("ok      %s\n", path.c_str());
    } else {
      std::printf("BROKEN  %s: %s\n", path.c_str(), problem.c_str());
      ++broken;
    }
  }
  std::fflush(stdout);
  std::fprintf(stderr, "b2ndfs-inspect: %zu container(s), %d broken%s\n", containers.size(), broken,
               quick ? " (metadata only)" : "");
  return broken > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    return Usage(true);
  }
  if (argc < 3) return Usage();
  // The tool reports each problem itself, once.
  SetLogToStderr(false);
  const std::string command = argv[1];
  if (command == "check") {
    const bool quick = std::strcmp(argv[2], "--quick") == 0;
    if (argc != (quick ? 4 : 3)) return Usage();
    const std::string root = argv[quick ? 3 : 2];
    if (Status s = vfs::Filesystem::ValidateSource(root); !s.ok()) return Fail(s.message());
    return Check(root, quick);
  }
  const std::string source = argv[2];
  if (Status s = vfs::Filesystem::ValidateSource(source); !s.ok()) return Fail(s.message());

  Inspected inspected(source);
  vfs::Filesystem& fs = *inspected.fs;

  if (command == "ls") {
    auto ino = Walk(fs, argc > 3 ? argv[3] : "");
    if (!ino.ok()) return Fail(ino.status().message());
    auto listing = fs.OpenDir(*ino);
    if (!listing.ok()) return Fail(listing.status().message());
    for (size_t i = 0; i < (*listing)->size(); ++i) {
      auto entry = (*listing)->at(i);
      std::printf("%s%s\n", entry.name.c_str(), S_ISDIR(entry.type) ? "/" : "");
    }
    return 0;
  }
  if (command == "meta") {
    auto meta = MetaJson(fs);
    if (!meta.ok()) return Fail(source + ": " + meta.status().message());
    std::fputs(meta->c_str(), stdout);
    // {"error": ...} is printed (it is what meta.json says), and fails.
    return ErrorOf(*meta).empty() ? 0 : 1;
  }
  if (command != "read" || argc < 4) return Usage();
  const std::string file = argv[3];
  auto ino = Walk(fs, file);
  if (!ino.ok()) {
    // Say why: a container that cannot be decoded has only meta.json.
    auto meta = MetaJson(fs);
    const std::string error = meta.ok() ? ErrorOf(*meta) : meta.status().message();
    if (!error.empty()) {
      return Fail(source + ": cannot be decoded (" + error + "), so it has no " + file);
    }
    return Fail(source + ": no file " + file + " in it (b2ndfs-inspect ls lists its files)");
  }
  const int64_t offset = argc > 4 ? std::strtoll(argv[4], nullptr, 10) : 0;
  const int64_t length = argc > 5 ? std::strtoll(argv[5], nullptr, 10) : -1;
  Status read = ReadFile(fs, *ino, offset, length, [](const uint8_t* p, size_t n) {
    return std::fwrite(p, 1, n, stdout) == n ? Status::Ok() : Status(EIO, "write failed");
  });
  if (!read.ok()) return Fail(source + ": " + file + ": " + Unprefixed(read.message(), source));
  return 0;
}
