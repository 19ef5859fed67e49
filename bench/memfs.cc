// bench_memfs: the FUSE ceiling. A trivial read-only libfuse3 low-level
// filesystem that serves files whose bytes are generated into memory at
// start-up, with the FUSE settings b2ndfs uses (src/fuse/session.cc): max_write
// 1 MiB (so the kernel sends reads of up to 1 MiB), max_readahead 1 MiB and
// the mount's read_ahead_kb raised to 1 MiB, async reads, splice writes,
// keep_cache on open, no direct_io, the multithreaded loop (clone_fd 0, 10
// idle threads). Whatever b2ndfs measures above this is its own cost.
//
//   bench_memfs MOUNTPOINT [NAME=BYTES ...] [--dirs N] [--getxattr-enodata] [--readahead-kb N] [-f]
//
// --dirs N adds N empty directories c00000.b2nd ... (the ceiling of listing
// a directory of N containers, which b2ndfs shows as directories).
// --getxattr-enodata answers getxattr with ENODATA and listxattr with an
// empty list, as b2ndfs does, instead of leaving them unimplemented (after
// one ENOSYS the kernel stops sending them).
// Returns once mounted (daemonizes unless -f); `fusermount3 -u` ends it.
// MOUNTPOINT/.stats (not cached, read it with cat) is a JSON document of the
// read requests served so far: count, bytes, largest, most in flight at
// once, and a histogram of request sizes (power-of-two buckets).
#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench_common.h"

namespace {

constexpr size_t kMaxRead = 1 << 20;   // as b2ndfs's SessionOptions::max_read
constexpr double kAttrTimeout = 60.0;  // as b2ndfs's vfs::Options::attr_timeout
constexpr fuse_ino_t kStatsIno = 2;
constexpr fuse_ino_t kFirstFileIno = 3;

struct File {
  std::string name;
  bool directory = false;
  std::vector<uint8_t> bytes;
};

struct Stats {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> largest{0};
  std::atomic<int> in_flight{0};
  std::atomic<int> most_in_flight{0};
  std::atomic<uint64_t> histogram[32] = {};
};

struct State {
  std::vector<File> files;  // inode kFirstFileIno + index
  std::unordered_map<std::string, size_t> by_name;
  Stats stats;
  time_t start = 0;
};

State* g_state = nullptr;

std::string StatsJson() {
  Stats& s = g_state->stats;
  std::string out = "{\"requests\": " + std::to_string(s.requests.load()) +
                    ", \"bytes\": " + std::to_string(s.bytes.load()) +
                    ", \"largest\": " + std::to_string(s.largest.load()) +
                    ", \"most_in_flight\": " + std::to_string(s.most_in_flight.load()) +
                    ", \"histogram\": {";
  bool first = true;
  for (int b = 0; b < 32; ++b) {
    const uint64_t n = s.histogram[b].load();
    if (n == 0) continue;
    out += (first ? "\"" : ", \"") + std::to_string(1ull << b) + "\": " + std::to_string(n);
    first = false;
  }
  return out + "}}\n";
}

bool FillAttr(fuse_ino_t ino, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = ino;
  st->st_uid = ::getuid();
  st->st_gid = ::getgid();
  st->st_atime = st->st_mtime = st->st_ctime = g_state->start;
  if (ino == FUSE_ROOT_ID) {
    st->st_mode = S_IFDIR | 0555;
    st->st_nlink = 2;
    return true;
  }
  if (ino == kStatsIno) {
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = 4096;
    return true;
  }
  if (ino < kFirstFileIno || ino - kFirstFileIno >= g_state->files.size()) return false;
  const File& file = g_state->files[ino - kFirstFileIno];
  st->st_mode = file.directory ? S_IFDIR | 0555 : S_IFREG | 0444;
  st->st_nlink = file.directory ? 2 : 1;
  st->st_size = static_cast<off_t>(file.bytes.size());
  return true;
}

void OpInit(void*, struct fuse_conn_info* conn) {
  conn->max_write = static_cast<unsigned>(kMaxRead);
  conn->max_read = 0;
  conn->max_readahead = static_cast<unsigned>(kMaxRead);
  if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
  if (conn->capable & FUSE_CAP_SPLICE_WRITE) conn->want |= FUSE_CAP_SPLICE_WRITE;
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
}

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  fuse_ino_t ino = 0;
  if (parent == FUSE_ROOT_ID) {
    if (std::strcmp(name, ".stats") == 0) ino = kStatsIno;
    if (auto it = g_state->by_name.find(name); it != g_state->by_name.end()) {
      ino = kFirstFileIno + it->second;
    }
  }
  if (ino == 0) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  fuse_entry_param e;
  std::memset(&e, 0, sizeof e);
  e.ino = ino;
  FillAttr(ino, &e.attr);
  e.attr_timeout = kAttrTimeout;
  e.entry_timeout = kAttrTimeout;
  fuse_reply_entry(req, &e);
}

void OpGetAttr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info*) {
  struct stat st;
  if (!FillAttr(ino, &st)) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  fuse_reply_attr(req, &st, kAttrTimeout);
}

void OpReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, struct fuse_file_info*) {
  if (ino != FUSE_ROOT_ID) {
    fuse_reply_buf(req, nullptr, 0);  // the --dirs directories are empty
    return;
  }
  std::vector<char> buffer(size);
  size_t used = 0;
  const size_t total = g_state->files.size() + 2;
  for (size_t index = static_cast<size_t>(offset); index < total; ++index) {
    struct stat st;
    std::memset(&st, 0, sizeof st);
    std::string name;
    if (index < 2) {
      name = index == 0 ? "." : "..";
      st.st_ino = FUSE_ROOT_ID;
      st.st_mode = S_IFDIR;
    } else {
      const File& file = g_state->files[index - 2];
      name = file.name;
      st.st_ino = kFirstFileIno + index - 2;
      st.st_mode = file.directory ? S_IFDIR : S_IFREG;
    }
    const size_t need = fuse_add_direntry(req, buffer.data() + used, size - used, name.c_str(), &st,
                                          static_cast<off_t>(index + 1));
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buffer.data(), used);
}

void OpGetXattr(fuse_req_t req, fuse_ino_t, const char*, size_t) { fuse_reply_err(req, ENODATA); }

void OpListXattr(fuse_req_t req, fuse_ino_t, size_t size) {
  if (size == 0) {
    fuse_reply_xattr(req, 0);
  } else {
    fuse_reply_buf(req, nullptr, 0);
  }
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  if (ino >= kFirstFileIno && g_state->files[ino - kFirstFileIno].directory) {
    fuse_reply_err(req, EISDIR);
    return;
  }
  if ((fi->flags & O_ACCMODE) != O_RDONLY) {
    fuse_reply_err(req, EROFS);
    return;
  }
  if (ino == kStatsIno) {
    fi->fh = reinterpret_cast<uint64_t>(new std::string(StatsJson()));
    fi->direct_io = 1;
  } else {
    fi->fh = 0;
    fi->keep_cache = 1;
    fi->direct_io = 0;
  }
  fuse_reply_open(req, fi);
}

void OpRelease(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
  delete reinterpret_cast<std::string*>(fi->fh);
  fuse_reply_err(req, 0);
}

void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, struct fuse_file_info* fi) {
  const uint8_t* data = nullptr;
  size_t length = 0;
  if (ino == kStatsIno) {
    const auto* text = reinterpret_cast<const std::string*>(fi->fh);
    data = reinterpret_cast<const uint8_t*>(text->data());
    length = text->size();
  } else {
    const File& file = g_state->files[ino - kFirstFileIno];
    data = file.bytes.data();
    length = file.bytes.size();
    Stats& s = g_state->stats;
    const int now = s.in_flight.fetch_add(1) + 1;
    int most = s.most_in_flight.load();
    while (now > most && !s.most_in_flight.compare_exchange_weak(most, now)) {
    }
    s.requests.fetch_add(1);
    s.bytes.fetch_add(size);
    uint64_t largest = s.largest.load();
    while (size > largest && !s.largest.compare_exchange_weak(largest, size)) {
    }
    int bucket = 0;
    while (bucket < 31 && (1ull << (bucket + 1)) <= size) ++bucket;
    s.histogram[bucket].fetch_add(1);
  }
  const size_t begin = std::min(static_cast<size_t>(offset), length);
  const size_t n = std::min(size, length - begin);
  fuse_reply_buf(req, reinterpret_cast<const char*>(data + begin), n);
  if (ino != kStatsIno) g_state->stats.in_flight.fetch_sub(1);
}

// As b2ndfs does after mounting: raise the mount's read-ahead window (the
// FUSE default is 128 KiB) before the INIT reply caps it.
void SetKernelReadahead(const std::string& mountpoint, size_t bytes) {
  char resolved[PATH_MAX];
  if (::realpath(mountpoint.c_str(), resolved) == nullptr) return;
  FILE* mountinfo = std::fopen("/proc/self/mountinfo", "r");
  if (mountinfo == nullptr) return;
  char line[4096];
  std::string device;
  while (std::fgets(line, sizeof line, mountinfo) != nullptr) {
    char dev[64], root[PATH_MAX], point[PATH_MAX];
    if (std::sscanf(line, "%*d %*d %63s %4095s %4095s", dev, root, point) == 3 &&
        std::string(point) == resolved) {
      device = dev;
    }
  }
  std::fclose(mountinfo);
  if (device.empty()) return;
  FILE* f = std::fopen(("/sys/class/bdi/" + device + "/read_ahead_kb").c_str(), "w");
  if (f == nullptr) return;
  std::fprintf(f, "%zu\n", bytes / 1024);
  std::fclose(f);
}

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: bench_memfs MOUNTPOINT [NAME=BYTES ...] [--dirs N] [--getxattr-enodata] "
               "[--readahead-kb N] [-f]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) Usage();
  const std::string mountpoint = argv[1];
  bool foreground = false;
  bool xattr_enodata = false;
  size_t readahead_kb = kMaxRead / 1024;
  State state;
  state.start = ::time(nullptr);
  g_state = &state;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-f") {
      foreground = true;
    } else if (a == "--getxattr-enodata") {
      xattr_enodata = true;
    } else if (a == "--dirs" && i + 1 < argc) {
      const int count = std::atoi(argv[++i]);
      for (int k = 0; k < count; ++k) {
        char name[32];
        std::snprintf(name, sizeof name, "c%05d.b2nd", k);
        File dir;
        dir.name = name;
        dir.directory = true;
        state.files.push_back(std::move(dir));
      }
    } else if (a == "--readahead-kb" && i + 1 < argc) {
      readahead_kb = static_cast<size_t>(std::atoll(argv[++i]));
    } else if (const auto eq = a.find('='); eq != std::string::npos && eq > 0) {
      File file;
      file.name = a.substr(0, eq);
      file.bytes.resize(static_cast<size_t>(std::atoll(a.c_str() + eq + 1)));
      bench::Rng rng(state.files.size() + 1);
      for (size_t k = 0; k < file.bytes.size(); k += 8) {
        const uint64_t word = rng.Next();
        std::memcpy(file.bytes.data() + k, &word, std::min<size_t>(8, file.bytes.size() - k));
      }
      state.files.push_back(std::move(file));
    } else {
      Usage();
    }
  }

  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof ops);
  ops.init = OpInit;
  ops.lookup = OpLookup;
  ops.getattr = OpGetAttr;
  ops.readdir = OpReadDir;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.release = OpRelease;
  if (xattr_enodata) {
    ops.getxattr = OpGetXattr;
    ops.listxattr = OpListXattr;
  }

  std::vector<std::string> arg_strings = {argv[0], "-o", "ro,fsname=bench_memfs,subtype=memfs"};
  std::vector<char*> fuse_argv;
  for (auto& s : arg_strings) fuse_argv.push_back(s.data());
  struct fuse_args args = FUSE_ARGS_INIT(static_cast<int>(fuse_argv.size()), fuse_argv.data());
  struct fuse_session* session = fuse_session_new(&args, &ops, sizeof ops, nullptr);
  fuse_opt_free_args(&args);
  if (session == nullptr) return 1;
  if (fuse_set_signal_handlers(session) != 0) return 1;
  if (fuse_session_mount(session, mountpoint.c_str()) != 0) {
    fuse_remove_signal_handlers(session);
    fuse_session_destroy(session);
    return 1;
  }
  if (readahead_kb > 0) SetKernelReadahead(mountpoint, readahead_kb * 1024);
  if (fuse_daemonize(foreground ? 1 : 0) != 0) {
    fuse_session_unmount(session);
    fuse_remove_signal_handlers(session);
    fuse_session_destroy(session);
    return 1;
  }
  for (size_t k = 0; k < state.files.size(); ++k) state.by_name.emplace(state.files[k].name, k);
  struct fuse_loop_config config;
  std::memset(&config, 0, sizeof config);
  config.clone_fd = 0;
  config.max_idle_threads = 10;
  const int rc = fuse_session_loop_mt(session, &config);
  fuse_session_unmount(session);
  fuse_remove_signal_handlers(session);
  fuse_session_destroy(session);
  return rc == 0 ? 0 : 1;
}
