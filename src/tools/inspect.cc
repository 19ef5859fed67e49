// b2ndfs-inspect: look inside a container without mounting it, through the
// same core the filesystem uses (as squashfuse_ls reuses its format library).
//
//   b2ndfs-inspect meta CONTAINER                 print meta.json
//   b2ndfs-inspect ls CONTAINER [DIR]             list a directory of the container view
//   b2ndfs-inspect read CONTAINER FILE [OFFSET [LENGTH]]
//                                                 write bytes of a virtual file to stdout
//                                                 (FILE: data, data.npy, chunks/0.1, slices/0/07)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/store/container.h"
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
      "       b2ndfs-inspect read CONTAINER FILE [OFFSET [LENGTH]]\n",
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

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    return Usage(true);
  }
  if (argc < 3) return Usage();
  const std::string command = argv[1];
  const std::string source = argv[2];
  if (Status s = vfs::Filesystem::ValidateSource(source); !s.ok()) return Fail(s.message());

  cache::BlockCache cache(256u << 20);
  codec::DecompressorPool decompressors(4);
  store::StoreContext store;
  store.cache = &cache;
  store.decompressors = &decompressors;
  vfs::Options options;
  options.source = source;
  vfs::Filesystem fs(options, &store);

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
  if (command != "meta" && command != "read") return Usage();
  const std::string file = command == "meta" ? "meta.json" : (argc > 3 ? argv[3] : "");
  if (file.empty()) return Usage();
  auto ino = Walk(fs, file);
  if (!ino.ok()) return Fail(ino.status().message());
  auto attr = fs.GetAttr(*ino);
  if (!attr.ok()) return Fail(attr.status().message());
  auto handle = fs.Open(*ino, 0);
  if (!handle.ok()) return Fail(handle.status().message());
  int64_t offset = command == "read" && argc > 4 ? std::strtoll(argv[4], nullptr, 10) : 0;
  int64_t length = command == "read" && argc > 5 ? std::strtoll(argv[5], nullptr, 10)
                                                 : attr->st.st_size - offset;
  std::vector<uint8_t> buffer(1 << 20);
  while (length > 0) {
    size_t want =
        static_cast<size_t>(std::min<int64_t>(length, static_cast<int64_t>(buffer.size())));
    auto n = fs.Read(*handle, offset, want, buffer.data());
    if (!n.ok()) return Fail(n.status().message());
    if (*n == 0) break;
    if (std::fwrite(buffer.data(), 1, *n, stdout) != *n) return Fail("write failed");
    offset += static_cast<int64_t>(*n);
    length -= static_cast<int64_t>(*n);
  }
  return 0;
}
