// Private to vfs: the listings OpenDir hands out (types.h, DirListing) for
// directories that are not fixed: a mirrored directory of the source, and a
// directory inside a container (a view directory of one generation).
// Lifetimes: a view listing owns the generation and container it lists, so
// its entries' attributes (READDIRPLUS) come without asking the source; a
// mirrored listing holds the tree and the inode table, which outlive it.
// Thread-safety: one reader at a time (types.h).
#pragma once

#include <memory>
#include <string>

#include "b2ndfs/source/tree.h"
#include "b2ndfs/util/status.h"
#include "b2ndfs/vfs/types.h"
#include "generation.h"
#include "inode_table.h"

namespace b2ndfs::views {
class Listing;
class Node;
}  // namespace b2ndfs::views

namespace b2ndfs::vfs {

// The mirrored directory `dir` (a tree path), each entry numbered as a
// lookup would number it; read page by page when the tree gives it so.
Result<std::shared_ptr<DirListing>> ListMirroredDir(std::shared_ptr<source::Tree> tree,
                                                    InodeTable* inodes, const std::string& dir);

// The view directory `directory` of `generation`'s `container`, its entries
// numbered from the generation's block; `timeout`: how long their
// attributes may be cached.
Result<std::shared_ptr<DirListing>> ListViewDir(std::shared_ptr<Generation> generation,
                                                std::shared_ptr<const store::Container> container,
                                                std::shared_ptr<const views::Node> directory,
                                                double timeout);

}  // namespace b2ndfs::vfs
