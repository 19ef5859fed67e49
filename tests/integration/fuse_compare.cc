// fuse_compare: walks a b2ndfs mount with ordinary system calls and compares
// names, sizes and bytes with c-blosc2's own reads. It knows nothing of the
// b2ndfs code: only the mount, the fixture references and README.md.
//
//   fuse_compare tree MOUNT OUTDIR REFDIR
//       layout: the mirrored tree equals OUTDIR's (containers as
//       directories, other files unchanged), each container's entries,
//       chunk and slice names (zero-padded; unpadded lookups work), every
//       stat size, meta.json (valid JSON, shape/itemsize), the .npy header
//   fuse_compare bytes MOUNT REFDIR
//       every data, data.npy, chunk and slice file (sampled on long axes of
//       large arrays): read() in odd-sized pieces, pread() at random offsets,
//       mmap() of the whole file; all byte-equal to the reference
//   fuse_compare hostile MOUNT HOSTILE_DIR
//       the broken set (`b2nd_fixture hostile HOSTILE_DIR/out`, mounted):
//       meta.json is JSON, undecodable containers show only meta.json with
//       "error", damaged chunks fail with EIO, intact ones read right
//   fuse_compare concurrency MOUNT REFDIR THREADS
//       THREADS readers at once (half on one file, some sharing one fd),
//       random pread()s and mmap()s, all byte-exact
//
// Exit status: 0 all equal, 1 mismatches (named on stderr: container, file,
// offset), 2 usage or set-up errors.
#include "fuse_compare.h"

#include <blosc2.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "itest_common.h"

namespace b2ndfs::itest {

namespace {

std::vector<std::string> ListDir(const std::string& path, int* error) {
  std::vector<std::string> names;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) {
    *error = errno;
    return names;
  }
  *error = 0;
  errno = 0;
  while (dirent* d = readdir(dir)) {
    const std::string name = d->d_name;
    if (name != "." && name != "..") names.push_back(name);
    errno = 0;
  }
  if (errno != 0) *error = errno;
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

std::string Join(const std::vector<std::string>& v, size_t max = 12) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < max; ++i) out += (i ? " " : "") + v[i];
  if (v.size() > max) out += " ... (" + std::to_string(v.size()) + ")";
  return out;
}

}  // namespace

// Shared with the reading checks in fuse_compare_reads.cc.

std::string Errno(int e) {
  return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")";
}

ReadResult ReadFileChunked(const std::string& path, size_t piece) {
  ReadResult r;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r.error = errno;
    return r;
  }
  Bytes buf(piece);
  while (true) {
    const ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      r.error = errno;
      break;
    }
    if (n == 0) break;
    r.bytes.insert(r.bytes.end(), buf.begin(), buf.begin() + n);
  }
  close(fd);
  return r;
}

std::string AsString(const Bytes& b) { return std::string(b.begin(), b.end()); }

void ExpectMissing(const std::string& path, const std::string& container, const std::string& file,
                   Report& report) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    report.Fail(container, file, "exists, but should not");
  } else if (errno != ENOENT) {
    report.Fail(container, file, "stat: " + Errno(errno) + ", expected ENOENT");
  } else {
    report.Count();
  }
}

void ExpectListing(const std::string& path, std::vector<std::string> want,
                   const std::string& container, const std::string& dir, Report& report,
                   const std::set<std::string>& optional) {
  int error = 0;
  auto got = ListDir(path, &error);
  std::erase_if(got, [&](const std::string& name) { return optional.count(name) > 0; });
  std::sort(want.begin(), want.end());
  if (error != 0) {
    report.Fail(container, dir, "readdir: " + Errno(error));
  } else if (got != want) {
    report.Fail(container, dir, "lists [" + Join(got) + "], expected [" + Join(want) + "]");
  } else {
    report.Count();
  }
}

namespace {

// README.md, "Layout": names shown as containers, whatever their content.
bool HasContainerExtension(const std::string& name) {
  for (const char* ext : {".b2nd", ".b2frame", ".b2f", ".b2", ".caterva", ".cat"}) {
    const size_t n = std::strlen(ext);
    if (name.size() > n && name.compare(name.size() - n, n, ext) == 0) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// tree

void CheckMirror(const std::string& mount, const std::string& outdir, const std::string& rel,
                 const std::set<std::string>& containers, Report& report) {
  const std::string src = outdir + (rel.empty() ? "" : "/" + rel);
  const std::string dst = mount + (rel.empty() ? "" : "/" + rel);
  int e1 = 0;
  int e2 = 0;
  const auto want = ListDir(src, &e1);
  const auto got = ListDir(dst, &e2);
  if (e2 != 0) {
    report.Fail(rel.empty() ? "/" : rel, "(readdir)", Errno(e2));
    return;
  }
  if (got != want) {
    report.Fail(rel.empty() ? "/" : rel, "(readdir)",
                "lists [" + Join(got) + "], source has [" + Join(want) + "]");
  }
  for (const std::string& name : want) {
    const std::string r = rel.empty() ? name : rel + "/" + name;
    struct stat s {};
    struct stat m {};
    if (lstat((src + "/" + name).c_str(), &s) != 0) continue;
    if (stat((dst + "/" + name).c_str(), &m) != 0) {
      report.Fail(r, "(stat)", Errno(errno));
      continue;
    }
    if (containers.count(r) != 0 || HasContainerExtension(name)) {
      if (!S_ISDIR(m.st_mode)) report.Fail(r, "(stat)", "container is not shown as a directory");
    } else if (S_ISDIR(s.st_mode)) {
      if (!S_ISDIR(m.st_mode)) report.Fail(r, "(stat)", "sub-directory not shown as one");
      CheckMirror(mount, outdir, r, containers, report);
    } else if (S_ISREG(s.st_mode)) {
      if (!S_ISREG(m.st_mode) || m.st_size != s.st_size) {
        report.Fail(r, "(stat)", "plain file not shown as a regular file of its size");
        continue;
      }
      if ((m.st_mode & 0222) != 0) report.Fail(r, "(stat)", "plain file has write bits");
      const ReadResult a = ReadFileChunked(dst + "/" + name, 1000);
      const Bytes b = ReadWholeFile(src + "/" + name);
      if (a.error != 0) {
        report.Fail(r, "(read)", Errno(a.error));
      } else {
        report.Equal(a.bytes.data(), a.bytes.size(), b.data(), b.size(), r, "(plain file)", 0);
      }
    }
    report.Count();
  }
}

// stat() of a virtual file: regular, no write bits, `size` bytes.
void ExpectFile(const std::string& path, int64_t size, const std::string& container,
                const std::string& file, Report& report) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    report.Fail(container, file, "stat: " + Errno(errno));
    return;
  }
  if (!S_ISREG(st.st_mode)) report.Fail(container, file, "not a regular file");
  if ((st.st_mode & 0222) != 0) report.Fail(container, file, "has write permission bits");
  if (st.st_size != size) {
    report.Fail(container, file,
                "stat size " + std::to_string(st.st_size) + ", expected " + std::to_string(size));
    return;
  }
  report.Count();
}

// Format headers beside data, zarr/, data.zarr/, the images and the
// previews: which exist depends on dtype and ndim, and fuse.headers,
// fuse.zarr, fuse.zarr_v3, fuse.images, fuse.preview and fuse.ome_zarr check that against
// meta.json; here they may appear.
const std::set<std::string> kOptionalRootNames = {
    "data.nhdr", "data.mhd",  "data.hdr",    "data.nii", "zarr",    "data.tiff",
    "images",    "data.zarr", "preview.png", "preview",  "ome.zarr"};

void CheckTreeContainer(const std::string& mount, const ManifestEntry& e, const Reference& ref,
                        std::mt19937_64& rng, Report& report) {
  const std::string dir = mount + "/" + e.rel;
  const std::string& c = e.rel;
  const bool zero_d = ref.ndim() == 0;
  if (zero_d) {
    ExpectListing(dir, {"meta.json", "data", "data.npy", "view"}, c, "/", report,
                  kOptionalRootNames);
  } else {
    ExpectListing(dir, {"meta.json", "data", "data.npy", "chunks", "slices", "view"}, c, "/",
                  report, kOptionalRootNames);
  }
  // meta.json: stat size == bytes read, valid JSON describing the array.
  const ReadResult meta = ReadFileChunked(dir + "/meta.json", 333);
  if (meta.error != 0) {
    report.Fail(c, "meta.json", "read: " + Errno(meta.error));
  } else {
    ExpectFile(dir + "/meta.json", static_cast<int64_t>(meta.bytes.size()), c, "meta.json", report);
    std::string error;
    auto json = ParseJson(AsString(meta.bytes), &error);
    if (!json) {
      report.Fail(c, "meta.json", error);
    } else {
      const Json* shape = json->Find("shape");
      const Json* itemsize = json->Find("itemsize");
      const Json* format = json->Find("format");
      if (!shape || shape->IntArray() != std::optional<Shape>(ref.shape())) {
        report.Fail(c, "meta.json", "\"shape\" missing or differs from the reference");
      }
      if (!itemsize || itemsize->Int() != std::optional<int64_t>(ref.itemsize())) {
        report.Fail(c, "meta.json", "\"itemsize\" missing or differs");
      }
      if (!format || format->text != e.Format()) {
        report.Fail(c, "meta.json", "\"format\" missing or not \"" + e.Format() + "\"");
      }
      if (json->Find("files") == nullptr) report.Fail(c, "meta.json", "no \"files\"");
    }
  }
  ExpectFile(dir + "/data", ref.nbytes(), c, "data", report);
  // data.npy: header (checked) + data.
  {
    const int fd = open((dir + "/data.npy").c_str(), O_RDONLY | O_CLOEXEC);
    Bytes head(4096);
    const ssize_t n = fd < 0 ? -1 : pread(fd, head.data(), head.size(), 0);
    if (fd >= 0) close(fd);
    std::string error;
    if (n < 0) {
      report.Fail(c, "data.npy", "read: " + Errno(errno));
    } else if (auto h = ParseNpyHeader(head.data(), static_cast<size_t>(n), &error);
               !h || !CheckNpyDict(h->dict, ref.shape(), &error)) {
      report.Fail(c, "data.npy", error);
    } else {
      ExpectFile(dir + "/data.npy", static_cast<int64_t>(h->total_length) + ref.nbytes(), c,
                 "data.npy", report);
    }
  }
  if (zero_d) {
    ExpectMissing(dir + "/chunks", c, "chunks", report);
    ExpectMissing(dir + "/slices", c, "slices", report);
    return;
  }
  // chunks/
  ExpectListing(dir + "/chunks", ref.chunk_names(), c, "chunks/", report);
  const auto chunk_sample =
      SampleIndices(static_cast<int64_t>(ref.chunk_names().size()), kAllNamesUpTo, rng);
  for (int64_t i : chunk_sample) {
    ExpectFile(dir + "/chunks/" + ref.chunk_names()[i],
               ref.chunk_boxes()[i].NumItems() * ref.itemsize(), c,
               "chunks/" + ref.chunk_names()[i], report);
  }
  for (const std::string& name : {std::string("99999"), std::string("x"), std::string("0.")}) {
    ExpectMissing(dir + "/chunks/" + name, c, "chunks/" + name, report);
  }
  // slices/
  std::vector<std::string> axes;
  for (int a = 0; a < ref.ndim(); ++a) axes.push_back(std::to_string(a));
  ExpectListing(dir + "/slices", axes, c, "slices/", report);
  for (int a = 0; a < ref.ndim(); ++a) {
    const int64_t n = ref.shape()[a];
    const IBox one = SliceBox(ref.shape(), a, 0);
    const int64_t size = one.NumItems() * ref.itemsize();
    if (n <= kAllNamesUpTo) {
      std::vector<std::string> names;
      for (int64_t i = 0; i < n; ++i) {
        names.push_back(SliceName(ref.shape(), a, i).substr(axes[a].size() + 8));
      }
      ExpectListing(dir + "/slices/" + axes[a], names, c, "slices/" + axes[a] + "/", report);
    }
    for (int64_t i : SampleIndices(n, kAllNamesUpTo, rng)) {
      ExpectFile(dir + "/" + SliceName(ref.shape(), a, i), size, c, SliceName(ref.shape(), a, i),
                 report);
    }
    // Unpadded names are accepted on lookup.
    for (int64_t i : {int64_t{7}, n - 1}) {
      if (i < 0 || i >= n) continue;
      const std::string plain = SliceName(ref.shape(), a, i, /*padded=*/false);
      if (plain != SliceName(ref.shape(), a, i))
        ExpectFile(dir + "/" + plain, size, c, plain, report);
    }
    ExpectMissing(dir + "/slices/" + axes[a] + "/" + std::to_string(n), c,
                  "slices/" + axes[a] + "/" + std::to_string(n), report);
  }
  ExpectMissing(dir + "/slices/" + std::to_string(ref.ndim()), c,
                "slices/" + std::to_string(ref.ndim()), report);
}

int RunTree(const std::string& mount, const std::string& outdir, const std::string& refdir) {
  const auto entries = ReadManifest(refdir + "/manifest.tsv");
  Report report;
  std::set<std::string> containers;
  for (const auto& e : entries) containers.insert(e.rel);
  CheckMirror(mount, outdir, "", containers, report);
  std::mt19937_64 rng(kSeed);
  for (const ManifestEntry& e : entries) {
    auto ref = Reference::Open(refdir + "/" + e.reference, e.itemsize);
    CheckTreeContainer(mount, e, *ref, rng, report);
  }
  std::printf("fuse_compare tree: %zu containers, %llu checks, %llu mismatches\n", entries.size(),
              static_cast<unsigned long long>(report.checks()),
              static_cast<unsigned long long>(report.failures()));
  return report.failures() == 0 ? 0 : 1;
}

int Usage() {
  std::fprintf(stderr,
               "usage: fuse_compare tree MOUNT OUTDIR REFDIR\n"
               "       fuse_compare bytes MOUNT REFDIR\n"
               "       fuse_compare hostile MOUNT HOSTILE_DIR\n"
               "       fuse_compare concurrency MOUNT REFDIR THREADS\n");
  return 2;
}

}  // namespace
}  // namespace b2ndfs::itest

int main(int argc, char** argv) {
  using namespace b2ndfs::itest;
  if (argc < 4) return Usage();
  const std::string mode = argv[1];
  blosc2_init();
  int rc = 2;
  try {
    if (mode == "tree" && argc == 5) {
      rc = RunTree(argv[2], argv[3], argv[4]);
    } else if (mode == "bytes" && argc == 4) {
      rc = RunBytes(argv[2], argv[3]);
    } else if (mode == "hostile" && argc == 4) {
      rc = RunHostile(argv[2], argv[3]);
    } else if (mode == "concurrency" && argc == 5) {
      rc = RunConcurrency(argv[2], argv[3], std::atoi(argv[4]));
    } else {
      rc = Usage();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuse_compare: %s\n", e.what());
    rc = 2;
  }
  blosc2_destroy();
  return rc;
}
