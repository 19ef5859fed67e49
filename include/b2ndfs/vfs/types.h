// vfs/types: what the parts of vfs and the FUSE layer say to each other
// about the namespace: inode numbers, directory entries and listings,
// attributes with their cache lifetime, and what the kernel must drop or may
// be handed ahead of a reader. Plain values and one interface (DirListing);
// the Filesystem that makes them is vfs/filesystem.h.
// Thread-safety: values are copied; a DirListing has one reader at a time.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "b2ndfs/util/status.h"
#include "b2ndfs/vfs/file_handle.h"

namespace b2ndfs::vfs {

constexpr Ino kRootIno = 1;

// True for names that b2ndfs shows as containers (.b2nd, .b2frame, .b2f, .b2,
// .caterva, .cat).
bool HasContainerExtension(const std::string& name);

// What the kernel may have cached and must drop: the attributes of inode
// `ino` (0: none), and the name `name` in directory `parent` with everything
// below it (when forget_name).
struct StaleNode {
  Ino ino = 0;
  Ino parent = 0;
  std::string name;
  bool forget_name = false;
};

// A whole file to hand to the kernel's page cache before its reader asks for
// it (read-ahead across the files of slices/0/, which image-sequence tools
// open one after another): the FUSE layer fills `size` bytes with `render`
// and stores them as inode `ino`'s pages, which the kernel keeps only for an
// inode it knows; it then calls `done` with whether they were stored.
struct PagePush {
  Ino ino = 0;
  int64_t size = 0;
  std::function<Status(uint8_t* out)> render;
  std::function<void(bool stored)> done;
};

struct DirEntry {
  std::string name;
  mode_t type = 0;  // S_IFDIR / S_IFREG
  Ino ino = 0;      // the inode number lookup gives (0: not known yet)
};

// Attributes plus how long the kernel may cache them: names inside a
// container are fixed for its generation; the mirrored tree may change.
struct Attr {
  struct stat st {};
  double timeout = 1.0;
};

// An open directory: a stable snapshot, a generated sequence for chunk and
// slice directories (which may hold millions of names), or a remote
// directory read page by page as the reader goes.
// Thread-safety: one reader at a time (the kernel serializes the readdirs of
// an open directory).
class DirListing {
 public:
  virtual ~DirListing() = default;
  // Whether entry `index` exists, reading what it takes to know (the pages
  // up to it; back to the first page when it was dropped); an error when
  // that read failed.
  virtual Result<bool> Has(size_t index) { return index < size(); }
  // The entries known so far (all of them, but for a listing read page by
  // page).
  virtual size_t size() const = 0;
  // Entry `index`, which Has() just found.
  virtual DirEntry at(size_t index) const = 0;
  // The attributes of entry `index` at no source I/O (the views of the
  // generation the listing was made from), for READDIRPLUS; an error where
  // that cannot be had cheaply (the mirrored tree).
  virtual Result<Attr> Attributes(size_t /*index*/) const {
    return Status(ENOSYS, "no attributes in this listing");
  }
  // Attributes() answers (the FUSE layer hands them to the kernel with the
  // names; they are not references the daemon counts).
  virtual bool cheap_lookups() const { return false; }
};

// A directory inside a container of more generated names than this (chunks/
// of a long series, zarr/, data.zarr/c/...) lists none: a walker (find, du,
// ls -l, an indexer) would otherwise stat each of them, while every name
// still opens (README.md, "Layout").
constexpr size_t kMaxListedNames = 100000;

// The hidden directory at the mount root with runtime statistics.
constexpr const char* kControlDirName = ".b2ndfs";

}  // namespace b2ndfs::vfs
