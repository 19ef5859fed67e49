// util/log: one place where the daemon and tools report problems.
//
// Messages go to stderr (and to syslog once the daemon has detached, see
// SetLogToSyslog). LogOnce() remembers keys so that a broken container is
// reported a single time, however often it is read.
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <string>

namespace b2ndfs {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

void SetLogLevel(LogLevel level);
void SetLogToSyslog(bool enabled);
void Log(LogLevel level, const std::string& message);
// Logs `message` at `level` only the first time `key` is seen.
void LogOnce(const std::string& key, LogLevel level, const std::string& message);
// Forgets a key, so that a container that changed may be reported again.
void ForgetLogOnce(const std::string& key);

}  // namespace b2ndfs
