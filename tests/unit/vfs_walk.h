#pragma once
// A path below a mount's root looked up one name at a time, as the kernel
// does, for tests that drive a vfs::Filesystem without FUSE.
#include <cerrno>
#include <string>

#include "b2ndfs/util/status.h"
#include "b2ndfs/vfs/filesystem.h"

namespace b2ndfs::testing {

inline Result<vfs::Attr> WalkPath(vfs::Filesystem& filesystem, const std::string& rel) {
  vfs::Ino at = vfs::kRootIno;
  Result<vfs::Attr> attr = Status(ENOENT, rel);
  size_t begin = 0;
  while (begin < rel.size()) {
    size_t end = rel.find('/', begin);
    if (end == std::string::npos) end = rel.size();
    attr = filesystem.Lookup(at, rel.substr(begin, end - begin));
    if (!attr.ok()) return attr;
    at = attr->st.st_ino;
    begin = end + 1;
  }
  return attr;
}

}  // namespace b2ndfs::testing
