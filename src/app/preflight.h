// app/preflight: checks and process set-up done before mounting, so that
// their errors reach the caller (mount, systemd) before the daemon detaches.
//
// Ownership: stateless functions. Errors: Status with an errno and a message
// meant for the user. Thread-safety: call from main before threads start.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "b2ndfs/source/tree.h"
#include "b2ndfs/util/status.h"
#include "options.h"

namespace b2ndfs::cache {
class BlockCache;
}  // namespace b2ndfs::cache

namespace b2ndfs::app {

// SOURCE, already known to exist: a regular file must be a container by its
// extension (.b2nd, .b2frame, .b2f, .b2, .caterva, .cat). Directories and
// anything not found locally (remote URLs) pass.
Status CheckSourceKind(const std::string& source);

// The file system type ("ext4", "fuse.b2ndfs", ...) of the topmost mount
// at `path` (absolute, resolved) according to `mountinfo` (the text of
// /proc/self/mountinfo); nullopt when nothing is mounted exactly there.
std::optional<std::string> MountedTypeAt(const std::string& mountinfo, const std::string& path);

// Refuses a mountpoint (absolute, resolved) on which a FUSE file system (a
// b2ndfs or any other) is mounted: mounting over it would hide it, and its
// unmount would then take ours.
Status CheckMountpointFree(const std::string& mountpoint);

// The MOUNTPOINT argument made absolute (the daemon changes to / and
// unmounts by path), checked to be a directory with nothing FUSE mounted on
// it. /dev/fd/N, a /dev/fuse descriptor already mounted by the caller
// (mount.fuse3 -o drop_privileges), is taken as it is: libfuse serves it.
Result<std::string> PrepareMountpoint(const std::string& mountpoint);

// The tree of a remote SOURCE (http://, https://, s3://), with the command
// line's timeout and retries and, for s3://, its endpoint, region and
// credentials (never echoed in a message); its root has answered. Small
// objects fetched whole are kept in `cache` (the mount's block cache).
Result<std::shared_ptr<source::Tree>> OpenRemoteTree(const CommandLine& cl,
                                                     cache::BlockCache* cache);

// Raises the soft RLIMIT_NOFILE to the hard limit (as libfuse's
// passthrough_hp does): every open container holds descriptors. Returns the
// new soft limit.
Result<uint64_t> RaiseOpenFileLimit();

}  // namespace b2ndfs::app
