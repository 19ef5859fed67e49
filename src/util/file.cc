#include "b2ndfs/util/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace b2ndfs {

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

Result<File> File::OpenReadOnly(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    int e = errno;
    return Status(e, "cannot open " + path + ": " + std::strerror(e));
  }
  return File(fd);
}

Result<size_t> File::ReadUpTo(int64_t offset, void* buffer, size_t length) const {
  auto* out = static_cast<uint8_t*>(buffer);
  size_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(fd_, out + done, length - done,
                        static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      return Status(e == 0 ? EIO : e, std::string("read failed: ") + std::strerror(e));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

Status File::ReadExact(int64_t offset, void* buffer, size_t length) const {
  B2NDFS_ASSIGN_OR_RETURN(size_t done, ReadUpTo(offset, buffer, length));
  if (done < length) {
    return InvalidData("file ends at byte " + std::to_string(offset + static_cast<int64_t>(done)) +
                       " but " + std::to_string(length - done) + " more bytes were expected");
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> File::ReadExact(int64_t offset, size_t length) const {
  std::vector<uint8_t> bytes(length);
  B2NDFS_RETURN_IF_ERROR(ReadExact(offset, bytes.data(), length));
  return bytes;
}

Result<struct stat> File::Stat() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    int e = errno;
    return Status(e, std::string("fstat failed: ") + std::strerror(e));
  }
  return st;
}

}  // namespace b2ndfs
