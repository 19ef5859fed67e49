#include "b2ndfs/source/declared_file.h"

#include <cerrno>

namespace b2ndfs::source {

Result<size_t> DeclaredFile::ReadUpTo(int64_t, uint8_t*, size_t) const {
  return Status(EIO, "valid rows files need the mount's decoders");
}

}  // namespace b2ndfs::source
