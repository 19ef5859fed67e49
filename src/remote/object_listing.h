// remote/object_listing (private to src/remote): the pure parts of an
// ObjectTree's answers: a directory listing sorted and without repeated
// names, its hash (a sparse frame directory's version), and the attributes
// a listed entry or an object shows (read-only, owned by the mounting user).
// Thread-safety: functions of their arguments only.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <vector>

#include "b2ndfs/remote/autoindex.h"
#include "b2ndfs/source/tree.h"
#include "object_tree.h"

namespace b2ndfs::remote {

// A directory (0555, size 0) or a file (0444) of `size` bytes, modified at
// `mtime`, owned by the process's user and group.
struct stat MakeStat(bool directory, int64_t size, int64_t mtime);

// FNV-1a over a listing's names, sizes, times, kinds and ETags: changes when
// a sparse frame's chunk files are added, removed or rewritten.
uint64_t ListingHash(const std::vector<IndexEntry>& entries);

// An entry as readdir shows it (a size the listing leaves out is 0 until
// the file is asked about).
source::TreeEntry TreeEntryOf(const IndexEntry& e);

// `entries` sorted by name, the first of each name kept.
Listing SortedListing(std::vector<IndexEntry> entries);

}  // namespace b2ndfs::remote
