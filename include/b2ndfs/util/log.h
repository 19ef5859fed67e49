// util/log: one place where the daemon and tools report problems.
//
// Messages go to stderr (and to syslog once the daemon has detached, see
// SetLogToSyslog). LogOnce() remembers keys so that a broken container is
// reported a single time, however often it is read. It remembers at most
// kLogOnceCapacity keys, as 64-bit hashes (least recently seen forgotten
// first), so a container that fails with ever new messages costs bounded
// memory whatever the keys' length; a key forgotten that way is simply logged
// again when it comes back.
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace b2ndfs {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

// Keys LogOnce() remembers at once (about 64 bytes each).
constexpr size_t kLogOnceCapacity = 4096;

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// "error", "warning", "info" or "debug"; nullopt for anything else.
std::optional<LogLevel> ParseLogLevel(const std::string& name);
void SetLogToSyslog(bool enabled);
void Log(LogLevel level, const std::string& message);
// Logs `message` at `level` only the first time `key` is seen (or the first
// time since it was forgotten); returns whether `key` was new.
bool LogOnce(const std::string& key, LogLevel level, const std::string& message);
// Forgets a key, so that a container that changed may be reported again.
void ForgetLogOnce(const std::string& key);
// Keys LogOnce() currently remembers (at most kLogOnceCapacity).
size_t LogOnceKeyCount();

}  // namespace b2ndfs
