// Extended attributes through the FUSE operations (getxattr / listxattr
// over a fake request), moved down from fuse.xattr, which keeps what only a
// kernel shows (getfattr's output, ls -l asking once per mount, EROFS of
// writes): a container directory and every file and directory inside it
// carry user.b2nd.shape, .chunkshape, .blockshape (JSON lists), .dtype and
// .codec as written; plain files, directories, the root and an undecodable
// container have none (ENODATA, an empty list); other names are ENODATA;
// security.* and system.* are EOPNOTSUPP, answered without asking the source
// or opening a container; size queries and too-small buffers answer as
// getxattr(2) says (README.md, "Layout").
#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "b2ndfs/store/container.h"
#include "fuse_adapter.h"

namespace b2ndfs::fuse {
namespace {

using testing::Adapter;
using testing::Bytes;
using testing::FakeRequest;
using testing::Reply;

// A container of `dtype` (`typesize` bytes an item) written by c-blosc2
// with codec `compcode`: its frame.
Bytes Frame(std::vector<int64_t> shape, std::vector<int32_t> chunks, std::vector<int32_t> blocks,
            const char* dtype, int32_t typesize, uint8_t compcode) {
  b2ndfs::testing::TempDir dir("b2ndfs_fuse_xattr");
  const std::string path = (dir.path / "x.b2nd").string();
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<uint8_t> bytes(static_cast<size_t>(n * typesize));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 % 251);
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = typesize;
  cparams.nthreads = 1;
  cparams.compcode = compcode;
  b2nd_free(b2ndfs::testing::WriteContiguous(path, cparams, static_cast<int8_t>(shape.size()),
                                             shape.data(), chunks.data(), blocks.data(), dtype,
                                             bytes.data(), n * typesize));
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Replies of getxattr / listxattr: an errno, a size, or a value.
struct Answer {
  int error = 0;
  size_t size = 0;
  std::string value;
};
Answer Of(const FakeRequest& req) {
  const Reply r = req.only();
  Answer a;
  if (r.kind == Reply::kErr) {
    a.error = r.error;
  } else if (r.kind == Reply::kXattrSize) {
    a.size = r.size;
  } else {
    REQUIRE(r.kind == Reply::kBuf);
    a.value = r.data;
    a.size = r.data.size();
  }
  return a;
}

struct Xattrs : Adapter {
  Xattrs() {
    tree->PutDir("sub");
    tree->PutFile("notes.txt", Bytes{'n', 'o', 't', 'e', 's', '\n'});
    tree->PutFile("a3.b2nd", Frame({23, 19, 31}, {8, 8, 8}, {3, 4, 5}, "<f4", 4, BLOSC_ZSTD));
    tree->PutFile("sub/b2.b2nd", Frame({45, 67}, {20, 30}, {6, 7}, ">i2", 2, BLOSC_LZ4));
    tree->PutFile("untouched.b2nd", Frame({10}, {5}, {5}, "|u1", 1, BLOSC_BLOSCLZ));
    Bytes random(4096);
    for (size_t i = 0; i < random.size(); ++i) random[i] = static_cast<uint8_t>(i * 131 + 17);
    tree->PutFile("bad.b2nd", random);
    Start();
  }
  vfs::Ino Path(const std::string& path) {
    vfs::Ino ino = vfs::kRootIno;
    size_t from = 0;
    while (from < path.size()) {
      size_t slash = path.find('/', from);
      if (slash == std::string::npos) slash = path.size();
      ino = Lookup(ino, path.substr(from, slash - from)).ino;
      from = slash + 1;
    }
    return ino;
  }
  Answer Get(vfs::Ino ino, const std::string& name, size_t size = 1 << 16) {
    FakeRequest req;
    ops->GetXattr(req, ino, name.c_str(), size);
    return Of(req);
  }
  Answer List(vfs::Ino ino, size_t size = 1 << 16) {
    FakeRequest req;
    ops->ListXattr(req, ino, size);
    return Of(req);
  }
  // The names of `ino`'s attributes, sorted.
  std::vector<std::string> Names(vfs::Ino ino) {
    const Answer a = List(ino);
    REQUIRE(a.error == 0);
    std::vector<std::string> names;
    for (size_t at = 0; at < a.value.size();) {
      const size_t nul = a.value.find('\0', at);
      REQUIRE(nul != std::string::npos);  // each name ends with a NUL
      names.push_back(a.value.substr(at, nul - at));
      at = nul + 1;
    }
    std::sort(names.begin(), names.end());
    return names;
  }
};

const std::vector<std::string> kNames = {"user.b2nd.blockshape", "user.b2nd.chunkshape",
                                         "user.b2nd.codec", "user.b2nd.dtype", "user.b2nd.shape"};

// Every PATH under DIR has the five attributes, with the geometry written.
void CheckContainer(Xattrs& m, const std::string& dir, const std::vector<std::string>& paths,
                    const std::string& shape, const std::string& chunks, const std::string& blocks,
                    const std::string& dtype, const std::string& codec) {
  for (const std::string& p : paths) {
    const std::string path = p.empty() ? dir : dir + "/" + p;
    INFO(path);
    const vfs::Ino ino = m.Path(path);
    CHECK(m.Names(ino) == kNames);
    CHECK(m.Get(ino, "user.b2nd.shape").value == shape);
    CHECK(m.Get(ino, "user.b2nd.chunkshape").value == chunks);
    CHECK(m.Get(ino, "user.b2nd.blockshape").value == blocks);
    CHECK(m.Get(ino, "user.b2nd.dtype").value == dtype);
    CHECK(m.Get(ino, "user.b2nd.codec").value == codec);
  }
}

TEST_CASE("fuse xattr: a container and everything inside carry its user.b2nd.* attributes",
          "[fuse]") {
  Xattrs m;
  CheckContainer(m, "a3.b2nd",
                 {"", "meta.json", "data", "data.npy", "chunks", "chunks/0.0.0", "chunks/2.2.3",
                  "slices", "slices/0", "slices/0/07", "slices/2/30", "view/1:5,2,::3",
                  "view/...,4.npy", "data.nhdr", "data.nii"},
                 "[23, 19, 31]", "[8, 8, 8]", "[3, 4, 5]", "<f4", "zstd");
  CheckContainer(m, "sub/b2.b2nd", {"", "data", "chunks/1.2", "slices/1/66", "view/3"}, "[45, 67]",
                 "[20, 30]", "[6, 7]", ">i2", "lz4");
}

TEST_CASE("fuse xattr: none outside containers, none of an undecodable one, other names ENODATA",
          "[fuse]") {
  Xattrs m;
  for (const char* path : {"", "sub", "notes.txt", "bad.b2nd"}) {
    INFO(path);
    const vfs::Ino ino = m.Path(path);
    CHECK(m.List(ino, 0).size == 0);  // an empty list
    CHECK(m.List(ino).value.empty());
    CHECK(m.Get(ino, "user.b2nd.shape").error == ENODATA);
    CHECK(m.Get(ino, "user.b2nd.codec").error == ENODATA);
  }
  for (const char* path : {"a3.b2nd", "a3.b2nd/data"}) {
    for (const char* name : {"user.b2nd.nosuch", "user.b2nd.", "user.other", "trusted.x"}) {
      INFO(path << " " << name);
      CHECK(m.Get(m.Path(path), name).error == ENODATA);
    }
  }
}

TEST_CASE("fuse xattr: security.* and system.* are EOPNOTSUPP, without opening anything",
          "[fuse]") {
  Xattrs m;
  const vfs::Ino untouched = m.Path("untouched.b2nd");
  const uint64_t opened = store::GlobalReadStats().containers_opened.load();
  const int64_t stats = m.tree->stats(), probes = m.tree->probes(), reads = m.tree->reads();
  for (const char* name : {"security.selinux", "system.posix_acl_access"}) {
    CHECK(m.Get(untouched, name).error == EOPNOTSUPP);
  }
  CHECK(store::GlobalReadStats().containers_opened.load() == opened);
  CHECK(m.tree->stats() == stats);
  CHECK(m.tree->probes() == probes);
  CHECK(m.tree->reads() == reads);
  // ... while user.b2nd.* does.
  CHECK(m.Get(untouched, "user.b2nd.shape").value == "[10]");
  for (const char* path : {"a3.b2nd", "a3.b2nd/data", "notes.txt"}) {
    for (const char* name : {"security.selinux", "security.capability", "system.posix_acl_access",
                             "system.posix_acl_default"}) {
      INFO(path << " " << name);
      CHECK(m.Get(m.Path(path), name).error == EOPNOTSUPP);
    }
  }
}

TEST_CASE("fuse xattr: size queries, too small a buffer (ERANGE), an exact one", "[fuse]") {
  Xattrs m;
  const vfs::Ino chunk = m.Path("a3.b2nd/chunks/1.1.1");
  const std::string value = "[23, 19, 31]";
  CHECK(m.Get(chunk, "user.b2nd.shape", 0).size == value.size());
  CHECK(m.Get(chunk, "user.b2nd.shape", value.size() - 1).error == ERANGE);
  CHECK(m.Get(chunk, "user.b2nd.shape", value.size()).value == value);
  size_t names = 0;
  for (const auto& n : kNames) names += n.size() + 1;
  CHECK(m.List(chunk, 0).size == names);
  CHECK(m.List(chunk, names - 1).error == ERANGE);
  CHECK(m.List(chunk, names).size == names);
  CHECK(m.Names(chunk) == kNames);
  CHECK(m.List(m.Path("notes.txt"), 0).size == 0);
}

}  // namespace
}  // namespace b2ndfs::fuse
