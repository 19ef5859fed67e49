// lifecycle_probe: the reading side of the lifecycle FUSE tests
// (fuse_generations.sh, fuse_many.sh, fuse_wholechunk.sh). It knows nothing
// of the b2ndfs code: it reads files of a mount with read()/pread()/mmap()
// and compares them with reference files that c-blosc2 wrote
// (b2nd_fixture). Sub-commands:
//
//   lifecycle_probe hold [--strict] [--mmap] FILE REF [FILE REF ...]
//     Opens every FILE (and maps it with --mmap), checks that it reads
//     exactly as REF, prints "ready" and then, for every line read from
//     stdin, checks again through the descriptors (and mappings) it holds
//     and prints "checked old=N failed=M (eio=.. estale=.. enoent=..)
//     bad=K". A FILE's container may have changed meanwhile.
//     With --strict (a container replaced by rename or deleted: README.md,
//     "Containers that change": an open file keeps reading the version it
//     opened, as an unlinked local file does), each read must return exactly
//     REF's bytes (up to REF's end) and each mapped page must hold them: a
//     failed read (EIO, ESTALE, ENOENT...) or a SIGBUS is bad.
//     Without it (a container rewritten in place, whose old bytes are gone),
//     a read may also fail with EIO and a page raise SIGBUS; ESTALE and
//     ENOENT count as failures too (the kernel refreshes a file's attributes
//     for a read that crosses its cached size). Anything else (other bytes,
//     a short read, another errno) is bad. Bad reads are reported on stderr.
//     Exits 0 at the end of stdin if nothing was bad, else 1.
//
//   lifecycle_probe many MOUNT LIST [--threads N]
//     LIST (b2nd_fixture many's many.tsv): name TAB shape TAB dtype TAB
//     data-reference. For each name, reads MOUNT/name/meta.json (shape and
//     dtype must be there) and a few ranges of MOUNT/name/data (compared
//     with the reference). Prints a summary; every failure (with its errno
//     text) goes to stderr. Exits 0 only if all succeeded.
//
//   lifecycle_probe blocks FILE REF --chunk-bytes C --threads N [--direct]
//     For every C-byte stretch of FILE in turn, N threads released together
//     each read their own 1/N of it (so, for a file whose chunks are
//     contiguous stretches, several requests for different blocks of one
//     chunk arrive at once), and every byte is compared with REF. --direct
//     opens with O_DIRECT, so each read reaches the daemon as it is.
//
// Exit status: 0 success, 1 a check failed, 2 usage or setup error.
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Bytes = std::vector<uint8_t>;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "lifecycle_probe: %s\n", message.c_str());
  std::exit(2);
}

// Reads a whole file; on failure `error` says why and `err` is the errno.
bool ReadWhole(const std::string& path, Bytes& out, std::string& error, int* err = nullptr) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  int e = 0;
  if (fd < 0) {
    e = errno;
    error = path + ": open: " + std::strerror(e);
  } else {
    out.clear();
    uint8_t buf[65536];
    while (true) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        e = errno;
        error = path + ": read: " + std::strerror(e);
        break;
      }
      if (n == 0) break;
      out.insert(out.end(), buf, buf + n);
    }
    ::close(fd);
  }
  if (err != nullptr) *err = e;
  return e == 0;
}

Bytes MustRead(const std::string& path) {
  Bytes b;
  std::string error;
  if (!ReadWhole(path, b, error)) Die(error);
  return b;
}

// pread until `length` bytes or EOF; -1 with errno on the first error.
ssize_t PreadFull(int fd, uint8_t* out, size_t length, off_t offset) {
  size_t done = 0;
  while (done < length) {
    const ssize_t n = ::pread(fd, out + done, length - done, offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

// ---------------------------------------------------------------------------
// hold

sigjmp_buf g_fault_jump;
volatile sig_atomic_t g_fault_armed = 0;

void OnSigbus(int) {
  if (g_fault_armed) siglongjmp(g_fault_jump, 1);
  ::signal(SIGBUS, SIG_DFL);
  ::raise(SIGBUS);
}

struct Held {
  std::string path;
  Bytes ref;
  int fd = -1;
  const uint8_t* map = nullptr;
  size_t map_len = 0;
};

struct Tally {
  uint64_t old_bytes = 0;  // reads (or pages) that returned the old bytes
  uint64_t eio = 0;        // reads that failed with EIO, pages that raised SIGBUS
  uint64_t estale = 0;
  uint64_t enoent = 0;
  uint64_t bad = 0;
};

// Copies a mapped page; false if touching it raised SIGBUS.
bool CopyMapped(const uint8_t* from, size_t length, uint8_t* to) {
  if (sigsetjmp(g_fault_jump, 1) != 0) {
    g_fault_armed = 0;
    return false;
  }
  g_fault_armed = 1;
  std::memcpy(to, from, length);
  g_fault_armed = 0;
  return true;
}

// One read of [offset, offset + length) through the held descriptor.
void CheckRead(const Held& h, off_t offset, size_t length, bool must_be_old, Tally& t) {
  const size_t size = h.ref.size();
  const size_t want = static_cast<size_t>(offset) >= size
                          ? 0
                          : std::min(length, size - static_cast<size_t>(offset));
  Bytes buf(length);
  errno = 0;
  const ssize_t n = PreadFull(h.fd, buf.data(), length, offset);
  const int err = errno;
  const std::string where =
      h.path + " [" + std::to_string(offset) + ", +" + std::to_string(length) + ")";
  if (n < 0) {
    if (!must_be_old && (err == EIO || err == ESTALE || err == ENOENT)) {
      ++(err == EIO ? t.eio : err == ESTALE ? t.estale : t.enoent);
      return;
    }
    ++t.bad;
    std::fprintf(stderr, "BAD: %s: read failed: %s\n", where.c_str(), std::strerror(err));
    return;
  }
  if (static_cast<size_t>(n) != want) {
    ++t.bad;
    std::fprintf(stderr, "BAD: %s: %zd bytes, the old generation has %zu there\n", where.c_str(), n,
                 want);
    return;
  }
  if (want != 0 && std::memcmp(buf.data(), h.ref.data() + offset, want) != 0) {
    ++t.bad;
    size_t at = 0;
    while (buf[at] == h.ref[static_cast<size_t>(offset) + at]) ++at;
    std::fprintf(stderr, "BAD: %s: bytes are not the old generation's (first at +%zu)\n",
                 where.c_str(), at);
    return;
  }
  ++t.old_bytes;
}

void CheckMapping(const Held& h, bool must_be_old, Tally& t) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  Bytes buf(page);
  for (size_t off = 0; off < h.ref.size(); off += page) {
    const size_t n = std::min(page, h.ref.size() - off);
    if (!CopyMapped(h.map + off, n, buf.data())) {
      if (must_be_old) {
        ++t.bad;
        std::fprintf(stderr, "BAD: %s: SIGBUS on the mapped page at %zu\n", h.path.c_str(), off);
      } else {
        ++t.eio;
      }
      continue;
    }
    if (std::memcmp(buf.data(), h.ref.data() + off, n) != 0) {
      ++t.bad;
      std::fprintf(stderr, "BAD: %s: mapped page at %zu does not hold the old bytes\n",
                   h.path.c_str(), off);
      continue;
    }
    ++t.old_bytes;
  }
}

// Reads at the start, the end, odd offsets, across the whole file.
void CheckAll(std::vector<Held>& held, bool must_be_old, Tally& t) {
  for (Held& h : held) {
    const off_t size = static_cast<off_t>(h.ref.size());
    const off_t offsets[] = {0, size / 3, size / 2 + 17, std::max<off_t>(0, size - 100),
                             std::max<off_t>(0, size - 1)};
    // Twice: as the kernel has it cached, and with its clean pages dropped so
    // that the reads reach the daemon.
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) ::posix_fadvise(h.fd, 0, 0, POSIX_FADV_DONTNEED);
      for (off_t o : offsets) {
        CheckRead(h, o, 4096, must_be_old, t);
        CheckRead(h, o, 777, must_be_old, t);
      }
      CheckRead(h, 0, h.ref.size() + 4096, must_be_old, t);
    }
    if (h.map != nullptr) CheckMapping(h, must_be_old, t);
  }
}

int RunHold(const std::vector<std::string>& args) {
  bool mmap_too = false;
  bool strict = false;
  std::vector<std::string> pos;
  for (const std::string& a : args) {
    if (a == "--mmap") {
      mmap_too = true;
    } else if (a == "--strict") {
      strict = true;
    } else {
      pos.push_back(a);
    }
  }
  if (pos.empty() || pos.size() % 2 != 0) Die("hold needs FILE REF pairs");
  struct sigaction sa {};
  sa.sa_handler = OnSigbus;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, nullptr);

  std::vector<Held> held;
  for (size_t i = 0; i < pos.size(); i += 2) {
    Held h;
    h.path = pos[i];
    h.ref = MustRead(pos[i + 1]);
    h.fd = ::open(h.path.c_str(), O_RDONLY);
    if (h.fd < 0) Die(h.path + ": " + std::strerror(errno));
    if (mmap_too && !h.ref.empty()) {
      void* p = ::mmap(nullptr, h.ref.size(), PROT_READ, MAP_SHARED, h.fd, 0);
      if (p == MAP_FAILED) Die(h.path + ": mmap: " + std::strerror(errno));
      h.map = static_cast<const uint8_t*>(p);
      h.map_len = h.ref.size();
    }
    held.push_back(std::move(h));
  }
  Tally before;
  CheckAll(held, true, before);
  if (before.bad != 0) {
    std::fprintf(stderr, "hold: the files did not read as their references to begin with\n");
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  uint64_t bad = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    Tally t;
    CheckAll(held, strict, t);
    bad += t.bad;
    std::printf("checked old=%llu failed=%llu (eio=%llu estale=%llu enoent=%llu) bad=%llu\n",
                static_cast<unsigned long long>(t.old_bytes),
                static_cast<unsigned long long>(t.eio + t.estale + t.enoent),
                static_cast<unsigned long long>(t.eio), static_cast<unsigned long long>(t.estale),
                static_cast<unsigned long long>(t.enoent), static_cast<unsigned long long>(t.bad));
    std::fflush(stdout);
  }
  for (Held& h : held) {
    if (h.map != nullptr) ::munmap(const_cast<uint8_t*>(h.map), h.map_len);
    ::close(h.fd);
  }
  return bad == 0 ? 0 : 1;
}

// ---------------------------------------------------------------------------
// many

struct ManyEntry {
  std::string name;
  std::string shape;  // "a,b"
  std::string dtype;
  std::string ref;
};

std::string WithoutSpaces(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c != ' ' && c != '\n' && c != '\t' && c != '\r') out += c;
  }
  return out;
}

int RunMany(const std::vector<std::string>& args) {
  std::vector<std::string> pos;
  int threads = 2;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--threads" && i + 1 < args.size()) {
      threads = std::max(1, std::atoi(args[++i].c_str()));
    } else {
      pos.push_back(args[i]);
    }
  }
  if (pos.size() != 2) Die("many MOUNT LIST [--threads N]");
  const std::string mount = pos[0];
  std::vector<ManyEntry> entries;
  {
    std::ifstream in(pos[1]);
    if (!in) Die(pos[1] + ": cannot open");
    std::string line;
    while (std::getline(in, line)) {
      std::stringstream ss(line);
      ManyEntry e;
      if (!std::getline(ss, e.name, '\t') || !std::getline(ss, e.shape, '\t') ||
          !std::getline(ss, e.dtype, '\t') || !std::getline(ss, e.ref, '\t')) {
        Die(pos[1] + ": bad line " + line);
      }
      entries.push_back(std::move(e));
    }
  }
  // The references are few (templates): read each once.
  std::vector<std::pair<std::string, Bytes>> refs;
  auto ref_of = [&](const std::string& path) -> const Bytes& {
    for (const auto& [p, b] : refs) {
      if (p == path) return b;
    }
    refs.emplace_back(path, MustRead(path));
    return refs.back().second;
  };
  for (const ManyEntry& e : entries) ref_of(e.ref);

  std::atomic<size_t> next{0};
  std::atomic<uint64_t> ok{0}, failed{0}, emfile{0};
  std::mutex report_mutex;
  auto report = [&](const std::string& what, int err) {
    if (err == EMFILE || err == ENFILE) emfile++;
    std::lock_guard<std::mutex> lock(report_mutex);
    if (failed.load() < 20) std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  };
  auto worker = [&]() {
    Bytes buf(1024);
    for (size_t i = next++; i < entries.size(); i = next++) {
      const ManyEntry& e = entries[i];
      const Bytes& ref = ref_of(e.ref);
      const std::string dir = mount + "/" + e.name;
      Bytes meta;
      std::string error;
      bool good = true;
      int meta_err = 0;
      if (!ReadWhole(dir + "/meta.json", meta, error, &meta_err)) {
        report(error, meta_err);
        good = false;
      } else {
        const std::string json = WithoutSpaces(std::string(meta.begin(), meta.end()));
        if (json.find("\"shape\":[" + e.shape + "]") == std::string::npos ||
            json.find("\"dtype\":\"" + e.dtype + "\"") == std::string::npos) {
          report(dir + "/meta.json: no shape [" + e.shape + "] and dtype " + e.dtype + ": " +
                     json.substr(0, 200),
                 0);
          good = false;
        }
      }
      const std::string data = dir + "/data";
      const int fd = ::open(data.c_str(), O_RDONLY);
      if (fd < 0) {
        const int err = errno;
        report(data + ": open: " + std::strerror(err), err);
        good = false;
      } else {
        struct stat st {};
        if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != ref.size()) {
          report(data + ": size " + std::to_string(st.st_size) + ", expected " +
                     std::to_string(ref.size()),
                 0);
          good = false;
        }
        const size_t size = ref.size();
        const size_t offsets[] = {0, (size / 2) & ~size_t{7}, size > 64 ? size - 64 : 0};
        for (size_t off : offsets) {
          const size_t n = std::min<size_t>(64, size - off);
          const ssize_t got = PreadFull(fd, buf.data(), n, static_cast<off_t>(off));
          if (got < 0) {
            const int err = errno;
            report(data + ": read at " + std::to_string(off) + ": " + std::strerror(err), err);
            good = false;
            break;
          }
          if (static_cast<size_t>(got) != n || std::memcmp(buf.data(), ref.data() + off, n) != 0) {
            report(data + ": bytes at " + std::to_string(off) + " differ from " + e.ref, 0);
            good = false;
            break;
          }
        }
        ::close(fd);
      }
      (good ? ok : failed)++;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  std::printf("many: %llu containers read correctly, %llu failed (%llu with EMFILE/ENFILE)\n",
              static_cast<unsigned long long>(ok.load()),
              static_cast<unsigned long long>(failed.load()),
              static_cast<unsigned long long>(emfile.load()));
  return failed.load() == 0 && ok.load() == entries.size() ? 0 : 1;
}

// ---------------------------------------------------------------------------
// blocks

int RunBlocks(const std::vector<std::string>& args) {
  std::vector<std::string> pos;
  int64_t chunk_bytes = 0;
  int threads = 0;
  bool direct = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--chunk-bytes" && i + 1 < args.size()) {
      chunk_bytes = std::atoll(args[++i].c_str());
    } else if (args[i] == "--threads" && i + 1 < args.size()) {
      threads = std::atoi(args[++i].c_str());
    } else if (args[i] == "--direct") {
      direct = true;
    } else {
      pos.push_back(args[i]);
    }
  }
  if (pos.size() != 2 || chunk_bytes <= 0 || threads <= 0) {
    Die("blocks FILE REF --chunk-bytes C --threads N [--direct]");
  }
  const Bytes ref = MustRead(pos[1]);
  const int fd = ::open(pos[0].c_str(), O_RDONLY | (direct ? O_DIRECT : 0));
  if (fd < 0) Die(pos[0] + ": " + std::strerror(errno));
  const int64_t size = static_cast<int64_t>(ref.size());
  const int64_t stretches = (size + chunk_bytes - 1) / chunk_bytes;
  std::atomic<uint64_t> bad{0};
  std::barrier sync(threads);
  auto worker = [&](int t) {
    // O_DIRECT wants aligned buffers.
    const int64_t piece = (chunk_bytes + threads - 1) / threads;
    void* mem = nullptr;
    if (posix_memalign(&mem, 4096, static_cast<size_t>(piece) + 4096) != 0) std::abort();
    auto* buf = static_cast<uint8_t*>(mem);
    for (int64_t c = 0; c < stretches; ++c) {
      sync.arrive_and_wait();
      const int64_t from = c * chunk_bytes + t * piece;
      const int64_t to = std::min({from + piece, (c + 1) * chunk_bytes, size});
      if (from >= to) continue;
      const ssize_t n = PreadFull(fd, buf, static_cast<size_t>(to - from), from);
      if (n != to - from) {
        bad++;
        std::fprintf(stderr, "FAIL: %s [%lld, %lld): %s\n", pos[0].c_str(),
                     static_cast<long long>(from), static_cast<long long>(to),
                     n < 0 ? std::strerror(errno) : "short read");
      } else if (std::memcmp(buf, ref.data() + from, static_cast<size_t>(n)) != 0) {
        bad++;
        std::fprintf(stderr, "FAIL: %s [%lld, %lld): bytes differ from %s\n", pos[0].c_str(),
                     static_cast<long long>(from), static_cast<long long>(to), pos[1].c_str());
      }
    }
    std::free(mem);
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (auto& t : pool) t.join();
  ::close(fd);
  std::printf("blocks: %lld stretches of %lld bytes read by %d threads, %llu failures\n",
              static_cast<long long>(stretches), static_cast<long long>(chunk_bytes), threads,
              static_cast<unsigned long long>(bad.load()));
  return bad.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fprintf(stderr,
                 "usage: lifecycle_probe hold [--strict] [--mmap] FILE REF [FILE REF ...]\n"
                 "       lifecycle_probe many MOUNT LIST [--threads N]\n"
                 "       lifecycle_probe blocks FILE REF --chunk-bytes C --threads N "
                 "[--direct]\n");
    return 2;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "hold") return RunHold(args);
  if (cmd == "many") return RunMany(args);
  if (cmd == "blocks") return RunBlocks(args);
  Die("unknown sub-command " + cmd);
}
