// vfs: an open regular file, and what it keeps alive.
//
// An open file is one of three kinds: a view of a container generation (the
// virtual files), a plain file of the source, or a snapshot made at open
// (.b2ndfs/stats). A view handle owns its generation, the generation's
// opened container and a hold of the source's version (a local frame's
// descriptor), so it reads the version it opened to its end, whatever
// happens to the container meanwhile (README.md, "Containers that change").
// Thread-safety: a handle is immutable after Open() except its ReadPattern,
// which has its own lock.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <variant>

namespace b2ndfs::store {
class Container;
}  // namespace b2ndfs::store
namespace b2ndfs::views {
class Node;
}  // namespace b2ndfs::views
namespace b2ndfs::source {
class PlainFile;
}  // namespace b2ndfs::source

namespace b2ndfs::vfs {

using Ino = uint64_t;
class Generation;

// How one file is being read, shared by all its open handles (and so by mmap
// faults, which the kernel sends through any handle): detects sequential
// reading and how far ahead blocks have been requested.
struct ReadPattern {
  std::mutex mutex;  // leaf lock
  int64_t next_offset = -1;
  int64_t window = 0;            // current read-ahead distance in bytes
  int64_t prefetched_until = 0;  // read-ahead was requested up to here
};

// A virtual file of one container generation.
struct ViewHandle {
  std::shared_ptr<Generation> generation;
  std::shared_ptr<const void> version_hold;  // Generation::Hold()
  std::shared_ptr<const store::Container> container;
  std::shared_ptr<const views::Node> view;
  std::shared_ptr<ReadPattern> pattern;
  Ino ino = 0;
  Ino ino_base = 0;  // the generation's first inode number
};

// An ordinary file of the source, passed through.
struct PlainHandle {
  std::shared_ptr<const source::PlainFile> file;
};

// A file generated whole at open (its size changes between opens).
struct SnapshotHandle {
  std::shared_ptr<const std::string> text;
};

struct FileHandle {
  std::variant<ViewHandle, PlainHandle, SnapshotHandle> file;
  bool keep_cache = true;  // false when a plain file changed since
  bool direct_io = false;  // for generated files whose size is not fixed
  // Reads may wait on a server (the tree's TreeCosts::requests_may_stall,
  // source/tree.h): the FUSE layer answers them off its request threads.
  bool remote = false;

  const ViewHandle* view() const { return std::get_if<ViewHandle>(&file); }
};

}  // namespace b2ndfs::vfs
