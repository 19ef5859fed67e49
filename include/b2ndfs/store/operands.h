// store/operands: how a carrier (a saved lazy expression) finds the
// containers its expression reads (README.md, "Variable-length data,
// carriers and caches").
//
// The store knows no paths: the mount (vfs) implements OperandOpener,
// resolving an operand's saved urlpath against the carrier's directory, inside
// the mount's source, and opening that container as any of the mount's (the
// version, cache_id and staleness a direct read has). A carrier's operands can
// be carriers themselves, opened the same way with a longer `chain`: a path
// already in the chain is a cycle, and at most kMaxCarrierDepth carriers
// nest; `budget` bounds the containers one evaluation opens in all.
// Readers: whoever may read a carrier's computed bytes must be allowed to
// read every file they come from (README.md, "Permissions"): each operand
// says who may read it (`readers`: its attributes bound by the directories
// passed to reach it and, for a carrier, by its own operands), and the
// evaluation combines them with the carrier's own (scope `readers`) by
// source::MostRestrictive(), or is refused when no owner and mode can say it.
// Lifetime: the opened operands belong to the carrier's Container; an
// Operand's `keep` (what holds the operand's version and its cached blocks)
// is released after its container.
// Thread-safety: Open() may be called from any thread.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/source/byte_source.h"

namespace b2ndfs::store {

class Container;
class OperandOpener;

constexpr int kMaxCarrierDepth = 4;
constexpr int kMaxOperandOpens = 64;

// Where a container is being opened from, for its own operands.
struct OperandScope {
  const OperandOpener* opener = nullptr;
  std::string path;                // this container's path in the mount
  std::vector<std::string> chain;  // the carriers whose operands led here, outermost first
  std::shared_ptr<std::atomic<int>> budget;  // operand containers left to open
  // Who may read this container's own file (nullopt: not known, as in the
  // inspection tool).
  std::optional<struct stat> readers;
};

struct Operand {
  std::string path;   // resolved, as the tree names it (empty when it could not be)
  std::string shown;  // the same, relative to the mount's root (for meta.json)
  std::shared_ptr<const Container> container;  // null on error
  std::shared_ptr<const void> keep;
  // Non-empty: why the operand cannot be used, in words.
  std::string error;
  // Who may read what is made from it (see "Readers"); set with `container`.
  std::optional<struct stat> readers;
  // The operand was not there (a later version of the mount may hold it).
  bool missing = false;
  // The version of `path` read (the container's, or what the tree says of
  // a path that is no container); nullopt when it could not be had.
  std::optional<source::Signature> version;
};

// A path the carrier's value depends on, and the version it was read at
// (nullopt: it was not there).
using OperandVersion = std::pair<std::string, std::optional<source::Signature>>;

class OperandOpener {
 public:
  virtual ~OperandOpener() = default;
  // Opens `urlpath` (as the recipe saved it) for the carrier `scope.path`.
  virtual Operand Open(const OperandScope& scope, const std::string& urlpath) const = 0;
};

}  // namespace b2ndfs::store
