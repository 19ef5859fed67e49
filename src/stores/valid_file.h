// Private to stores: a CTable's valid/NAME.npy opened (ctable.h): the .npy
// header, then the column's rows at the live rows of _valid_rows, in row
// order. Both leaves are opened as containers of the mount's StoreContext,
// so their blocks are read, decompressed and cached as any container's are
// (only the blocks a read touches; c-blosc2 checked by the codec module).
// A read of live rows [k0, k1) finds the segment of kSegmentRows physical
// rows where k0 lies (ValidFileSpec::live_before), reads that segment of
// _valid_rows (kSegmentRows bytes), and the column's rows it names in
// windows of at most kColumnWindowBytes: memory per read is bounded by those
// and by the read's own length, whatever the table's size.
// Versions: the file holds both leaves' sources (the store version it was
// opened at); a leaf whose shape no longer agrees with the counts the store
// index made (a .b2d leaf file rewritten in place) reads as EIO.
// Thread-safety: ReadUpTo may be called from any thread.
#pragma once

#include <memory>

#include "b2ndfs/source/tree.h"
#include "ctable.h"

namespace b2ndfs::store {
struct StoreContext;
}  // namespace b2ndfs::store

namespace b2ndfs::stores::internal {

constexpr int64_t kColumnWindowBytes = int64_t{1} << 20;

// Opens valid/NAME.npy over the two leaves' sources. EIO when either is not
// a container that agrees with `spec` (its message names which).
Result<std::shared_ptr<const source::PlainFile>> OpenValidFile(
    std::shared_ptr<const ValidFileSpec> spec, std::shared_ptr<const source::ByteSource> column,
    std::shared_ptr<const source::ByteSource> valid_rows, store::StoreContext* context,
    source::Signature version);

}  // namespace b2ndfs::stores::internal
