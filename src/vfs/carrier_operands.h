// Private to vfs: the mount's store::OperandOpener (store/operands.h).
//
// An operand's saved urlpath is resolved against the directory of its
// carrier, lexically ("." and ".." taken apart, never above the mount's
// root), and must name a container of the mount (mirror.h), reached without
// a symbolic link out of the mount (Tree::StatBeneath, confined); who may
// read it is its attributes bound by every directory passed on the way. It is opened from
// the tree as its own version with its own cache_id, whose cached blocks
// are erased when the carrier lets it go. Carriers among the operands are
// opened with the scope's chain grown by one: a path already in the chain is
// a cycle, and nesting stops at store::kMaxCarrierDepth.
// Thread-safety: any thread; holds nothing but the tree and the store.
#pragma once

#include <memory>

#include "b2ndfs/source/tree.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/store/operands.h"

namespace b2ndfs::vfs {

// `tree` and `store` outlive the opener and everything it opens.
std::shared_ptr<const store::OperandOpener> MakeMountOperands(const source::Tree* tree,
                                                              store::StoreContext* store);

// The scope a container at `path`, whose readers `readers` says (its
// source's attributes), is opened in (null without an opener).
std::unique_ptr<store::OperandScope> TopScope(const store::OperandOpener* opener,
                                              const std::string& path, const struct stat& readers);

// Whether every path a version depends on still holds the version read
// (a path that cannot be reached now counts as unchanged).
bool OperandsUnchanged(const source::Tree& tree,
                       const std::vector<store::OperandVersion>& versions);

}  // namespace b2ndfs::vfs
