#include "b2ndfs/util/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <functional>
#include <mutex>

#include "b2ndfs/util/weighted_lru.h"

namespace b2ndfs {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<bool> g_syslog{false};
std::atomic<bool> g_stderr{true};
// The log file: a descriptor number that stays the same for the process's
// life (ReopenLogFile replaces the file behind it with dup3, so writers never
// see it closed), and its path in a fixed buffer a signal handler may read.
std::atomic<int> g_file_fd{-1};
char g_file_path[PATH_MAX];
// The keys LogOnce() has seen, as hashes in LRU order (most recent first).
// A hash collision only suppresses a message, so 64 bits are plenty.
class OnceKeys {
 public:
  // Returns true if `key` was not remembered; remembers it as most recent.
  bool Insert(const std::string& key) {
    const uint64_t h = std::hash<std::string>{}(key);
    if (seen_.Find(h) != nullptr) return false;
    seen_.Insert(h, Seen{}, 1, nullptr);
    return true;
  }
  void Erase(const std::string& key) { seen_.Erase(std::hash<std::string>{}(key), nullptr); }
  size_t size() const { return seen_.size(); }

 private:
  struct Seen {};
  util::WeightedLru<uint64_t, Seen> seen_{
      {kLogOnceCapacity, util::WeightedLru<uint64_t, Seen>::kUnbounded}};
};

// Lock order: g_once_mutex is a leaf lock.
std::mutex g_once_mutex;
OnceKeys& Once() {
  // Never destroyed: threads may still log while the process exits.
  static auto* keys = new OnceKeys();
  return *keys;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}

int SyslogPriority(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return LOG_DEBUG;
    case LogLevel::kInfo:
      return LOG_INFO;
    case LogLevel::kWarning:
      return LOG_WARNING;
    case LogLevel::kError:
      return LOG_ERR;
  }
  return LOG_ERR;
}

// The most recent messages. Lock order: g_recent_mutex is a leaf lock.
std::mutex g_recent_mutex;
std::deque<std::string>& Recent() {
  // Never destroyed: threads may still log while the process exits.
  static auto* lines = new std::deque<std::string>();
  return *lines;
}

int OpenLogFile(const char* path) {
  return ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
}

// "2026-11-27T21:56:10Z".
std::string UtcTime() {
  const std::time_t now = std::time(nullptr);
  struct tm tm;
  char text[32];
  if (gmtime_r(&now, &tm) == nullptr || std::strftime(text, sizeof text, "%FT%TZ", &tm) == 0) {
    return "?";
  }
  return text;
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

std::optional<LogLevel> ParseLogLevel(const std::string& name) {
  for (LogLevel level : {LogLevel::kError, LogLevel::kWarning, LogLevel::kInfo, LogLevel::kDebug}) {
    if (name == LevelName(level)) return level;
  }
  return std::nullopt;
}

void SetLogToSyslog(bool enabled) {
  if (enabled && !g_syslog) openlog("b2ndfs", LOG_PID, LOG_DAEMON);
  g_syslog = enabled;
}

void SetLogToStderr(bool enabled) { g_stderr = enabled; }

Status SetLogFile(const std::string& path) {
  if (path.empty() || path[0] != '/' || path.size() >= sizeof g_file_path) {
    return InvalidArgument("log file " + path + ": not an absolute path");
  }
  const int fd = OpenLogFile(path.c_str());
  if (fd < 0) {
    const int e = errno;
    return Status(e, "log file " + path + ": " + std::strerror(e));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("log file " + path + ": not a regular file");
  }
  std::memcpy(g_file_path, path.c_str(), path.size() + 1);
  const int old = g_file_fd.exchange(fd);
  if (old >= 0) ::close(old);
  return Status::Ok();
}

void ReopenLogFile() {
  const int target = g_file_fd.load();
  if (target < 0) return;
  const int saved_errno = errno;  // a signal handler must leave errno alone
  const int fd = OpenLogFile(g_file_path);
  if (fd >= 0) {
    ::dup3(fd, target, O_CLOEXEC);
    ::close(fd);
  }
  errno = saved_errno;
}

bool SyslogAvailable() {
  struct stat st;
  return ::stat("/dev/log", &st) == 0 && S_ISSOCK(st.st_mode);
}

void LogDetached() {
  g_stderr = false;
  SetLogToSyslog(g_file_fd.load() < 0 && SyslogAvailable());
}

void Log(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) < g_level.load()) return;
  std::string line = UtcTime() + " " + LevelName(level) + ": " + message;
  if (line.size() > kRecentLogLineMax) {
    line.resize(kRecentLogLineMax - 3);
    line += "...";
  }
  {
    std::lock_guard<std::mutex> lock(g_recent_mutex);
    auto& recent = Recent();
    if (recent.size() >= kRecentLogCapacity) recent.pop_front();
    recent.push_back(line);
  }
  if (g_syslog) syslog(SyslogPriority(level), "%s", message.c_str());
  if (g_stderr) std::fprintf(stderr, "b2ndfs: %s: %s\n", LevelName(level), message.c_str());
  const int fd = g_file_fd.load();
  if (fd >= 0) {
    // One write per message: O_APPEND keeps concurrent lines whole.
    const std::string text = UtcTime() + " b2ndfs[" + std::to_string(::getpid()) +
                             "]: " + LevelName(level) + ": " + message + "\n";
    if (::write(fd, text.data(), text.size()) < 0) {
      // Nowhere left to report it; the ring still has the message.
    }
  }
}

std::string RecentLogText() {
  std::lock_guard<std::mutex> lock(g_recent_mutex);
  std::string out;
  for (const std::string& line : Recent()) {
    out += line;
    out += '\n';
  }
  return out;
}

bool LogRateLimit::Allow(int64_t now_ns, uint64_t* suppressed) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!started_ || now_ns - window_start_ >= window_ns_) {
    started_ = true;
    window_start_ = now_ns;
    used_ = 0;
  }
  if (used_ >= burst_) {
    ++suppressed_;
    return false;
  }
  ++used_;
  *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

bool LogRateLimit::Allow(uint64_t* suppressed) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return Allow(int64_t{now.tv_sec} * 1000000000 + now.tv_nsec, suppressed);
}

bool LogOnce(const std::string& key, LogLevel level, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(g_once_mutex);
    if (!Once().Insert(key)) return false;
  }
  Log(level, message);
  return true;
}

void ForgetLogOnce(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_once_mutex);
  Once().Erase(key);
}

size_t LogOnceKeyCount() {
  std::lock_guard<std::mutex> lock(g_once_mutex);
  return Once().size();
}

}  // namespace b2ndfs
