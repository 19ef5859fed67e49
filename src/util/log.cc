#include "b2ndfs/util/log.h"

#include <syslog.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <unordered_set>

namespace b2ndfs {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<bool> g_syslog{false};
// Lock order: g_once_mutex is a leaf lock.
std::mutex g_once_mutex;
std::unordered_set<std::string>& OnceKeys() {
  static auto* keys = new std::unordered_set<std::string>();
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

void LogOnce(const std::string& key, LogLevel level, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(g_once_mutex);
    if (!OnceKeys().insert(key).second) return;
  }
  Log(level, message);
}

void ForgetLogOnce(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_once_mutex);
  OnceKeys().erase(key);
}

}  // namespace b2ndfs
