// Private to vfs: the attributes the kernel is given for what vfs makes up:
// everything inside a container directory (from its generation alone, at no
// source I/O) and the .b2ndfs control files (README.md, "Layout",
// "Permissions").
// Thread-safety: pure functions of their arguments.
#pragma once

#include <sys/stat.h>

#include <cstdint>

#include "b2ndfs/vfs/types.h"
#include "generation.h"

namespace b2ndfs::views {
class Node;
}  // namespace b2ndfs::views

namespace b2ndfs::vfs {

// What everything under a container shows of its source: owner, group,
// times, and read permissions (directories get x wherever the source had r),
// for a directory or a file of `size` bytes.
struct stat ContainerStat(const struct stat& src, Ino ino, bool directory, int64_t size);

// The attributes of a node inside a container, from its generation alone:
// the source as it was when the version was opened (a change of any of its
// attributes is a new version), the size from the view. What a container
// computes from other files (an evaluated carrier) is readable only by
// whoever may read all of them (README.md, "Permissions").
Attr InsideAttributes(const Generation& generation, const store::Container& container,
                      const views::Node& view, Ino ino, double timeout);

// .b2ndfs (`directory`) or one of its files (of `size` bytes), from the
// attributes of the mount's root `root`: owned like it and readable by
// whoever may read it, but for a `private_file` (the log, which names other
// users' files), the daemon's user's alone (README.md, "Logs").
Attr ControlAttributes(const struct stat& root, Ino ino, bool directory, bool private_file,
                       int64_t size);

}  // namespace b2ndfs::vfs
