// util/log: one place where the daemon and tools report problems.
//
// Messages go to stderr until the daemon detaches (LogDetached), then to the
// log file when one is set (SetLogFile), else to syslog where there is one
// (/dev/log); a foreground daemon writes stderr and the log file. Every
// message that passes the level is also kept in a ring of the most recent
// kRecentLogCapacity, which the mount serves as .b2ndfs/log (RecentLogText).
// LogOnce() remembers keys so that a broken container is reported a single
// time, however often it is read. It remembers at most kLogOnceCapacity keys,
// as 64-bit hashes (least recently seen forgotten first), so a container that
// fails with ever new messages costs bounded memory whatever the keys'
// length; a key forgotten that way is simply logged again when it comes back.
// Thread-safety: all functions may be called from any thread;
// ReopenLogFile() also from a signal handler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "b2ndfs/util/status.h"

namespace b2ndfs {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

// Keys LogOnce() remembers at once (about 64 bytes each).
constexpr size_t kLogOnceCapacity = 4096;
// Messages RecentLogText() keeps (each cut at kRecentLogLineMax bytes), so
// the ring holds at most about 250 KiB.
constexpr size_t kRecentLogCapacity = 500;
constexpr size_t kRecentLogLineMax = 512;

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// "error", "warning", "info" or "debug"; nullopt for anything else.
std::optional<LogLevel> ParseLogLevel(const std::string& name);
void SetLogToSyslog(bool enabled);
// Whether messages go to stderr (on until LogDetached()).
void SetLogToStderr(bool enabled);
// Messages also go to the file at `path` (absolute: the daemon changes to /),
// appended, created with mode 0640 when missing. Fails (errno, message) when
// it cannot be opened for appending.
Status SetLogFile(const std::string& path);
// Opens the log file's path again (after logrotate moved the file away), so
// that the next messages go to a new file of that name. Async-signal-safe:
// meant for a SIGHUP handler. Does nothing without a log file.
void ReopenLogFile();
// Whether a syslog daemon listens (/dev/log exists).
bool SyslogAvailable();
// The process detached from its terminal (stderr is /dev/null now): messages
// go to the log file when one is set, else to syslog when SyslogAvailable().
void LogDetached();
void Log(LogLevel level, const std::string& message);
// Logs `message` at `level` only the first time `key` is seen (or the first
// time since it was forgotten); returns whether `key` was new.
bool LogOnce(const std::string& key, LogLevel level, const std::string& message);
// Forgets a key, so that a container that changed may be reported again.
void ForgetLogOnce(const std::string& key);
// Keys LogOnce() currently remembers (at most kLogOnceCapacity).
size_t LogOnceKeyCount();
// The most recent messages, oldest first, one line each:
// "2026-11-27T21:56:10Z warning: MESSAGE\n".
std::string RecentLogText();

// Lets at most `burst` messages through in each window of `window_ns`
// nanoseconds (a window starts with the first message let through after the
// last window ended), and counts the others, for messages a client can cause
// at any rate (names looked up by shells and file managers).
class LogRateLimit {
 public:
  LogRateLimit(int burst, int64_t window_ns) : burst_(burst), window_ns_(window_ns) {}
  // Whether a message may be logged at monotonic time `now_ns`; if so,
  // `*suppressed` is how many were refused since the last one let through.
  bool Allow(int64_t now_ns, uint64_t* suppressed);
  // The same at the current CLOCK_MONOTONIC time.
  bool Allow(uint64_t* suppressed);

 private:
  const int burst_;
  const int64_t window_ns_;
  std::mutex mutex_;  // leaf lock; guards what follows
  bool started_ = false;
  int64_t window_start_ = 0;
  int used_ = 0;
  uint64_t suppressed_ = 0;
};

}  // namespace b2ndfs
