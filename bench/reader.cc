// bench_reader: timed reads of a plain file, as ordinary programs do them
// (through a FUSE mount, or any file). The file holds a C-order array from
// byte --base on (0 for b2ndfs's `data`, the .npy header size for data.npy).
//
//   bench_reader [--drop-cache] [--base N] [--repeat K] OP FILE [ARGS]
//     seq FILE                    the whole file with 1 MiB read() calls (what cat does)
//     rand FILE COUNT LENGTH SEED COUNT preads of LENGTH bytes at 4 KiB-aligned random offsets
//     cubes FILE N0 N1 N2 ITEMSIZE COUNT EDGE SEED
//                                 COUNT random EDGE^3 sub-cubes of an N0xN1xN2 array, each as
//                                 EDGE*EDGE preads of EDGE*ITEMSIZE-byte rows (the naive route)
//     viewcubes DIR N0 N1 N2 ITEMSIZE COUNT EDGE SEED
//                                 the same sub-cubes, each as one b2ndfs hyperslab file
//                                 DIR/view/z0:z1,y0:y1,x0:x1 (DIR: the container directory),
//                                 opened, read whole with 1 MiB read()s and closed
//     first FILE                  open + one 4 KiB pread at the start of the array
//     dir DIR                     every file of DIR in name order, each opened, read whole with
//                                 1 MiB read()s and closed (what image-sequence importers such as
//                                 Fiji's and ffmpeg do with b2ndfs's slices/A/); the listing
//                                 (readdir) is timed too
//   bench_reader evict FILE...    drops FILEs' clean pages from the page cache
//   bench_reader resident FILE    prints the fraction of FILE's pages in the page cache
//   bench_reader prime MIB        writes MIB MiB of new anonymous memory and unmaps it, so that
//                                 the next process's allocations find memory the host backs
//                                 (see PrimeMemory); prints the time it took
//
// --repeat K does the whole operation K times and reports the median time
// (and fails if the bytes differ between repeats).
// --drop-cache first evicts FILE's pages from the kernel page cache
// (posix_fadvise DONTNEED, which also works on FUSE files), so that every
// read of the run reaches the filesystem. The time covers open(), the read
// calls and close(); the checksum (bench_common.h) is computed outside it.
// Prints one JSON object. A short read or an error is reported and fails.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"

namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "bench_reader: %s\n", message.c_str());
  std::exit(1);
}

int OpenOrDie(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) Die("cannot open " + path + ": " + std::strerror(errno));
  return fd;
}

void Evict(const std::string& path) {
  const int fd = OpenOrDie(path);
  const int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  if (rc != 0) Die("posix_fadvise " + path + ": " + std::strerror(rc));
}

double Resident(const std::string& path) {
  const int fd = OpenOrDie(path);
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    return 0;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) Die("cannot mmap " + path);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((size + page - 1) / page);
  if (::mincore(map, size, vec.data()) != 0) Die("mincore " + path);
  size_t in = 0;
  for (unsigned char v : vec) in += v & 1;
  ::munmap(map, size);
  return static_cast<double>(in) / static_cast<double>(vec.size());
}

double SystemCpuSeconds() {
  struct rusage usage;
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_stime.tv_usec) * 1e-6;
}

// Accumulates the time spent in system calls only.
struct Clock {
  double total = 0;
  double started = 0;
  void Start() { started = bench::Seconds(); }
  void Stop() { total += bench::Seconds() - started; }
};

// Reads exactly `length` bytes at `offset` (fewer only at end of file).
// Reads `fd` to its end with 1 MiB read()s into `buffer`, feeding `checksum`.
int64_t ReadToEnd(int fd, const std::string& name, std::vector<uint8_t>& buffer,
                  bench::Checksum& checksum, Clock& clock, int& calls) {
  int64_t got = 0;
  for (;;) {
    clock.Start();
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    clock.Stop();
    ++calls;
    if (n < 0) {
      if (errno == EINTR) continue;
      Die(name + ": read error: " + std::strerror(errno));
    }
    if (n == 0) break;
    checksum.Update(buffer.data(), static_cast<size_t>(n));
    got += n;
  }
  return got;
}

// The names in `dir` (no dot entries), sorted as `ls` and file dialogs do.
std::vector<std::string> ListSorted(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) Die("cannot list " + dir + ": " + std::strerror(errno));
  std::vector<std::string> names;
  while (const struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

size_t PreadFull(int fd, uint8_t* buffer, size_t length, int64_t offset, Clock& clock, int& calls) {
  size_t done = 0;
  while (done < length) {
    clock.Start();
    const ssize_t n =
        ::pread(fd, buffer + done, length - done, offset + static_cast<int64_t>(done));
    clock.Stop();
    ++calls;
    if (n < 0) {
      if (errno == EINTR) continue;
      Die(std::string("read error: ") + std::strerror(errno));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

// In a virtual machine with free page reporting (virtio-balloon, Linux's
// page_reporting: free blocks of 2 MiB and more go back to the host about
// 2 s after they are freed), memory freed long ago costs the host's work to
// take back, 0.3-1.2 GB/s here, against ~15 GB/s for memory freed moments
// ago. A process that allocates as it reads (a daemon filling its block
// cache) pays that inside its timing, one that reuses a buffer touched
// before its clock (c-blosc2 in-process) does not; touching and freeing
// memory right before each cold run puts every route in the same state.
double PrimeMemory(int64_t mib) {
  const size_t bytes = static_cast<size_t>(mib) << 20;
  const double start = bench::Seconds();
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) Die("prime: cannot map " + std::to_string(mib) + " MiB");
  ::madvise(p, bytes, MADV_HUGEPAGE);  // freed as whole 2 MiB blocks, as the daemon's slabs are
  volatile char* bytes_of = static_cast<char*>(p);
  for (size_t off = 0; off < bytes; off += 4096) bytes_of[off] = 1;
  ::munmap(p, bytes);
  return bench::Seconds() - start;
}

}  // namespace

int main(int argc, char** argv) {
  bool drop_cache = false;
  int64_t base = 0;
  int repeat = 1;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--drop-cache") {
      drop_cache = true;
    } else if (a == "--base" && i + 1 < argc) {
      base = std::atoll(argv[++i]);
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      break;
    }
  }
  if (i + 1 >= argc) Die("usage: see the comment at the top of bench/reader.cc");
  const std::string op = argv[i];
  const std::string path = argv[i + 1];
  std::vector<std::string> args(argv + i + 2, argv + argc);
  auto arg = [&](size_t k) -> int64_t {
    if (k >= args.size()) Die("missing argument for " + op);
    return std::atoll(args[k].c_str());
  };

  if (op == "evict") {
    Evict(path);
    for (const auto& more : args) Evict(more);
    return 0;
  }
  if (op == "prime") {
    const int64_t mib = std::atoll(path.c_str());
    if (mib <= 0) Die("prime: MIB must be positive");
    const double seconds = PrimeMemory(mib);
    std::printf("{\"tool\": \"reader\", \"op\": \"prime\", \"bytes\": %lld, \"seconds\": %.6f}\n",
                static_cast<long long>(mib) << 20, seconds);
    return 0;
  }
  if (op == "resident") {
    std::printf("{\"resident\": %.4f}\n", Resident(path));
    return 0;
  }
  struct Run {
    double seconds = 0;
    double sys_seconds = 0;
    int calls = 0;
    int64_t bytes = 0;
    std::string checksum;
  };
  auto once = [&]() -> Run {
    const bool view_files = op == "viewcubes" || op == "dir";  // FILE is a directory
    if (drop_cache && !view_files) Evict(path);
    bench::Checksum checksum;
    Clock clock;
    int calls = 0;
    int64_t bytes = 0;
    std::vector<uint8_t> buffer;
    const double sys_before = SystemCpuSeconds();
    clock.Start();
    const int fd = view_files ? -1 : OpenOrDie(path);
    clock.Stop();
    if (op == "dir") {
      buffer.assign(1 << 20, 0);
      std::vector<std::string> names;
      if (drop_cache) {
        for (const auto& name : ListSorted(path)) Evict(path + "/" + name);
      }
      clock.Start();
      names = ListSorted(path);
      clock.Stop();
      for (const auto& name : names) {
        const std::string file = path + "/" + name;
        clock.Start();
        const int file_fd = OpenOrDie(file);
        clock.Stop();
        const int64_t got = ReadToEnd(file_fd, file, buffer, checksum, clock, calls);
        struct stat st;
        if (::fstat(file_fd, &st) != 0 || st.st_size != got) {
          Die(file + ": read " + std::to_string(got) + " bytes, stat says " +
              std::to_string(st.st_size));
        }
        clock.Start();
        ::close(file_fd);
        clock.Stop();
        bytes += got;
      }
    } else if (view_files) {
      const bench::Index3 shape{arg(0), arg(1), arg(2)};
      const int64_t edge = arg(5);
      const auto origins =
          bench::CubeOrigins(shape, edge, static_cast<int>(arg(4)), static_cast<uint64_t>(arg(6)));
      const int64_t cube_bytes = edge * edge * edge * arg(3);
      buffer.assign(1 << 20, 0);
      for (const auto& o : origins) {
        std::string name = path + "/view/";
        for (int a = 0; a < 3; ++a) {
          name += (a ? "," : "") + std::to_string(o[a]) + ":" + std::to_string(o[a] + edge);
        }
        if (drop_cache) Evict(name);
        clock.Start();
        const int cube_fd = OpenOrDie(name);
        clock.Stop();
        int64_t got = 0;
        for (;;) {
          clock.Start();
          const ssize_t n = ::read(cube_fd, buffer.data(), buffer.size());
          clock.Stop();
          ++calls;
          if (n < 0) {
            if (errno == EINTR) continue;
            Die(name + ": read error: " + std::strerror(errno));
          }
          if (n == 0) break;
          checksum.Update(buffer.data(), static_cast<size_t>(n));
          got += n;
        }
        clock.Start();
        ::close(cube_fd);
        clock.Stop();
        if (got != cube_bytes) Die(name + ": read " + std::to_string(got) + " bytes");
        bytes += got;
      }
    } else if (op == "seq") {
      buffer.assign(1 << 20, 0);
      for (;;) {
        clock.Start();
        const ssize_t n = ::read(fd, buffer.data(), buffer.size());
        clock.Stop();
        ++calls;
        if (n < 0) {
          if (errno == EINTR) continue;
          Die(path + ": read error: " + std::strerror(errno));
        }
        if (n == 0) break;
        checksum.Update(buffer.data(), static_cast<size_t>(n));
        bytes += n;
      }
      struct stat st;
      if (::fstat(fd, &st) != 0 || st.st_size != bytes) {
        Die(path + ": read " + std::to_string(bytes) + " bytes, stat says " +
            std::to_string(st.st_size));
      }
    } else if (op == "rand") {
      struct stat st;
      if (::fstat(fd, &st) != 0) Die("cannot stat " + path);
      const int count = static_cast<int>(arg(0));
      const int64_t length = arg(1);
      const auto offsets =
          bench::RandomOffsets(st.st_size - base, length, count, static_cast<uint64_t>(arg(2)));
      buffer.assign(static_cast<size_t>(length), 0);
      for (int64_t offset : offsets) {
        const size_t n =
            PreadFull(fd, buffer.data(), static_cast<size_t>(length), base + offset, clock, calls);
        if (n != static_cast<size_t>(length)) Die(path + ": short read");
        checksum.Update(buffer.data(), n);
        bytes += static_cast<int64_t>(n);
      }
    } else if (op == "cubes") {
      const bench::Index3 shape{arg(0), arg(1), arg(2)};
      const int64_t itemsize = arg(3);
      const int count = static_cast<int>(arg(4));
      const int64_t edge = arg(5);
      const auto origins = bench::CubeOrigins(shape, edge, count, static_cast<uint64_t>(arg(6)));
      const size_t row = static_cast<size_t>(edge * itemsize);
      buffer.assign(row, 0);
      for (const auto& o : origins) {
        for (int64_t z = o[0]; z < o[0] + edge; ++z) {
          for (int64_t y = o[1]; y < o[1] + edge; ++y) {
            const int64_t offset = base + ((z * shape[1] + y) * shape[2] + o[2]) * itemsize;
            const size_t n = PreadFull(fd, buffer.data(), row, offset, clock, calls);
            if (n != row) Die(path + ": short read");
            checksum.Update(buffer.data(), n);
            bytes += static_cast<int64_t>(n);
          }
        }
      }
    } else if (op == "first") {
      buffer.assign(4096, 0);
      const size_t n = PreadFull(fd, buffer.data(), buffer.size(), base, clock, calls);
      checksum.Update(buffer.data(), n);
      bytes = static_cast<int64_t>(n);
    } else {
      Die("unknown operation " + op);
    }
    clock.Start();
    if (fd >= 0) ::close(fd);
    clock.Stop();
    return Run{clock.total, SystemCpuSeconds() - sys_before, calls, bytes, checksum.Hex()};
  };

  std::vector<Run> runs;
  for (int k = 0; k < repeat; ++k) {
    runs.push_back(once());
    if (runs.back().checksum != runs.front().checksum) Die(path + ": bytes differ between repeats");
  }
  std::sort(runs.begin(), runs.end(),
            [](const Run& x, const Run& y) { return x.seconds < y.seconds; });
  const Run& median = runs[runs.size() / 2];
  std::printf(
      "{\"tool\": \"reader\", \"op\": \"%s\", \"seconds\": %.6f, \"min_seconds\": %.6f, "
      "\"repeat\": %d, \"bytes\": %lld, \"calls\": %d, \"sys_seconds\": %.6f, "
      "\"checksum\": \"%s\"}\n",
      op.c_str(), median.seconds, runs.front().seconds, repeat,
      static_cast<long long>(median.bytes), median.calls, median.sys_seconds,
      median.checksum.c_str());
  return 0;
}
