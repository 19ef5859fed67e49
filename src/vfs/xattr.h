// Private to vfs: the extended attributes of a container directory and of
// everything inside it (README.md, "Layout"): user.b2nd.shape, .chunkshape,
// .blockshape (JSON lists), .dtype (the NumPy descr) and .codec (meta.json's
// codec name), all computed from one opened, decodable container.
// Errors: ENODATA for any other name (Filesystem answers security.* and
// system.* first). Thread-safety: pure
// functions.
#pragma once

#include <string>
#include <string_view>

#include "b2ndfs/store/container.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::vfs {

// Every attribute b2ndfs serves starts with this; any other name (security.*,
// system.*, the kernel's and ls's per-entry probes) is answered without
// looking at the node.
constexpr std::string_view kXattrPrefix = "user.b2nd.";

// Namespaces this mount does not support at all (labels, ACLs).
inline bool IsUnsupportedXattr(std::string_view name) {
  return name.starts_with("security.") || name.starts_with("system.");
}

inline bool IsB2ndXattr(std::string_view name) {
  return name.size() > kXattrPrefix.size() && name.substr(0, kXattrPrefix.size()) == kXattrPrefix;
}

// The value of attribute `name` of `container` (which must be ok()), or
// ENODATA.
Result<std::string> ContainerXattr(const store::Container& container, std::string_view name);

// The names of the attributes, each followed by a NUL, as listxattr(2)
// returns them.
std::string ContainerXattrNames();

}  // namespace b2ndfs::vfs
