// replay_main: runs a libFuzzer target without libFuzzer, over files.
//
//   fuzz_<target>_replay [--min-inputs N] [--timeout SECONDS] PATH...
//
// Each PATH is a file or a directory (walked recursively, in sorted order,
// symlinks not followed); every regular file is handed to
// LLVMFuzzerTestOneInput once. This is how the fuzz targets run as ordinary
// ctest tests (fuzz.replay.<target>) over the committed corpus and the
// fixture sets, with any compiler.
// A crash or failed check in the target aborts the process (the test fails;
// the last "replaying" line on stderr names the input, unless
// B2NDFS_REPLAY_QUIET is set). One input running longer than --timeout (default 30 s) is a hang:
// its path is printed and the process aborts. Fewer than --min-inputs inputs
// (default 1) is an error too, so a wrong corpus path cannot pass silently.
// Exit status: 0 all ran, 1 too few inputs, 2 usage or unreadable path.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

// Watches the input in progress; aborts when one takes too long.
class Watchdog {
 public:
  explicit Watchdog(double limit_seconds)
      : limit_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(limit_seconds))),
        thread_([this] { Loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void Begin(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    path_ = path;
    started_ = std::chrono::steady_clock::now();
    busy_ = true;
  }
  void End() {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);  // leaf lock
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::milliseconds(200));
      if (busy_ && std::chrono::steady_clock::now() - started_ > limit_) {
        std::fprintf(stderr, "replay: HANG: %s is still running after %.0f s\n", path_.c_str(),
                     std::chrono::duration<double>(limit_).count());
        std::fflush(stderr);
        std::abort();
      }
    }
  }

  const std::chrono::steady_clock::duration limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool busy_ = false;
  std::string path_;
  std::chrono::steady_clock::time_point started_;
  std::thread thread_;  // last: started once the members above exist
};

int Usage() {
  std::fprintf(stderr, "usage: replay [--min-inputs N] [--timeout SECONDS] PATH...\n");
  return 2;
}

// Regular files below `path` (or `path` itself), sorted; false if missing.
bool CollectInputs(const fs::path& path, std::vector<fs::path>* out) {
  std::error_code ec;
  const auto status = fs::symlink_status(path, ec);
  if (ec) return false;
  if (fs::is_regular_file(status)) {
    out->push_back(path);
    return true;
  }
  if (!fs::is_directory(status)) return false;
  std::vector<fs::path> found;
  for (auto it = fs::recursive_directory_iterator(path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && !it->is_symlink()) found.push_back(it->path());
  }
  if (ec) return false;
  std::sort(found.begin(), found.end());
  out->insert(out->end(), found.begin(), found.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  long min_inputs = 1;
  double timeout = 30;
  std::vector<fs::path> inputs;
  int paths = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--min-inputs" && i + 1 < argc) {
      min_inputs = std::strtol(argv[++i], nullptr, 10);
    } else if (arg == "--timeout" && i + 1 < argc) {
      timeout = std::strtod(argv[++i], nullptr);
    } else if (arg.starts_with("--")) {
      return Usage();
    } else {
      if (!CollectInputs(arg, &inputs)) {
        std::fprintf(stderr, "replay: cannot read %s\n", arg.c_str());
        return 2;
      }
      ++paths;
    }
  }
  if (paths == 0 || timeout <= 0) return Usage();

  const bool verbose = std::getenv("B2NDFS_REPLAY_QUIET") == nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  Watchdog watchdog(timeout);
  uint64_t total_bytes = 0;
  double slowest = 0;
  std::string slowest_path;
  for (const fs::path& input : inputs) {
    std::ifstream in(input, std::ios::binary);
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "replay: cannot read %s\n", input.c_str());
      return 2;
    }
    if (verbose) std::fprintf(stderr, "replaying %s (%zu bytes)\n", input.c_str(), data.size());
    // A copy of exactly the input's size, so that ASan sees reads past it.
    auto* copy = new uint8_t[std::max<size_t>(data.size(), 1)];
    if (!data.empty()) std::memcpy(copy, data.data(), data.size());
    const auto start = std::chrono::steady_clock::now();
    watchdog.Begin(input.string());
    LLVMFuzzerTestOneInput(data.empty() ? nullptr : copy, data.size());
    watchdog.End();
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    delete[] copy;
    if (took > slowest) {
      slowest = took;
      slowest_path = input.string();
    }
    total_bytes += data.size();
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("replay: %zu inputs (%.1f MiB) from %d path(s) in %.2f s; slowest %.3f s (%s)\n",
              inputs.size(), static_cast<double>(total_bytes) / (1 << 20), paths, elapsed, slowest,
              slowest_path.c_str());
  if (static_cast<long>(inputs.size()) < min_inputs) {
    std::fprintf(stderr, "replay: only %zu inputs, expected at least %ld\n", inputs.size(),
                 min_inputs);
    return 1;
  }
  return 0;
}
