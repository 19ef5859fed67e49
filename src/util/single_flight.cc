#include "b2ndfs/util/single_flight.h"

#include <cerrno>
#include <exception>
#include <new>
#include <string>

namespace b2ndfs {

Status StatusOfCurrentException(const char* what) noexcept {
  try {
    try {
      throw;
    } catch (const std::bad_alloc&) {
      return Status(ENOMEM, "out of memory");  // fits the SSO: no allocation
    } catch (const std::exception& e) {
      return Status(EIO, std::string(what) + " threw: " + e.what());
    } catch (...) {
      return Status(EIO, std::string(what) + " threw a non-standard exception");
    }
  } catch (...) {
    // Building the message above ran out of memory.
    return Status(ENOMEM, "out of memory");
  }
}

Status StoppedStatus(const char* what) noexcept {
  try {
    return Status(EIO, std::string(what) + " stopped before it ran (unmounting)");
  } catch (...) {
    return Status(ENOMEM, "out of memory");
  }
}

}  // namespace b2ndfs
