// b2ndfs-inspect: look inside a source without mounting it, through the same
// core the filesystem uses (as squashfuse_ls reuses its format library):
// SOURCE is opened as the daemon opens it (inspect.h), so containers, stores
// and their leaves, CTables, carriers, items and batches read and fail as in
// a mount (README.md, "Inspecting without mounting").
//
//   b2ndfs-inspect meta SOURCE [DIR]              print meta.json (of DIR below SOURCE)
//   b2ndfs-inspect ls SOURCE [DIR]                list a directory as the mount shows it
//   b2ndfs-inspect read SOURCE FILE [OFFSET [LENGTH]]
//                                                 write bytes of a file to stdout
//                                                 (FILE: data, data.npy, chunks/0.1, slices/0/07,
//                                                 view/EXPR, run.b2z/arr2d/data.npy)
//   b2ndfs-inspect check [--quick] SOURCE         every container, store, leaf and table below
//                                                 SOURCE, one line each (inspect_check.cc);
//                                                 exit 1 when any is broken
// Each problem is reported once, by the tool (the core's own log lines are
// not printed: they would repeat it).
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "b2ndfs/util/log.h"
#include "inspect.h"

namespace {

using namespace b2ndfs;
using namespace b2ndfs::inspect;

int Fail(const std::string& message) {
  std::fprintf(stderr, "b2ndfs-inspect: %s\n", message.c_str());
  return 1;
}

// Asked for (--help): stdout, success; a wrong command line: stderr, 2.
int Usage(bool asked = false) {
  std::fputs(
      "usage: b2ndfs-inspect meta SOURCE [DIR]\n"
      "       b2ndfs-inspect ls SOURCE [DIR]\n"
      "       b2ndfs-inspect read SOURCE FILE [OFFSET [LENGTH]]\n"
      "       b2ndfs-inspect check [--quick] SOURCE\n"
      "SOURCE: a directory, a container or a store (.b2z, .b2d, .b2e), as b2ndfs mounts it\n",
      asked ? stdout : stderr);
  return asked ? 0 : 2;
}

// Why `file` is not there, in the words the mount would log.
int Missing(vfs::Filesystem& fs, const std::string& source, const std::string& file,
            const Status& status) {
  // The deepest directory that exists: a container that cannot be decoded
  // has only meta.json.
  std::string dir = file;
  while (true) {
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? "" : dir.substr(0, slash);
    if (Walk(fs, dir).ok()) break;
  }
  auto meta = MetaJson(fs, dir);
  const std::string error = meta.ok() ? ErrorOf(*meta) : "";
  const std::string where = dir.empty() ? source : source + "/" + dir;
  if (!error.empty()) {
    return Fail(where + ": cannot be decoded (" + error + "), so it has no " + file);
  }
  // A refused view/EXPR says why (as the mount logs it); other names are
  // simply absent.
  std::string why = status.message();
  const std::string last = file.substr(file.rfind('/') + 1);
  // The core names the file first ("view/0,999: index 999 ..."): said once.
  if (const size_t colon = why.find(": "); colon != std::string::npos) {
    const std::string named = why.substr(0, colon);
    if (file.size() >= named.size() &&
        file.compare(file.size() - named.size(), named.size(), named) == 0) {
      why = why.substr(colon + 2);
    }
  }
  if (file.find("view/") != std::string::npos && !why.empty() && why != last) {
    return Fail(source + ": no file " + file + ": " + why);
  }
  return Fail(source + ": no file " + file + " in it (b2ndfs-inspect ls lists its files)");
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
  if (command != "ls" && command != "meta" && command != "read") return Usage();
  const std::string source = argv[2];
  if (Status s = vfs::Filesystem::ValidateSource(source); !s.ok()) return Fail(s.message());

  Inspected inspected(source);
  vfs::Filesystem& fs = *inspected.fs;

  if (command == "ls") {
    if (argc > 4) return Usage();
    const std::string dir = argc > 3 ? argv[3] : "";
    auto ino = Walk(fs, dir);
    if (!ino.ok()) return Missing(fs, source, dir, ino.status());
    auto entries = List(fs, *ino);
    if (!entries.ok()) return Fail(source + ": " + dir + ": " + entries.status().message());
    for (const vfs::DirEntry& entry : *entries) {
      std::printf("%s%s\n", entry.name.c_str(), S_ISDIR(entry.type) ? "/" : "");
    }
    return 0;
  }
  if (command == "meta") {
    if (argc > 4) return Usage();
    const std::string dir = argc > 3 ? argv[3] : "";
    if (!Walk(fs, dir).ok()) return Missing(fs, source, dir, Status(ENOENT, dir));
    auto meta = MetaJson(fs, dir);
    if (!meta.ok()) {
      const std::string where = dir.empty() ? source : source + "/" + dir;
      return Fail(where + " has no meta.json: it is a plain directory, not a container or store " +
                  "(b2ndfs-inspect check lists what it holds)");
    }
    std::fputs(meta->c_str(), stdout);
    // {"error": ...} is printed (it is what meta.json says), and fails.
    return ErrorOf(*meta).empty() ? 0 : 1;
  }
  if (argc < 4 || argc > 6) return Usage();
  const std::string file = argv[3];
  auto ino = Walk(fs, file);
  if (!ino.ok()) return Missing(fs, source, file, ino.status());
  const int64_t offset = argc > 4 ? std::strtoll(argv[4], nullptr, 10) : 0;
  const int64_t length = argc > 5 ? std::strtoll(argv[5], nullptr, 10) : -1;
  Status read = ReadFile(fs, *ino, offset, length, [](const uint8_t* p, size_t n) {
    return std::fwrite(p, 1, n, stdout) == n ? Status::Ok() : Status(EIO, "write failed");
  });
  if (!read.ok()) return Fail(source + ": " + file + ": " + Unprefixed(read.message(), source));
  return 0;
}
