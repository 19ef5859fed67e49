// Private to stores: what a store and the entries inside it look like to
// the tree's callers, decided from names and the store's attributes alone:
// which names are stores (and of which kind), the attributes a store and its
// nodes show, the generated files held in memory, and a base directory's
// listing with its store files shown as directories (README.md,
// "python-blosc2 stores").
// Thread-safety: pure functions; a TextFile is immutable; a cursor has one
// reader at a time (source::ListCursor).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/source/tree.h"
#include "index_types.h"

namespace b2ndfs::stores::internal {

// The files a directory of a store may hold besides its entries.
constexpr const char* kDirectoryFiles[] = {"meta.json", "columns.json"};

bool EndsWith(const std::string& s, const char* suffix);

// The kind of store a name says (.b2z, .b2e, .b2d), if any.
std::optional<StoreKind> KindByName(const std::string& name);
// Whether an entry of attributes `st` can be a store of `kind` (a .b2d a
// directory, the others regular files).
bool KindMatches(StoreKind kind, const struct stat& st);

// A store, or anything below it, shown as a directory: x where r.
struct stat AsDirectory(struct stat st);
// A file of `size` bytes inside a store, read-only.
struct stat AsFile(struct stat st, int64_t size);

// A plain file held in memory (a meta.json).
class TextFile final : public source::PlainFile {
 public:
  TextFile(std::string text, source::Signature version)
      : text_(std::move(text)), version_(std::move(version)) {}
  const source::Signature& version() const override { return version_; }
  Result<size_t> ReadUpTo(int64_t offset, uint8_t* out, size_t length) const override;

 private:
  const std::string text_;
  const source::Signature version_;
};

// Pages of a directory outside any store, its store files shown as
// directories (as StoreTree::List shows them).
class StoreFilesAsDirectories final : public source::ListCursor {
 public:
  explicit StoreFilesAsDirectories(std::unique_ptr<source::ListCursor> base)
      : base_(std::move(base)) {}
  Result<std::vector<source::TreeEntry>> Next() override;
  bool done() const override { return base_->done(); }

 private:
  std::unique_ptr<source::ListCursor> base_;
};

}  // namespace b2ndfs::stores::internal
