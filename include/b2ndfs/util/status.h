// util/status: the error model of the core.
//
// A Status is either OK or an (errno, message) pair; Result<T> is a T or a
// non-OK Status. Core functions return them instead of throwing, and the FUSE
// edge maps the errno to the reply. Messages are written for people: they say
// what is wrong with which thing ("chunkshape[2] is 0").
// Thread-safety: plain values, no shared state.
#pragma once

#include <cerrno>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace b2ndfs {

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(int error_number, std::string message)
      : errno_(error_number), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return errno_ == 0; }
  int error_number() const { return errno_; }
  const std::string& message() const { return message_; }

  // Prepends context: "reading chunk 3: " + message.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(errno_, context + ": " + message_);
  }

 private:
  int errno_ = 0;
  std::string message_;
};

inline Status InvalidData(std::string message) { return Status(EIO, std::move(message)); }
inline Status NotFound(std::string message) { return Status(ENOENT, std::move(message)); }
inline Status InvalidArgument(std::string message) { return Status(EINVAL, std::move(message)); }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status(EINVAL, "Result built from OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace b2ndfs

// Early-return helpers, in the spirit of absl's RETURN_IF_ERROR.
#define B2NDFS_CONCAT_INNER(a, b) a##b
#define B2NDFS_CONCAT(a, b) B2NDFS_CONCAT_INNER(a, b)

#define B2NDFS_RETURN_IF_ERROR(expr)                   \
  do {                                                 \
    ::b2ndfs::Status b2ndfs_status__ = (expr);         \
    if (!b2ndfs_status__.ok()) return b2ndfs_status__; \
  } while (0)

#define B2NDFS_ASSIGN_OR_RETURN(lhs, expr) \
  B2NDFS_ASSIGN_OR_RETURN_IMPL(B2NDFS_CONCAT(b2ndfs_result_, __LINE__), lhs, expr)
#define B2NDFS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
