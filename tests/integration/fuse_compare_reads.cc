// fuse_compare's reading checks: bytes, hostile, concurrency (the top of
// fuse_compare.cc says what each checks).
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

#include "fuse_compare.h"
#include "itest_common.h"

namespace b2ndfs::itest {

// ---------------------------------------------------------------------------
// bytes

namespace {

// One virtual file checked three ways: read() in odd pieces, pread() at
// random offsets, mmap() of the whole.
void CheckBytes(const std::string& path, const Bytes& want, const std::string& container,
                const std::string& file, std::mt19937_64& rng, int preads, bool use_mmap,
                Report& report) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    report.Fail(container, file, "open: " + Errno(errno));
    return;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size != static_cast<off_t>(want.size())) {
    report.Fail(
        container, file,
        "fstat size " + std::to_string(st.st_size) + ", expected " + std::to_string(want.size()));
    close(fd);
    return;
  }
  static const size_t kPieces[] = {4093, 1, 3, 65537, 7, 131071, 4097};
  Bytes got;
  Bytes buf(131071);
  for (size_t i = 0;; ++i) {
    const ssize_t n = read(fd, buf.data(), kPieces[i % 7]);
    if (n < 0) {
      report.Fail(container, file,
                  "read at offset " + std::to_string(got.size()) + ": " + Errno(errno));
      close(fd);
      return;
    }
    if (n == 0) break;
    got.insert(got.end(), buf.begin(), buf.begin() + n);
    if (got.size() > want.size()) break;
  }
  report.Equal(got.data(), got.size(), want.data(), want.size(), container, file + " (read)", 0);
  const int64_t size = static_cast<int64_t>(want.size());
  // Drop the pages the read() loop cached, so that the daemon serves the
  // preads and the mmap again ("the same bytes every time").
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  for (int i = 0; i < preads && size > 0; ++i) {
    int64_t offset = static_cast<int64_t>(rng() % static_cast<uint64_t>(size));
    if (offset % 2 == 0) offset = std::min<int64_t>(offset + 1, size - 1);
    const size_t length = 1 + rng() % std::min<size_t>(buf.size(), size_t{1} << (rng() % 18));
    const ssize_t n = pread(fd, buf.data(), length, offset);
    if (n < 0) {
      report.Fail(container, file,
                  "pread at offset " + std::to_string(offset) + ": " + Errno(errno));
      continue;
    }
    const size_t expect = static_cast<size_t>(std::min<int64_t>(length, size - offset));
    report.Equal(buf.data(), static_cast<size_t>(n), want.data() + offset, expect, container,
                 file + " (pread)", offset);
  }
  {
    char c = 0;
    const ssize_t n = pread(fd, &c, 1, size);
    if (n != 0) report.Fail(container, file, "pread at EOF returned " + std::to_string(n));
  }
  if (use_mmap && size > 0) {
    void* map = mmap(nullptr, want.size(), PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
      report.Fail(container, file, "mmap: " + Errno(errno));
    } else {
      report.Equal(static_cast<const uint8_t*>(map), want.size(), want.data(), want.size(),
                   container, file + " (mmap)", 0);
      munmap(map, want.size());
    }
  }
  close(fd);
}
}  // namespace

int RunBytes(const std::string& mount, const std::string& refdir) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto entries = ReadManifest(refdir + "/manifest.tsv");
  Report report;
  std::mt19937_64 rng(kSeed + 1);
  uint64_t files = 0;
  for (const ManifestEntry& e : entries) {
    auto ref = Reference::Open(refdir + "/" + e.reference, e.itemsize);
    const std::string dir = mount + "/" + e.rel;
    const bool small = ref->nbytes() <= kSmallArray;
    CheckBytes(dir + "/data", ref->full(), e.rel, "data", rng, 24, true, report);
    // data.npy: its body is data.
    const ReadResult npy = ReadFileChunked(dir + "/data.npy", 8191);
    std::string error;
    if (npy.error != 0) {
      report.Fail(e.rel, "data.npy", "read: " + Errno(npy.error));
    } else if (auto h = ParseNpyHeader(npy.bytes.data(), npy.bytes.size(), &error); !h) {
      report.Fail(e.rel, "data.npy", error);
    } else {
      Bytes want(npy.bytes.begin(), npy.bytes.begin() + h->total_length);
      want.insert(want.end(), ref->full().begin(), ref->full().end());
      CheckBytes(dir + "/data.npy", want, e.rel, "data.npy", rng, 8, true, report);
    }
    files += 2;
    if (ref->ndim() == 0) continue;
    const auto chunks =
        SampleIndices(static_cast<int64_t>(ref->chunk_boxes().size()), small ? 100000 : 64, rng);
    for (size_t k = 0; k < chunks.size(); ++k) {
      const int64_t i = chunks[k];
      CheckBytes(dir + "/chunks/" + ref->chunk_names()[i], ref->Slice(ref->chunk_boxes()[i]), e.rel,
                 "chunks/" + ref->chunk_names()[i], rng, 2, k % 4 == 0, report);
      ++files;
    }
    for (int a = 0; a < ref->ndim(); ++a) {
      const int64_t n = ref->shape()[a];
      const auto idx = SampleIndices(n, small && n <= kAllNamesUpTo ? kAllNamesUpTo : 16, rng);
      for (size_t k = 0; k < idx.size(); ++k) {
        const std::string name = SliceName(ref->shape(), a, idx[k]);
        CheckBytes(dir + "/" + name, ref->Slice(SliceBox(ref->shape(), a, idx[k])), e.rel, name,
                   rng, k % 8 == 0 ? 2 : 0, k % 16 == 0, report);
        ++files;
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "fuse_compare bytes: %zu containers, %llu files, %llu checks, %llu "
      "mismatches, %.1f s\n",
      entries.size(), static_cast<unsigned long long>(files),
      static_cast<unsigned long long>(report.checks()),
      static_cast<unsigned long long>(report.failures()), seconds);
  return report.failures() == 0 ? 0 : 1;
}

// ---------------------------------------------------------------------------
// hostile

namespace {

void ExpectEio(const std::string& path, const std::string& container, const std::string& file,
               Report& report) {
  const ReadResult r = ReadFileChunked(path);
  if (r.error == 0) {
    report.Fail(container, file,
                "read succeeded (" + std::to_string(r.bytes.size()) + " bytes), expected EIO");
  } else if (r.error != EIO) {
    report.Fail(container, file, "failed with " + Errno(r.error) + ", expected EIO");
  } else {
    report.Count();
  }
}
}  // namespace

int RunHostile(const std::string& mount, const std::string& hostile_dir) {
  const auto entries = ReadHostileManifest(hostile_dir + "/hostile.tsv");
  auto intact = Reference::Open(hostile_dir + "/hostile_ref/intact.b2nd", 0);
  Report report;
  for (const HostileEntry& e : entries) {
    const std::string dir = mount + "/" + e.name;
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      report.Fail(e.name, "/", "not shown as a directory: " + Errno(errno));
      continue;
    }
    const ReadResult meta = ReadFileChunked(dir + "/meta.json");
    if (meta.error != 0) {
      report.Fail(e.name, "meta.json", "read: " + Errno(meta.error));
      continue;
    }
    std::string error;
    auto json = ParseJson(AsString(meta.bytes), &error);
    if (!json) {
      report.Fail(e.name, "meta.json", "not JSON: " + error);
      continue;
    }
    const HostileExpectation expect = ExpectationFor(e);
    if (const Json* err = json->Find("error")) {
      if (err->type != Json::Type::kString || err->text.empty()) {
        report.Fail(e.name, "meta.json", "\"error\" is not a non-empty string");
      }
      if (expect == HostileExpectation::kPartial) {
        report.Fail(e.name, "meta.json", "error, but only some chunks are damaged: " + err->text);
      }
      ExpectListing(dir, {"meta.json"}, e.name, "/", report);
      ExpectMissing(dir + "/data", e.name, "data", report);
      continue;
    }
    switch (expect) {
      case HostileExpectation::kError:
        report.Fail(e.name, "meta.json",
                    "no \"error\" for a broken container (" + e.description + ")");
        break;
      case HostileExpectation::kErrorOrEio:
        ExpectEio(dir + "/data", e.name, "data", report);
        break;
      case HostileExpectation::kErrorOrSame: {
        const ReadResult r = ReadFileChunked(dir + "/data");
        if (r.error == 0) {
          report.Equal(r.bytes.data(), r.bytes.size(), intact->full().data(), intact->full().size(),
                       e.name, "data", 0);
        } else if (r.error != EIO) {
          report.Fail(e.name, "data", "failed with " + Errno(r.error) + ", expected EIO");
        }
        break;
      }
      case HostileExpectation::kPartial: {
        ExpectEio(dir + "/data", e.name, "data", report);
        auto ref = Reference::Open(hostile_dir + "/" + e.reference, 0);
        std::map<std::string, IBox> boxes;
        for (size_t i = 0; i < ref->chunk_names().size(); ++i) {
          boxes[ref->chunk_names()[i]] = ref->chunk_boxes()[i];
        }
        for (int pass = 0; pass < 2; ++pass) {
          for (const std::string& name : e.readable_chunks) {
            const ReadResult r = ReadFileChunked(dir + "/chunks/" + name);
            if (r.error != 0) {
              report.Fail(e.name, "chunks/" + name, "read: " + Errno(r.error));
              continue;
            }
            const Bytes want = ref->Slice(boxes[name]);
            report.Equal(r.bytes.data(), r.bytes.size(), want.data(), want.size(), e.name,
                         "chunks/" + name, 0);
          }
          for (const std::string& name : e.bad_chunks) {
            ExpectEio(dir + "/chunks/" + name, e.name, "chunks/" + name, report);
          }
        }
        break;
      }
      case HostileExpectation::kDecodesOrError: {
        const int fd = open((dir + "/data.npy").c_str(), O_RDONLY | O_CLOEXEC);
        Bytes head(4096);
        const ssize_t n = fd < 0 ? -1 : pread(fd, head.data(), head.size(), 0);
        if (fd >= 0) close(fd);
        std::string npy_error;
        const Json* shape = json->Find("shape");
        if (n < 0) {
          report.Fail(e.name, "data.npy", "read: " + Errno(errno));
        } else if (auto h = ParseNpyHeader(head.data(), static_cast<size_t>(n), &npy_error);
                   !h || !shape || !shape->IntArray() ||
                   !CheckNpyDict(h->dict, *shape->IntArray(), &npy_error)) {
          report.Fail(e.name, "data.npy", "bad header: " + npy_error);
        }
        break;
      }
    }
  }
  std::printf("fuse_compare hostile: %zu containers, %llu checks, %llu mismatches\n",
              entries.size(), static_cast<unsigned long long>(report.checks()),
              static_cast<unsigned long long>(report.failures()));
  return report.failures() == 0 ? 0 : 1;
}

// ---------------------------------------------------------------------------
// concurrency

namespace {

struct Target {
  std::string container;
  std::string file;
  std::string path;
  Bytes want;
  int shared_fd = -1;  // one fd used by every thread
};
}  // namespace

int RunConcurrency(const std::string& mount, const std::string& refdir, int threads) {
  const auto entries = ReadManifest(refdir + "/manifest.tsv");
  std::mt19937_64 rng(kSeed + 2);
  std::vector<Target> targets;
  for (const ManifestEntry& e : entries) {
    const bool pick = e.rel.rfind("medium/", 0) == 0 || e.rel == "ndim/3d_f4.b2nd" ||
                      e.rel == "frames/sparse_f4.b2nd" || e.rel == "frames/plain.b2frame" ||
                      e.rel == "legacy/caterva_sparse.caterva" || e.rel == "codecs/zstd_dict.b2nd";
    if (!pick) continue;
    auto ref = Reference::Open(refdir + "/" + e.reference, e.itemsize);
    const std::string dir = mount + "/" + e.rel;
    targets.push_back({e.rel, "data", dir + "/data", ref->full()});
    for (int64_t i : SampleIndices(static_cast<int64_t>(ref->chunk_boxes().size()), 4, rng)) {
      targets.push_back({e.rel, "chunks/" + ref->chunk_names()[i],
                         dir + "/chunks/" + ref->chunk_names()[i],
                         ref->Slice(ref->chunk_boxes()[i])});
    }
    for (int a = 0; a < ref->ndim(); ++a) {
      for (int64_t i : SampleIndices(ref->shape()[a], 2, rng)) {
        const std::string name = SliceName(ref->shape(), a, i);
        targets.push_back(
            {e.rel, name, dir + "/" + name, ref->Slice(SliceBox(ref->shape(), a, i))});
      }
    }
  }
  if (targets.empty()) {
    std::fprintf(stderr, "fuse_compare concurrency: no targets\n");
    return 2;
  }
  // The biggest file is the one everybody reads at once.
  std::stable_sort(targets.begin(), targets.end(),
                   [](const Target& a, const Target& b) { return a.want.size() > b.want.size(); });
  for (Target& t : targets) t.shared_fd = open(t.path.c_str(), O_RDONLY | O_CLOEXEC);
  Report report;
  std::atomic<uint64_t> bytes{0};
  std::vector<std::thread> pool;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 trng(kSeed + 100 + t);
      Bytes buf(1 << 18);
      for (int op = 0; op < 300; ++op) {
        const Target& target = op % 2 == 0 ? targets[0] : targets[trng() % targets.size()];
        const int64_t size = static_cast<int64_t>(target.want.size());
        if (size == 0) continue;
        const bool own_fd = (op + t) % 3 == 0;
        const int fd = own_fd ? open(target.path.c_str(), O_RDONLY | O_CLOEXEC) : target.shared_fd;
        if (fd < 0) {
          report.Fail(target.container, target.file, "open: " + Errno(errno));
          continue;
        }
        if (op % 10 == 9) {  // mmap a window
          const int64_t page = 4096;
          const int64_t off =
              (static_cast<int64_t>(trng() % static_cast<uint64_t>(size)) / page) * page;
          const size_t len = static_cast<size_t>(std::min<int64_t>(size - off, 1 << 17));
          void* map = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, off);
          if (map == MAP_FAILED) {
            report.Fail(target.container, target.file, "mmap: " + Errno(errno));
          } else {
            report.Equal(static_cast<const uint8_t*>(map), len, target.want.data() + off, len,
                         target.container, target.file + " (mmap)", off);
            munmap(map, len);
          }
        } else {
          const int64_t offset = static_cast<int64_t>(trng() % static_cast<uint64_t>(size));
          const size_t length = 1 + trng() % (size_t{1} << (trng() % 18));
          const ssize_t n = pread(fd, buf.data(), length, offset);
          if (n < 0) {
            report.Fail(target.container, target.file,
                        "pread at offset " + std::to_string(offset) + ": " + Errno(errno));
          } else {
            const size_t expect = static_cast<size_t>(std::min<int64_t>(length, size - offset));
            report.Equal(buf.data(), static_cast<size_t>(n), target.want.data() + offset, expect,
                         target.container, target.file + " (pread)", offset);
            bytes += static_cast<uint64_t>(n);
          }
        }
        if (own_fd) close(fd);
      }
    });
  }
  for (auto& th : pool) th.join();
  for (Target& t : targets) {
    if (t.shared_fd >= 0) close(t.shared_fd);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "fuse_compare concurrency: %d threads, %zu files, %llu bytes, %llu "
      "checks, "
      "%llu mismatches, %.1f s\n",
      threads, targets.size(), static_cast<unsigned long long>(bytes.load()),
      static_cast<unsigned long long>(report.checks()),
      static_cast<unsigned long long>(report.failures()), seconds);
  return report.failures() == 0 ? 0 : 1;
}

}  // namespace b2ndfs::itest
