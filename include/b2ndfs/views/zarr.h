// views/zarr (src/views/zarr.cc): a source directory as a consolidated Zarr
// v2 group whose variables are its containers (README.md, "Zarr groups and xarray"), so that
// xarray.open_zarr(DIR) opens a directory of containers as one Dataset. The
// vfs finds the containers and their generations; this renders what the
// group's unlisted names hold:
// - DIR/.zgroup: {"zarr_format": 2};
// - DIR/.zmetadata: for every member, NAME/.zarray and NAME/.zattrs (the
//   vlmetalayers, with "_ARRAY_DIMENSIONS" NAME_dim_0, ... unless the
//   container names its axes in a vlmetalayer of that name); in a table
//   (DirTable: a CTable's directory or _cols/, or a store group whose 1-D
//   leaves have one length) the members of the table's rows share the
//   dimension "row" (README.md, "Tables and coordinates in xarray");
// - DIR/NAME/: the files of the container's zarr/ (chunk files are the same
//   inodes), with that .zattrs.
// NAME is the container's file name without its extension (ZarrVariableName).
// The cost: .zmetadata needs every member's metadata, so the vfs opens every
// container of the directory (at most kDirGroupMaxContainers; a directory
// with more is not a group) on the first lookup of .zgroup or .zmetadata;
// `ls` never does (the names are not listed).
// Thread-safety: pure functions of immutable containers; any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "b2ndfs/store/container.h"
#include "b2ndfs/util/status.h"
#include "b2ndfs/views/view.h"

namespace b2ndfs::views {

constexpr size_t kDirGroupMaxContainers = 256;

// "a.b2nd" -> "a": the container extensions vfs recognises are dropped.
std::string ZarrVariableName(const std::string& file_name);

// The container can be a Zarr v2 variable (decoded, regular chunks, a dtype
// Zarr v2 describes; meta.json's "zarr" says why not).
bool IsZarrVariable(const store::Container& container);

struct DirMember {
  std::string name;  // the variable
  std::shared_ptr<const store::Container> container;
};
// What the directory is, as the vfs found it.
struct DirTable {
  enum class Kind {
    kNone,        // a plain directory
    kStoreGroup,  // a python-blosc2 store's group: a table when its 1-D leaves have one length
    kCTable,      // a CTable's directory (with its _cols/ leaves) or its _cols/
  };
  Kind kind = Kind::kNone;
  int64_t rows = -1;  // kCTable: the length of its _valid_rows (-1: unknown, no table)
  // The CTable's own directory: members of another length (a UTF-8
  // column's offsets and bytes, a dictionary) are left out, so that the
  // group is the table.
  bool rows_only = false;
};
// DIR/.zmetadata of these members (those that are not Zarr variables are
// left out).
Result<std::string> DirZmetadata(const std::vector<DirMember>& members, const DirTable& table = {});

// DIR/NAME/ for `container` (ENOENT when it is not a Zarr variable). No
// ordinal of its own: the vfs numbers it as an unlisted node.
Result<std::shared_ptr<const Node>> DirVariable(const Registry& registry,
                                                const store::Container& container,
                                                const std::string& name);

// A read-only file of fixed text with no ordinal (DIR/.zgroup, .zmetadata).
std::shared_ptr<const Node> MakeTextFile(std::string name, std::string text);

}  // namespace b2ndfs::views
