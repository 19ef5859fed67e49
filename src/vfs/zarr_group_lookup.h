// Private to vfs: the unlisted names that make a mirrored source directory a
// consolidated Zarr v2 group (.zgroup, .zmetadata, and one directory per
// container named after it; views/dir_group.h renders them; README.md, "Zarr
// groups and xarray").
// Looked up only where the source said a name does not exist, so nothing
// else changes, and `ls` (which lists, never looks these up) opens nothing.
// Costs: a name NAME costs one stat per container extension (NAME.b2nd,
// NAME.b2frame, ...); .zgroup lists the directory and opens its first
// container; .zmetadata lists the directory and opens every container in it
// (at most views::kDirGroupMaxContainers, else no group).
// Each answer is an unlisted node of a container's generation (.zgroup and
// .zmetadata: of the directory's first container), so it lives as long as
// the kernel holds it and goes stale with that generation; .zmetadata
// describes the containers as they were at its lookup.
// Errors: ENOENT where the name is not the group's; a container's open error
// (EIO...) otherwise. Thread-safety: any thread.
#pragma once

#include <string>

#include "b2ndfs/util/status.h"
#include "resolver.h"

namespace b2ndfs::vfs {

Result<Target> LookupDirGroup(Resolver& resolver, const source::Tree& tree,
                              const views::Registry& views, InodeTable& inodes,
                              const Target& parent, const std::string& name);

}  // namespace b2ndfs::vfs
