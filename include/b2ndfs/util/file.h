// util/file: RAII file descriptors and positional reads that retry EINTR and
// report short reads as errors.
// Thread-safety: a File may be read from many threads at once (pread).
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs {

class File {
 public:
  File() = default;
  explicit File(int fd) : fd_(fd) {}
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  File(File&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  File& operator=(File&& other) noexcept;
  ~File();

  static Result<File> OpenReadOnly(const std::string& path);

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

  // Reads up to `length` bytes at `offset`, fewer only at end of file.
  Result<size_t> ReadUpTo(int64_t offset, void* buffer, size_t length) const;
  // Reads exactly `length` bytes at `offset`; a short file is an EIO error.
  Status ReadExact(int64_t offset, void* buffer, size_t length) const;
  Result<std::vector<uint8_t>> ReadExact(int64_t offset, size_t length) const;
  Result<struct stat> Stat() const;

 private:
  int fd_ = -1;
};

}  // namespace b2ndfs
