// source: where a container's bytes come from, and how one version of them is
// told from the next.
//
// A ByteSource is one *generation* of one container's bytes: a contiguous
// frame file, or a sparse frame (chunks.b2frame plus numbered chunk files).
// It is opened with the signature its source had then, and every read checks
// that it still reads that version: bytes of a file that was rewritten in
// place, or replaced while no descriptor of the old one was held, read as
// ESTALE, never as a mix of two versions. A ByteSource holds no descriptor of
// its own (but while a HoldVersion() token lives): a mount-wide
// DescriptorCache keeps a bounded number open (least recently used are
// closed) and reopens on demand, so any number of containers can be read
// under any RLIMIT_NOFILE. Backends for HTTP and S3 implement the same
// interface.
// Errors: Status with the errno of the failure. Of OpenLocal() and
// ProbeLocal() (as of Tree's Probe/OpenContainer, tree.h): ENOENT or ENOTDIR
// when the container is gone (IsGone(), tree.h); anything else (EIO, EACCES,
// EMFILE, ENFILE, ENOMEM, EINTR, EAGAIN, a remote's timeouts, refused
// connections and 5xx, which are EIO) is transient: callers return it and
// never remember it as a container's state. Of reads: ESTALE when the source
// no longer holds this version (found_stale() is then true: the only read
// error that says anything about the generation); any other read error
// (EIO, ENOMEM, EMFILE; ENOENT for a chunk file that is not there) is an
// error of that read.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "b2ndfs/util/status.h"

namespace b2ndfs::source {

class DerivedStore;

// Identifies one version of a source. Local files: device, inode, size and
// nanosecond mtime/ctime (a rewrite always moves ctime); a sparse frame: those
// of chunks.b2frame plus its directory's inode and mtime (chunk files
// created, removed or renamed). Remote objects: the ETag in `tag`.
struct Signature {
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t dir_inode = 0;
  int64_t dir_mtime_ns = 0;
  std::string tag;
  bool operator==(const Signature&) const = default;
};

// The parts of a container: its frame (for a sparse frame, chunks.b2frame),
// or chunk file N of a sparse frame (N >= 0, the number in its name).
constexpr int64_t kFramePart = -1;

// A sparse frame's files (c-blosc2's README_SFRAME_FORMAT.rst): its index,
// and chunk file number n ("0000000A.chunk").
inline constexpr const char* kSparseFrameIndex = "chunks.b2frame";
std::string SparseChunkFileName(int64_t n);

// One read of ReadMany(): exactly `length` bytes at `offset` of `part`.
struct PartRead {
  int64_t part = kFramePart;
  int64_t offset = 0;
  size_t length = 0;
  uint8_t* out = nullptr;
};
// Called once per read of a ReadMany(), with its index and outcome.
using ReadDone = std::function<void(size_t index, const Status& status)>;

// What one read of a source costs, declared by the source so that readers
// plan without asking where the bytes live.
struct CostProfile {
  // How long one read waits: a syscall, or a network round trip.
  enum class Latency { kLocal, kNetwork };
  // Two byte ranges of a part at most this many bytes apart are worth one
  // read that also fetches the gap between them: about what one more read
  // costs, in bytes. Readers also cap the bytes they drop (store/read_plan.h).
  int64_t merge_gap = 32 << 10;
  // The longest read worth joining ranges into (a single longer range is
  // read alone).
  int64_t max_read = int64_t{16} << 20;
  // Reads handed to ReadMany together are in flight together (one round trip
  // for the lot): readers give a plan's reads to it at once.
  bool batch_reads = false;
  Latency latency = Latency::kLocal;
  bool network() const { return latency == Latency::kNetwork; }
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // For messages and logs: a path, or a URL without credentials.
  virtual const std::string& name() const = 0;
  virtual bool sparse() const = 0;
  // The version this generation was opened at.
  virtual const Signature& signature() const = 0;
  // Size in bytes of a part.
  virtual Result<int64_t> PartSize(int64_t part) const = 0;
  // Reads exactly `length` bytes at `offset` of a part.
  virtual Status Read(int64_t part, int64_t offset, size_t length, uint8_t* out) const = 0;
  // Many reads, as Read each. done(i, status) is called once per read, on
  // the calling thread, as each ends (in any order); returns after the last.
  // Here: one after the other. Remote sources have them all in flight at
  // once (a round trip for the lot, not one each): callers with many reads
  // for a source whose cost() has batch_reads hand them over together. An
  // exception thrown by `done` passes on once every read has ended.
  virtual void ReadMany(std::span<const PartRead> reads, const ReadDone& done) const {
    for (size_t i = 0; i < reads.size(); ++i) {
      const PartRead& r = reads[i];
      done(i, Read(r.part, r.offset, r.length, r.out));
    }
  }
  // True once a read found that the source no longer holds this version (a
  // chunk file rewritten in place): the container must be opened afresh.
  virtual bool found_stale() const = 0;
  // What reads of this source cost, as readers plan them (see CostProfile).
  virtual CostProfile cost() const { return CostProfile{}; }
  // Keeps what reading this version needs (a local frame's descriptor, so
  // that a file replaced by rename stays readable) until the returned token
  // is released: vfs holds one per generation with open files. nullptr when
  // nothing needs holding (a remote source names its version in every
  // request, and the server answers ESTALE once it no longer has it).
  // Local sources: the holds of one source share what they keep, and the
  // last token released closes it (in the releasing thread). Kept: the
  // frame's descriptor (chunks.b2frame's for a sparse frame) and those of
  // the first 256 chunk files read while held; while a token lives, they are
  // read whatever happens to their paths (rename over, unlink) or to the
  // mount's descriptor cache. A hold taken after the version's frame left
  // both its path and the descriptor cache keeps nothing (reads answer
  // ESTALE, as without a hold). A hold never makes bytes rewritten in place
  // readable: they still answer ESTALE.
  virtual std::shared_ptr<const void> HoldVersion() const { return nullptr; }
  // Where values computed from this version are kept across mounts
  // (derived_store.h), valid while the source lives; nullptr when there is
  // no such place (local sources; a remote one without disk_cache=, or
  // whose version has no ETag).
  virtual const DerivedStore* derived_store() const { return nullptr; }
};

class DescriptorCache;

// Reads the current signature of a local container (file or sparse-frame
// directory) without opening it.
Result<Signature> ProbeLocal(const std::string& path);

// Opens the current version of a local container. `descriptors` must outlive
// the source.
Result<std::shared_ptr<const ByteSource>> OpenLocal(const std::string& path,
                                                    DescriptorCache* descriptors);

}  // namespace b2ndfs::source
