// Private to vfs: the unlisted names that make a mirrored source directory a
// consolidated Zarr v2 group (.zgroup, .zmetadata, and one directory per
// container named after it; views/zarr.h renders them; README.md, "Zarr
// groups and xarray").
// Looked up only where the source said a name does not exist, so nothing
// else changes, and `ls` (which lists, never looks these up) opens nothing.
// Costs: a name NAME costs one stat per container extension (NAME.b2nd,
// NAME.b2frame, ...), or one listing of the directory where the tree says a
// listing costs no more than a stat (source::TreeCosts), and one stat of
// _cols/NAME (a CTable's column: its directory's group holds its columns;
// where the directory was listed, the listing must hold _cols and
// columns.json first); .zgroup lists the directory and opens its first
// container; .zmetadata lists the directory
// and opens every container in it (at most views::kDirGroupMaxContainers,
// else no group).
// Each answer is a view of a container's generation (.zgroup and
// .zmetadata: of the directory's first container) that the resolver numbers
// as an unlisted node, so it lives as long as the kernel holds it and goes
// stale with that generation; .zmetadata describes the containers as they
// were at its lookup.
// Errors: ENOENT where the name is not the group's; a container's open error
// (EIO...) otherwise. Thread-safety: any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "b2ndfs/util/status.h"
#include "generation.h"

namespace b2ndfs::views {
class Node;
}  // namespace b2ndfs::views

namespace b2ndfs::vfs {

// What a group's name denotes: a view of one container's generation that no
// listing shows (the caller numbers it as an unlisted node).
struct GroupName {
  std::shared_ptr<Generation> generation;
  std::shared_ptr<const store::Container> container;
  std::shared_ptr<const views::Node> view;
};

// The entry of a container path (Resolver::EntryFor).
using EntryFinder = std::function<std::shared_ptr<ContainerEntry>(const std::string& path)>;

// `name` in the mirrored directory `dir`, where the tree said it does not
// exist.
Result<GroupName> LookupDirGroup(const EntryFinder& entry_for, const source::Tree& tree,
                                 const views::Registry& views, const std::string& dir,
                                 const std::string& name);

}  // namespace b2ndfs::vfs
