// stress_reader: many threads reading a b2ndfs mount at random, every byte
// checked against c-blosc2, while the daemon's memory is sampled.
//
//   stress_reader --mount MNT --ref REFDIR [options]
//     --threads N          reader threads (default 16)
//     --seconds S          how long to read (default 20)
//     --mode verify|hammer verify: any failed open/read is an error (default);
//                          hammer: errors are counted, not fatal, and a
//                          thread stops after its first error (the mount is
//                          being torn down); wrong bytes are fatal in both
//     --mmap-percent P     share of reads done through mmap (default 10)
//     --pid PID            the daemon: sample VmRSS/VmHWM every 50 ms
//     --rss-limit BYTES    fail if the daemon's peak RSS passes this (0: report only)
//     --max-op-seconds S   one open/read/mmap slower than this is a hang (default 15)
//     --ready-file PATH    created once the references are loaded and reading starts
//
// MNT is a mount of `b2nd_fixture make` OUTDIR and REFDIR its references
// (manifest.tsv): every container is read through data, data.npy,
// chunks/NAME and slices/A/IDX with pread at random offsets and lengths
// (1 B .. 1 MiB), a quarter of the threads streaming whole files
// sequentially (read-ahead), and the rest of the reads through mmap. Most
// pread opens bypass or drop the kernel's page cache (O_DIRECT, or
// POSIX_FADV_DONTNEED), so that the reads reach the daemon. The
// expected bytes are cut from the whole array that c-blosc2 decoded
// (itest_common's Reference: b2nd_open + b2nd_get_slice_cbuffer, or the .raw
// file of a plain super-chunk); the .npy header is checked once with
// CheckNpyDict and then expected verbatim.
// A hang (an operation slower than --max-op-seconds) prints what was stuck
// and exits 3 at once.
// Output: "stress_reader: key=value ..." summary on stdout (reads, errors,
// mismatches, MB/s, rss_peak_bytes, rss_hwm_bytes, rss_start_bytes).
// Exit status: 0 pass, 1 mismatch / error (verify) / RSS over the limit,
// 2 usage or set-up error, 3 hang.
#include <blosc2.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "itest_common.h"

namespace b2ndfs::stress {
namespace {

using itest::Bytes;
using itest::IBox;
using itest::Reference;
using itest::Shape;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string mount;
  std::string ref_dir;
  int threads = 16;
  double seconds = 20;
  bool hammer = false;
  int mmap_percent = 10;
  long pid = 0;
  int64_t rss_limit = 0;
  double max_op_seconds = 15;
  std::string ready_file;
};

struct Container {
  std::string rel;
  std::unique_ptr<Reference> ref;
  Bytes npy_header;  // as the mount serves it, checked once
};

enum class Kind { kData, kNpy, kChunk, kSlice };

struct Target {
  const Container* c = nullptr;
  Kind kind = Kind::kData;
  int axis = 0;
  int64_t index = 0;
  std::string path;
  int64_t size = 0;
};

// ---------------------------------------------------------------------------
// Expected bytes.

// Bytes [offset, offset + length) of the C-order stream of `box` of an array
// whose C-order bytes are `full`: copied row by row (the last axis is
// contiguous in both).
void BoxRange(const Bytes& full, const Shape& shape, int64_t itemsize, const IBox& box,
              int64_t offset, int64_t length, uint8_t* out) {
  const int ndim = static_cast<int>(shape.size());
  if (ndim == 0) {
    std::memcpy(out, full.data() + offset, static_cast<size_t>(length));
    return;
  }
  const Shape extent = box.Extent();
  const int64_t row_bytes = extent[ndim - 1] * itemsize;
  if (row_bytes == 0) return;
  Shape strides(ndim, 1);
  for (int a = ndim - 2; a >= 0; --a) strides[a] = strides[a + 1] * shape[a + 1];
  int64_t row = offset / row_bytes;
  int64_t done = 0;
  while (done < length) {
    // Coordinates of row `row` of the box (all axes but the last).
    int64_t rest = row;
    int64_t src_item = box.start[ndim - 1];
    for (int a = ndim - 2; a >= 0; --a) {
      const int64_t coord = box.start[a] + rest % extent[a];
      rest /= extent[a];
      src_item += coord * strides[a];
    }
    const int64_t row_start = row * row_bytes;
    const int64_t from = std::max<int64_t>(offset + done, row_start) - row_start;
    const int64_t n = std::min(row_bytes - from, length - done);
    std::memcpy(out + done, full.data() + src_item * itemsize + from, static_cast<size_t>(n));
    done += n;
    ++row;
  }
}

void Expected(const Target& t, int64_t offset, int64_t length, uint8_t* out) {
  const Reference& ref = *t.c->ref;
  switch (t.kind) {
    case Kind::kData:
      std::memcpy(out, ref.full().data() + offset, static_cast<size_t>(length));
      return;
    case Kind::kNpy: {
      const auto header = static_cast<int64_t>(t.c->npy_header.size());
      int64_t done = 0;
      if (offset < header) {
        done = std::min(length, header - offset);
        std::memcpy(out, t.c->npy_header.data() + offset, static_cast<size_t>(done));
      }
      if (done < length) {
        std::memcpy(out + done, ref.full().data() + (offset + done - header),
                    static_cast<size_t>(length - done));
      }
      return;
    }
    case Kind::kChunk:
      BoxRange(ref.full(), ref.shape(), ref.itemsize(),
               ref.chunk_boxes()[static_cast<size_t>(t.index)], offset, length, out);
      return;
    case Kind::kSlice:
      BoxRange(ref.full(), ref.shape(), ref.itemsize(),
               itest::SliceBox(ref.shape(), t.axis, t.index), offset, length, out);
      return;
  }
}

// ---------------------------------------------------------------------------
// Shared state.

struct Totals {
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> mmap_reads{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> mismatches{0};
  std::mutex print_mutex;  // leaf lock
  int printed = 0;

  void Report(const std::string& line) {
    std::lock_guard<std::mutex> lock(print_mutex);
    if (++printed <= 30) std::fprintf(stderr, "stress_reader: %s\n", line.c_str());
  }
};

// What each thread is doing, for the hang watchdog.
struct Activity {
  std::atomic<int64_t> since_ns{0};  // 0: idle
  std::mutex mutex;                  // leaf lock; guards what
  std::string what;
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

class OpScope {
 public:
  OpScope(Activity& a, const std::string& what) : a_(a) {
    {
      std::lock_guard<std::mutex> lock(a_.mutex);
      a_.what = what;
    }
    a_.since_ns = NowNs();
  }
  ~OpScope() { a_.since_ns = 0; }

 private:
  Activity& a_;
};

// ---------------------------------------------------------------------------
// Readers.

std::atomic<bool> direct_io_works{true};

class Reader {
 public:
  Reader(const Options& o, const std::vector<Target>& targets, Totals& totals, Activity& activity,
         uint64_t seed, bool sequential, Clock::time_point deadline)
      : o_(o),
        targets_(targets),
        totals_(totals),
        activity_(activity),
        rng_(seed),
        sequential_(sequential),
        deadline_(deadline) {}

  void Run() {
    while (Clock::now() < deadline_ && !stopped_) {
      const Target& t = targets_[Pick(targets_.size())];
      if (sequential_) {
        Stream(t);
      } else if (static_cast<int>(Pick(100)) < o_.mmap_percent) {
        Mapped(t);
      } else {
        Random(t);
      }
    }
  }

 private:
  uint64_t Pick(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  int64_t RandomLength() {
    const uint64_t r = Pick(10);
    if (r < 4) return 1 + static_cast<int64_t>(Pick(4096));
    if (r < 8) return 4096 + static_cast<int64_t>(Pick(128 * 1024));
    return 128 * 1024 + static_cast<int64_t>(Pick(896 * 1024));
  }

  int64_t RandomOffset(int64_t size) {
    if (size <= 0) return 0;
    int64_t off = static_cast<int64_t>(Pick(static_cast<uint64_t>(size)));
    if (Pick(10) < 3) off -= off % 4096;
    return off;
  }

  void Error(const Target& t, const std::string& what) {
    totals_.errors++;
    if (!o_.hammer) totals_.Report("ERROR " + t.path + ": " + what);
    if (o_.hammer) stopped_ = true;
  }

  bool Compare(const Target& t, int64_t offset, const uint8_t* got, int64_t n, const char* how) {
    if (n == 0) return true;  // empty arrays have no bytes (and null data())
    want_.resize(static_cast<size_t>(n));
    Expected(t, offset, n, want_.data());
    if (std::memcmp(got, want_.data(), static_cast<size_t>(n)) == 0) return true;
    int64_t first = 0;
    while (first < n && got[first] == want_[static_cast<size_t>(first)]) ++first;
    totals_.mismatches++;
    totals_.Report("MISMATCH " + t.path + " (" + how + "): " + std::to_string(n) +
                   " bytes at offset " + std::to_string(offset) + " differ from offset " +
                   std::to_string(offset + first));
    return false;
  }

  // Opens t.path and checks its size; -1 on error (reported). Most opens
  // keep the kernel's page cache out of the way (O_DIRECT, or dropping the
  // file's cached pages first), or the daemon would see few of the reads.
  int Open(const Target& t, bool allow_direct) {
    const uint64_t how = Pick(10);
    const bool direct = allow_direct && how < 5 && direct_io_works.load();
    int fd;
    {
      OpScope op(activity_, "open " + t.path);
      fd = ::open(t.path.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
      if (fd < 0 && direct && errno == EINVAL) {
        direct_io_works = false;  // not on this kernel: page cache it is
        fd = ::open(t.path.c_str(), O_RDONLY | O_CLOEXEC);
      }
    }
    if (fd < 0) {
      Error(t, std::string("open: ") + std::strerror(errno));
      return -1;
    }
    struct stat st;
    if (::fstat(fd, &st) != 0 || st.st_size != t.size) {
      Error(t, "size " + std::to_string(st.st_size) + ", expected " + std::to_string(t.size));
      ::close(fd);
      return -1;
    }
    if (!direct && how < 8) (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    return fd;
  }

  // pread at offset; checks count and bytes. False on error.
  bool ReadAt(const Target& t, int fd, int64_t offset, int64_t length) {
    buf_.resize(static_cast<size_t>(length));
    const int64_t expect = std::max<int64_t>(0, std::min(length, t.size - offset));
    int64_t got = 0;
    {
      OpScope op(activity_, "pread " + t.path + " " + std::to_string(length) + " at " +
                                std::to_string(offset));
      // FUSE splits large reads; pread may still return less than asked
      // before EOF only on error or signal, so loop as a careful reader would.
      while (got < expect) {
        const ssize_t r =
            ::pread(fd, buf_.data() + got, static_cast<size_t>(length - got), offset + got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
          Error(t, "pread of " + std::to_string(length) + " at " + std::to_string(offset) + ": " +
                       std::strerror(errno));
          return false;
        }
        if (r == 0) break;
        got += r;
      }
    }
    if (got != expect) {
      Error(t, "pread at " + std::to_string(offset) + " returned " + std::to_string(got) +
                   " bytes, expected " + std::to_string(expect));
      return false;
    }
    totals_.reads++;
    totals_.bytes += static_cast<uint64_t>(got);
    Compare(t, offset, buf_.data(), got, "pread");
    return true;
  }

  void Random(const Target& t) {
    const int fd = Open(t, true);
    if (fd < 0) return;
    const int n = 1 + static_cast<int>(Pick(4));
    for (int i = 0; i < n && !stopped_; ++i) {
      if (!ReadAt(t, fd, RandomOffset(t.size), RandomLength())) break;
    }
    ::close(fd);
  }

  // Whole file (at most 8 MiB of it) front to back in 128 KiB reads.
  void Stream(const Target& t) {
    const int fd = Open(t, false);
    if (fd < 0) return;
    const int64_t start = Pick(2) == 0 ? 0 : RandomOffset(t.size);
    const int64_t end = std::min(t.size, start + (int64_t{8} << 20));
    for (int64_t off = start; off < end && !stopped_ && Clock::now() < deadline_;
         off += 128 * 1024) {
      if (!ReadAt(t, fd, off, 128 * 1024)) break;
    }
    ::close(fd);
  }

  void Mapped(const Target& t) {
    if (t.size == 0) return;
    const int fd = Open(t, false);
    if (fd < 0) return;
    void* map;
    {
      OpScope op(activity_, "mmap " + t.path);
      map = ::mmap(nullptr, static_cast<size_t>(t.size), PROT_READ, MAP_SHARED, fd, 0);
    }
    if (map == MAP_FAILED) {
      Error(t, std::string("mmap: ") + std::strerror(errno));
      ::close(fd);
      return;
    }
    const int64_t offset = RandomOffset(t.size);
    const int64_t n = std::min(RandomLength(), t.size - offset);
    buf_.resize(static_cast<size_t>(n));
    {
      OpScope op(activity_,
                 "mmap copy " + t.path + " " + std::to_string(n) + " at " + std::to_string(offset));
      std::memcpy(buf_.data(), static_cast<const uint8_t*>(map) + offset, static_cast<size_t>(n));
    }
    totals_.mmap_reads++;
    totals_.reads++;
    totals_.bytes += static_cast<uint64_t>(n);
    Compare(t, offset, buf_.data(), n, "mmap");
    ::munmap(map, static_cast<size_t>(t.size));
    ::close(fd);
  }

  const Options& o_;
  const std::vector<Target>& targets_;
  Totals& totals_;
  Activity& activity_;
  std::mt19937_64 rng_;
  bool sequential_;
  Clock::time_point deadline_;
  bool stopped_ = false;
  Bytes buf_, want_;
};

// ---------------------------------------------------------------------------
// Set-up.

int64_t StatusField(long pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream fields(line.substr(key.size()));
      int64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return -1;
}

bool ReadNpyHeader(Container& c, const std::string& path, std::string* error) {
  Bytes head(4096);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  const ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  ::close(fd);
  if (n < 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  auto header = itest::ParseNpyHeader(head.data(), static_cast<size_t>(n), error);
  if (!header) return false;
  if (!itest::CheckNpyDict(header->dict, c.ref->shape(), error)) return false;
  c.npy_header.assign(head.begin(), head.begin() + static_cast<int64_t>(header->total_length));
  return true;
}

std::vector<Target> MakeTargets(const Options& o, const std::vector<Container>& containers) {
  std::vector<Target> targets;
  for (const Container& c : containers) {
    const Reference& ref = *c.ref;
    const std::string base = o.mount + "/" + c.rel + "/";
    const int64_t nbytes = ref.nbytes();
    targets.push_back(Target{&c, Kind::kData, 0, 0, base + "data", nbytes});
    targets.push_back(Target{&c, Kind::kNpy, 0, 0, base + "data.npy",
                             static_cast<int64_t>(c.npy_header.size()) + nbytes});
    // A handful of chunks and slices per container, chosen once, so that
    // the working set is the whole set of containers (not one huge one).
    std::mt19937_64 rng(std::hash<std::string>{}(c.rel));
    const auto& boxes = ref.chunk_boxes();
    for (int i = 0; i < 6 && !boxes.empty(); ++i) {
      const int64_t k = static_cast<int64_t>(rng() % boxes.size());
      targets.push_back(Target{&c, Kind::kChunk, 0, k, base + "chunks/" + ref.chunk_names()[k],
                               boxes[k].NumItems() * ref.itemsize()});
    }
    for (int a = 0; a < ref.ndim(); ++a) {
      const int64_t n = ref.shape()[a];
      if (n == 0) continue;
      for (int i = 0; i < 3; ++i) {
        const int64_t k = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
        targets.push_back(Target{&c, Kind::kSlice, a, k,
                                 o.mount + "/" + c.rel + "/" + itest::SliceName(ref.shape(), a, k),
                                 nbytes / n});
      }
    }
  }
  return targets;
}

int Usage() {
  std::fprintf(stderr,
               "usage: stress_reader --mount MNT --ref REFDIR [--threads N] [--seconds S]\n"
               "  [--mode verify|hammer] [--mmap-percent P] [--pid PID] [--rss-limit BYTES]\n"
               "  [--max-op-seconds S] [--ready-file PATH]\n");
  return 2;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--mount") {
      o.mount = value();
    } else if (a == "--ref") {
      o.ref_dir = value();
    } else if (a == "--threads") {
      o.threads = std::atoi(value().c_str());
    } else if (a == "--seconds") {
      o.seconds = std::atof(value().c_str());
    } else if (a == "--mode") {
      const std::string m = value();
      if (m != "verify" && m != "hammer") return Usage();
      o.hammer = m == "hammer";
    } else if (a == "--mmap-percent") {
      o.mmap_percent = std::atoi(value().c_str());
    } else if (a == "--pid") {
      o.pid = std::atol(value().c_str());
    } else if (a == "--rss-limit") {
      o.rss_limit = std::atoll(value().c_str());
    } else if (a == "--max-op-seconds") {
      o.max_op_seconds = std::atof(value().c_str());
    } else if (a == "--ready-file") {
      o.ready_file = value();
    } else {
      return Usage();
    }
  }
  if (o.mount.empty() || o.ref_dir.empty() || o.threads < 1 || o.seconds <= 0) return Usage();

  // References: c-blosc2 decodes every container whole, up front.
  std::vector<Container> containers;
  try {
    for (const auto& e : itest::ReadManifest(o.ref_dir + "/manifest.tsv")) {
      Container c;
      c.rel = e.rel;
      c.ref = Reference::Open(o.ref_dir + "/" + e.reference, e.itemsize);
      containers.push_back(std::move(c));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stress_reader: set-up: %s\n", e.what());
    return 2;
  }
  uint64_t working_set = 0;
  for (Container& c : containers) {
    std::string error;
    if (!ReadNpyHeader(c, o.mount + "/" + c.rel + "/data.npy", &error)) {
      std::fprintf(stderr, "stress_reader: %s/data.npy header: %s\n", c.rel.c_str(), error.c_str());
      if (!o.hammer) return 1;
      return 2;
    }
    working_set += static_cast<uint64_t>(c.ref->nbytes());
  }
  const std::vector<Target> targets = MakeTargets(o, containers);

  Totals totals;
  std::vector<std::unique_ptr<Activity>> activity;
  for (int i = 0; i < o.threads; ++i) activity.push_back(std::make_unique<Activity>());
  std::atomic<bool> done{false};

  // Memory of the daemon and hangs of the readers, every 50 ms.
  const int64_t rss_start = o.pid > 0 ? StatusField(o.pid, "VmRSS") : -1;
  std::atomic<int64_t> rss_peak{rss_start};
  std::thread monitor([&] {
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (o.pid > 0) {
        const int64_t rss = StatusField(o.pid, "VmRSS");
        if (rss > rss_peak) rss_peak = rss;
      }
      const int64_t now = NowNs();
      for (int i = 0; i < o.threads; ++i) {
        const int64_t since = activity[i]->since_ns;
        if (since != 0 && now - since > static_cast<int64_t>(o.max_op_seconds * 1e9)) {
          std::lock_guard<std::mutex> lock(activity[i]->mutex);
          std::fprintf(stderr, "stress_reader: HANG: thread %d stuck for %.1f s in: %s\n", i,
                       (now - since) / 1e9, activity[i]->what.c_str());
          std::fflush(stderr);
          std::_Exit(3);
        }
      }
    }
  });

  if (!o.ready_file.empty()) std::ofstream(o.ready_file) << "reading\n";
  const auto t0 = Clock::now();
  const auto deadline =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  std::vector<std::thread> threads;
  for (int i = 0; i < o.threads; ++i) {
    threads.emplace_back([&, i] {
      Reader r(o, targets, totals, *activity[i], 0x5eed0000u + static_cast<uint64_t>(i), i % 4 == 3,
               deadline);
      r.Run();
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  done = true;
  monitor.join();
  const int64_t hwm = o.pid > 0 ? StatusField(o.pid, "VmHWM") : -1;

  std::printf(
      "stress_reader: containers=%zu files=%zu working_set_bytes=%llu threads=%d seconds=%.1f "
      "reads=%llu mmap_reads=%llu bytes=%llu MBps=%.1f errors=%llu mismatches=%llu "
      "rss_start_bytes=%lld rss_peak_bytes=%lld rss_hwm_bytes=%lld rss_limit_bytes=%lld\n",
      containers.size(), targets.size(), static_cast<unsigned long long>(working_set), o.threads,
      elapsed, static_cast<unsigned long long>(totals.reads.load()),
      static_cast<unsigned long long>(totals.mmap_reads.load()),
      static_cast<unsigned long long>(totals.bytes.load()),
      static_cast<double>(totals.bytes.load()) / elapsed / 1e6,
      static_cast<unsigned long long>(totals.errors.load()),
      static_cast<unsigned long long>(totals.mismatches.load()), static_cast<long long>(rss_start),
      static_cast<long long>(rss_peak.load()), static_cast<long long>(hwm),
      static_cast<long long>(o.rss_limit));
  int rc = 0;
  if (totals.mismatches > 0) {
    std::fprintf(stderr, "stress_reader: FAIL: %llu reads returned wrong bytes\n",
                 static_cast<unsigned long long>(totals.mismatches.load()));
    rc = 1;
  }
  if (!o.hammer && totals.errors > 0) {
    std::fprintf(stderr, "stress_reader: FAIL: %llu errors\n",
                 static_cast<unsigned long long>(totals.errors.load()));
    rc = 1;
  }
  if (!o.hammer && totals.reads == 0) {
    std::fprintf(stderr, "stress_reader: FAIL: no reads\n");
    rc = 1;
  }
  const int64_t peak = std::max<int64_t>(rss_peak, hwm);
  if (o.rss_limit > 0 && peak > o.rss_limit) {
    std::fprintf(stderr, "stress_reader: FAIL: daemon peak RSS %lld bytes > limit %lld\n",
                 static_cast<long long>(peak), static_cast<long long>(o.rss_limit));
    rc = 1;
  }
  return rc;
}

}  // namespace
}  // namespace b2ndfs::stress

int main(int argc, char** argv) {
  blosc2_init();
  const int rc = b2ndfs::stress::Main(argc, argv);
  blosc2_destroy();
  return rc;
}
