// Private to vfs: a file the tree declares and the mount computes from
// containers of the tree (source/declared_file.h): a CTable's
// valid/NAME.npy, the .npy header, then the column's rows at the live rows
// of _valid_rows, in row order.
// Both leaves are opened as any container of the mount is: through their
// paths' entries and current generations (generation.h), so their blocks
// are read, decompressed and cached under those generations' cache_ids,
// shared with direct reads of the leaves, and ended by the generations'
// rule. The file keeps both generations (and their opened containers) to
// its end. A read of live rows [k0, k1) finds the segment of
// source::kSegmentRows physical rows where k0 lies
// (RowSelection::live_before), reads that segment of _valid_rows
// (kSegmentRows bytes), and the column's rows it names in windows of at most
// kColumnWindowBytes: memory per read is bounded by those and by the read's
// own length, whatever the table's size. A leaf whose shape no longer
// agrees with the counts the declaration made (a .b2d leaf file rewritten
// in place) reads as EIO.
// Who may read it is what the tree's Stat() said (whoever may read both
// leaves). Thread-safety: the file's reads may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "b2ndfs/source/declared_file.h"
#include "generation.h"

namespace b2ndfs::vfs {

constexpr int64_t kColumnWindowBytes = int64_t{1} << 20;

// The file `declared` at `path` computed from its leaves, whose entries
// `entries` finds (Resolver::EntryFor). Errors: a leaf's, as opening it
// gives it; EIO (with `path`) when a leaf is no container that agrees with
// the declaration (its message names which).
Result<std::shared_ptr<const source::PlainFile>> OpenComputedFile(
    const source::DeclaredFile& declared, const std::string& path, store::StoreContext* context,
    const EntryFinder& entries);

}  // namespace b2ndfs::vfs
