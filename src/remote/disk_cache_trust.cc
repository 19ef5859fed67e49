#include "disk_cache_trust.h"

#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace b2ndfs::remote {
namespace {

std::string Mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

Status Errno(int e, const std::string& what) { return Status(e, what + ": " + std::strerror(e)); }

// What is wrong with the key file `st` describes (empty: nothing).
std::string KeyFileProblem(const std::string& path, const struct stat& st) {
  const std::string fix =
      ": delete it (a new key is made, and the ranges cached so far are fetched again)";
  if (!S_ISREG(st.st_mode)) return path + " is not a regular file" + fix;
  if (st.st_uid != ::geteuid()) {
    return path + " is owned by uid " + std::to_string(st.st_uid) +
           ", not by this daemon's user (uid " + std::to_string(::geteuid()) + ")" + fix;
  }
  if ((st.st_mode & 077) != 0) {
    return path + " may be read or written by others (mode " + Mode(st.st_mode) +
           "; it keys the cache's checks): chmod 600 " + path + ", or delete it (the ranges " +
           "cached so far are then fetched again)";
  }
  if (st.st_size != static_cast<off_t>(kCacheKeyBytes)) {
    return path + " is not a key b2ndfs wrote (" + std::to_string(st.st_size) + " bytes)" + fix;
  }
  return "";
}

}  // namespace

Status CheckCacheDirectory(const std::string& dir) {
  const std::string name = "disk_cache=" + dir;
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return Errno(errno, name);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Errno(errno, name + ": cannot create it");
    }
    if (::lstat(dir.c_str(), &st) != 0) return Errno(errno, name);
  }
  const std::string fresh = "name a fresh directory (b2ndfs creates it, mode 0700)";
  if (S_ISLNK(st.st_mode)) {
    return Status(EACCES, name + " is a symbolic link (whoever may change it chooses what is " +
                              "served): name the directory itself, or " + fresh);
  }
  if (!S_ISDIR(st.st_mode)) return Status(ENOTDIR, name + " is not a directory: " + fresh);
  if (st.st_uid != ::geteuid()) {
    return Status(EACCES, name + " is owned by uid " + std::to_string(st.st_uid) +
                              ", not by this daemon's user (uid " + std::to_string(::geteuid()) +
                              "), who could plant the bytes it serves: chown " +
                              std::to_string(::geteuid()) + " " + dir + ", or " + fresh);
  }
  if ((st.st_mode & 022) != 0) {
    return Status(EACCES, name + " is writable by group or others (mode " + Mode(st.st_mode) +
                              "), who could plant the bytes it serves: chmod go-w " + dir +
                              " (or chmod 700), or " + fresh);
  }
  const std::string key_path = dir + "/key";
  if (::lstat(key_path.c_str(), &st) == 0) {
    const std::string problem = KeyFileProblem(key_path, st);
    if (!problem.empty()) return Status(EACCES, name + ": " + problem);
  } else if (errno != ENOENT) {
    return Errno(errno, name + ": " + key_path);
  }
  return Status::Ok();
}

Result<CacheKey> LoadCacheKey(const std::string& dir, bool* created) {
  *created = false;
  const std::string name = "disk_cache=" + dir;
  const std::string path = dir + "/key";
  CacheKey key{};
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    if (::getrandom(key.data(), key.size(), 0) != static_cast<ssize_t>(key.size())) {
      return Errno(errno, name + ": no random bytes for its key");
    }
    // Written whole under another name, then linked into place: a crash
    // never leaves a short key, and an existing key is never replaced.
    const std::string temp = path + "." + std::to_string(::getpid()) + ".tmp";
    ::unlink(temp.c_str());
    const int out =
        ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) return Errno(errno, name + ": " + temp);
    const bool written = ::write(out, key.data(), key.size()) == static_cast<ssize_t>(key.size()) &&
                         ::fsync(out) == 0;
    const int e = errno;
    ::close(out);
    const bool linked = written && ::link(temp.c_str(), path.c_str()) == 0;
    const int link_errno = errno;
    ::unlink(temp.c_str());
    if (!written) return Errno(e, name + ": " + temp);
    if (linked) {
      *created = true;
      return key;
    }
    if (link_errno != EEXIST) return Errno(link_errno, name + ": " + path);
    fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);  // made meanwhile
  }
  if (fd < 0) {
    if (errno == ELOOP) {
      return Status(EACCES, name + ": " + path + " is a symbolic link: delete it (a new key " +
                                "is made, and the ranges cached so far are fetched again)");
    }
    return Errno(errno, name + ": " + path);
  }
  struct stat st;
  std::string problem;
  if (::fstat(fd, &st) != 0) {
    problem = path + ": " + std::strerror(errno);
  } else {
    problem = KeyFileProblem(path, st);
  }
  if (problem.empty() &&
      ::pread(fd, key.data(), key.size(), 0) != static_cast<ssize_t>(key.size())) {
    problem = path + ": cannot read it";
  }
  ::close(fd);
  if (!problem.empty()) return Status(EACCES, name + ": " + problem);
  return key;
}

std::optional<CacheTag> ComputeTag(const CacheKey& key,
                                   std::initializer_list<std::string_view> pieces) {
  // The MAC algorithm is fetched once (a lookup in OpenSSL's provider
  // tables); each tag has a context of its own, so threads share nothing
  // but it, which OpenSSL allows.
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  CacheTag tag{};
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  EVP_MAC_CTX* ctx = mac != nullptr ? EVP_MAC_CTX_new(mac) : nullptr;
  bool ok = ctx != nullptr && EVP_MAC_init(ctx, key.data(), key.size(), params) == 1;
  for (std::string_view piece : pieces) {
    ok = ok && EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(piece.data()),
                              piece.size()) == 1;
  }
  size_t length = 0;
  ok = ok && EVP_MAC_final(ctx, tag.data(), &length, tag.size()) == 1 && length == tag.size();
  EVP_MAC_CTX_free(ctx);
  if (!ok) return std::nullopt;
  return tag;
}

bool SameTag(const CacheTag& tag, const uint8_t* stored) {
  return CRYPTO_memcmp(tag.data(), stored, tag.size()) == 0;
}

}  // namespace b2ndfs::remote
