// Private to vfs: the mount's store::OperandOpener (store/operands.h).
//
// An operand's saved urlpath is resolved against the directory of its
// carrier, lexically ("." and ".." taken apart, never above the mount's
// root), and must name a container of the mount (mirror.h), reached without
// a symbolic link out of the mount (Tree::StatBeneath, confined); who may
// read it is its attributes bound by every directory passed on the way.
// Carriers among the operands are opened with the scope's chain grown by
// one: a path already in the chain is a cycle, and nesting stops at
// store::kMaxCarrierDepth. These checks, and the budget's, come before any
// lock of the operand's is tried. It is then opened as a container of the
// mount is: through its path's entry and generation
// (ContainerEntry::ForOperand), whose cache_id and cached blocks a direct
// read shares and whose version ends by the generations' one rule; the
// carrier keeps the generation while it lives.
// Thread-safety: any thread; holds nothing but the tree and the entry finder.
#pragma once

#include <memory>
#include <string>

#include "b2ndfs/source/tree.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/store/operands.h"
#include "generation.h"

namespace b2ndfs::vfs {

// `tree` and what `entries` uses outlive the opener and everything it opens.
std::shared_ptr<const store::OperandOpener> MakeMountOperands(const source::Tree* tree,
                                                              EntryFinder entries);

// The scope a container at `path`, whose readers `readers` says (its
// source's attributes), is opened in (null without an opener).
std::unique_ptr<store::OperandScope> TopScope(const store::OperandOpener* opener,
                                              const std::string& path, const struct stat& readers);

// Whether every path a version depends on still holds the version read
// (a path that cannot be reached now counts as unchanged).
bool OperandsUnchanged(const source::Tree& tree,
                       const std::vector<store::OperandVersion>& versions);

}  // namespace b2ndfs::vfs
