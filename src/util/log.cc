#include "b2ndfs/util/log.h"

#include <syslog.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>

namespace b2ndfs {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<bool> g_syslog{false};
// The keys LogOnce() has seen, as hashes in LRU order (most recent first).
// A hash collision only suppresses a message, so 64 bits are plenty.
class OnceKeys {
 public:
  // Returns true if `key` was not remembered; remembers it as most recent.
  bool Insert(const std::string& key) {
    const uint64_t h = std::hash<std::string>{}(key);
    auto it = index_.find(h);
    if (it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return false;
    }
    if (index_.size() >= kLogOnceCapacity) {
      index_.erase(order_.back());
      order_.pop_back();
    }
    order_.push_front(h);
    index_.emplace(h, order_.begin());
    return true;
  }
  void Erase(const std::string& key) {
    auto it = index_.find(std::hash<std::string>{}(key));
    if (it == index_.end()) return;
    order_.erase(it->second);
    index_.erase(it);
  }
  size_t size() const { return index_.size(); }

 private:
  std::list<uint64_t> order_;
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> index_;
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

void Log(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) < g_level.load()) return;
  if (g_syslog) {
    syslog(SyslogPriority(level), "%s", message.c_str());
  } else {
    std::fprintf(stderr, "b2ndfs: %s: %s\n", LevelName(level), message.c_str());
  }
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
