// source/tree: a whole source tree (SOURCE's directories, plain files and
// containers) behind one interface, so that vfs knows nothing of where the
// bytes live: a local directory (LocalTree), a web server, an object store.
//
// Paths. A tree names its root by root() (a local path, or a URL without
// credentials); the path of an entry is its parent's path + "/" + its name.
// Paths are used as given: a tree never resolves "." or "..", and vfs never
// builds one with them.
// Kinds. Stat() and List() report directories (S_IFDIR) and regular files
// (S_IFREG) with the owner, group, permission bits and times the source gives
// (a remote tree makes them up: the mounting user, read-only, Last-Modified).
// Whether an entry is a container is decided by vfs from its name, never by
// opening it, unless the tree says so itself (IsContainer: the leaves of a
// python-blosc2 store, named by their keys, without an extension).
// Errors: Status with the errno of the failure. Probe(), Stat(),
// OpenContainer() and List() say "gone" only with ENOENT or ENOTDIR: the
// path no longer exists (a local path, or a remote answer of 404 or 410, or
// a name missing from its directory's listing). Every other error is about
// this attempt, not about the entry, and is transient to the caller: EIO
// (a disk error, a timeout, a refused or reset connection, a 5xx or 429
// after the retries, a malformed answer), EACCES (401, 403), EMFILE,
// ENFILE, ENOMEM, EINTR, EAGAIN, ELOOP and the rest. IsGone() says which.
// vfs ends a container's generation only when it is gone or its signature
// changed; on any other error it keeps the generation (and its cached
// blocks), returns the error and forgets it.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::source {

struct TreeEntry {
  std::string name;
  struct stat st {};
};

// One open plain (non-container) file: the version it was opened at, and its
// bytes. A remote file refuses to read bytes of another version (ESTALE).
class PlainFile {
 public:
  virtual ~PlainFile() = default;
  // The version the file was opened at (the kernel keeps cached pages of a
  // plain file only while its version stays the same).
  virtual const Signature& version() const = 0;
  // Reads up to `length` bytes at `offset`, fewer only at the end of the file.
  virtual Result<size_t> ReadUpTo(int64_t offset, uint8_t* out, size_t length) const = 0;
};

// A directory's entries, a page at a time (Tree::OpenList): a remote
// directory of 100,000 names is read as the reader goes, holding one page.
class ListCursor {
 public:
  virtual ~ListCursor() = default;
  // The next page of entries (as List() gives them: directories and regular
  // files); empty once done(). Pages are each sorted by name; names are not
  // repeated, but the pages together need not be in name order.
  virtual Result<std::vector<TreeEntry>> Next() = 0;
  virtual bool done() const = 0;
};

// What a tree's requests cost, declared by the tree so that vfs and the
// FUSE layer decide without asking where the entries live (as a ByteSource's
// CostProfile does for reads).
struct TreeCosts {
  // A request (stat, probe, listing, read) may wait on a server for seconds,
  // or go unanswered: reads are answered off the FUSE request threads (and
  // asynchronous direct I/O, which the kernel waits for uninterruptibly, is
  // refused), probes of what is already known run on background threads
  // while callers go on with what they know, a reader's read-ahead goes out
  // before its own read is served, over a wider window, and no whole files
  // are pushed ahead of readers.
  bool requests_may_stall = false;
  // One listing of a directory costs no more than a stat of one entry (one
  // request either way): a lookup that would stat several guessed names
  // lists their directory once instead.
  bool listing_costs_one_stat = false;
  // Every entry shows the same owner, group and permissions (a remote tree's
  // made-up ones): who may read a file made from others then needs no look
  // at them.
  bool uniform_attributes = false;
};

class Tree {
 public:
  virtual ~Tree() = default;
  // The root's path (see "Paths").
  virtual const std::string& root() const = 0;
  // The attributes of an entry (symbolic links followed; a link's read bits
  // also say who may search the directories it leads through, as
  // StatBeneath(path, false)).
  virtual Result<struct stat> Stat(const std::string& path) const = 0;
  // What binds a reader of `path` (README.md, "Permissions"): Stat(path)
  // with the owner, group and read bits that also let its readers search
  // every directory passed to reach it from the root (source/provenance.h),
  // symbolic links followed as the walk meets them. `confined`: a path
  // that a container names (an operand, a store member), which must not
  // leave the root through a link (EXDEV). Here: Stat(path), for trees
  // whose entries all carry the same attributes (remote ones).
  virtual Result<struct stat> StatBeneath(const std::string& path, bool confined) const;
  // The entries of a directory that are directories or regular files (after
  // following links; dangling links, devices, fifos and sockets are left
  // out), sorted by name.
  virtual Result<std::vector<TreeEntry>> List(const std::string& path) const = 0;
  // The entries of a directory, a page at a time. Here: List() as one page.
  virtual Result<std::unique_ptr<ListCursor>> OpenList(const std::string& path) const;
  // The current signature of a container (a file, or a sparse-frame
  // directory), without opening it: cheap enough to call on every use.
  virtual Result<Signature> Probe(const std::string& path) const = 0;
  // The current version of a container. The source refuses to read another
  // version later (ESTALE). `probed`: what Probe() just said of it, which a
  // tree may open without asking again (nullptr: that answer may be stale).
  virtual Result<std::shared_ptr<const ByteSource>> OpenContainer(
      const std::string& path, const Signature* probed) const = 0;
  // The current version of a plain file.
  virtual Result<std::shared_ptr<const PlainFile>> OpenFile(const std::string& path) const = 0;
  // True when the regular file at `path` (as Stat or List just gave it) is
  // a container whatever its name says. Cheap: no source I/O beyond what
  // describing the entry took.
  virtual bool IsContainer(const std::string& /*path*/) const { return false; }
  // The tree's own members of .b2ndfs/stats: JSON object members, each line
  // indented by two spaces and ending with ",\n" (empty if none).
  virtual std::string StatsJson() const = 0;
  // What its requests cost (see TreeCosts). Here: a local directory's.
  virtual TreeCosts costs() const { return TreeCosts{}; }
  // How long the tree reuses what it was told of an entry (a remote tree's
  // revalidate=): a probe within that long of the last one answers the same
  // without asking. 0: every probe asks.
  virtual double revalidate_seconds() const { return 0; }
};

// True when `status` says that the path is gone (ENOENT, ENOTDIR; see
// "Errors"): the only failures that end a container's generation.
inline bool IsGone(const Status& status) {
  return status.error_number() == ENOENT || status.error_number() == ENOTDIR;
}

// Local directories and files. `max_descriptors` bounds the descriptors held
// open (0: DefaultDescriptorCapacity()).
std::shared_ptr<Tree> MakeLocalTree(std::string root, size_t max_descriptors = 0);

}  // namespace b2ndfs::source
