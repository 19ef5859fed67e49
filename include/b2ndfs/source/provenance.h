// source/provenance: who may read a file made from other files (README.md,
// "Permissions").
//
// A file that b2ndfs derives from several source files (an evaluated
// carrier from its operands, a store leaf from the directories above it, a
// table's valid rows from two columns) must be readable only by users who
// could read every one of them directly. One owner, one group and one mode
// cannot say "the users who may read A and B" exactly, so MostRestrictive()
// answers a conservative owner/group/mode: every user it lets read may read
// every input; some who could read them all may be refused (b2ndfs does not
// look up group membership). A directory that had to be searched to reach a
// file takes part through SearchedAs(): its x bits are who may pass it.
// Pure functions of struct stat; thread-safe.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <span>

namespace b2ndfs::source {

// `dir` as an input of MostRestrictive(): readable by whoever may search it.
struct stat SearchedAs(const struct stat& dir);

// inputs[0] with its owner, group and read bits replaced by the most
// restrictive ones that still let some user read every input (root aside);
// nullopt when none can be chosen (then only root may read them all), or
// when `inputs` is empty. Write and execute bits are cleared.
std::optional<struct stat> MostRestrictive(std::span<const struct stat> inputs);

// MostRestrictive(inputs), or, where none can be chosen, inputs[0] with no
// read bits (only root may read it): the attributes of an entry that exists
// whoever may read it. `inputs` must not be empty.
struct stat BoundBy(std::span<const struct stat> inputs);

}  // namespace b2ndfs::source
