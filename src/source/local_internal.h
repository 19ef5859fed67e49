// Private to source: what a local file's version is made of, shared by the
// local container sources (local_source.cc) and LocalTree's plain files.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::source::internal {

inline int64_t Nanos(const struct timespec& t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

// Device, inode, size and nanosecond mtime/ctime (a rewrite in place keeps
// size and maybe mtime, never ctime).
inline Signature FileSignature(const struct stat& st) {
  Signature s;
  s.device = st.st_dev;
  s.inode = st.st_ino;
  s.size = st.st_size;
  s.mtime_ns = Nanos(st.st_mtim);
  s.ctime_ns = Nanos(st.st_ctim);
  return s;
}

// The attributes that bind a reader of `path` (a path below `root`, which
// is absolute and has no symbolic links): the entry's own, with the owner,
// group and read bits that also let its readers search every directory
// passed on the way (provenance.h), symbolic links followed as met. With
// `confined`, a link leading out of `root` is EXDEV. Read bits all clear:
// only root may read it. Errors: the failing component's errno.
Result<struct stat> WalkBeneath(const std::string& root, const std::string& path, bool confined);

}  // namespace b2ndfs::source::internal
