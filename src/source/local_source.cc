// Local byte sources: a frame file, or a sparse-frame directory.
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/source/descriptor_cache.h"
#include "local_internal.h"

namespace b2ndfs::source {
namespace {

using internal::FileSignature;
using internal::Nanos;

Result<struct stat> StatPath(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    return Status(e, path + ": " + std::strerror(e));
  }
  return st;
}

// `now` is still the file `opened` was: identity, size and both times. An
// unlink, or a rename over its path, moves the ctime of the file it removes
// (Linux updates ctime with the link count) without touching its bytes: a
// ctime that moved while the link count fell is the same version (what a
// hold keeps reading). A rewrite in place moves the ctime with the link
// count unchanged, even when the writer restores the mtime.
bool SameVersion(const struct stat& now, const struct stat& opened) {
  return now.st_dev == opened.st_dev && now.st_ino == opened.st_ino &&
         now.st_size == opened.st_size && Nanos(now.st_mtim) == Nanos(opened.st_mtim) &&
         (Nanos(now.st_ctim) == Nanos(opened.st_ctim) || now.st_nlink < opened.st_nlink);
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The chunk files a hold keeps open beyond its frame: past this many, chunk
// files are read through the mount-wide descriptor cache as without a hold
// (a container replaced by rename keeps reading them while the cache keeps
// them; once dropped, the path's new file reads as ESTALE). Bounded so that
// a few open files of containers with thousands of chunk files cannot take
// every descriptor of the daemon.
constexpr size_t kMaxHeldChunkFiles = 256;

// What a hold keeps open (ByteSource::HoldVersion): descriptors of this
// version's files, which stay readable when the path is replaced or
// unlinked, or when the descriptor cache closes or replaces its own.
struct Held {
  std::shared_ptr<const File> frame;  // null: the frame was gone at the hold
  std::mutex mutex;                   // leaf lock; guards chunks
  std::unordered_map<int64_t, std::shared_ptr<const File>> chunks;
};

// When a sparse frame's version is opened. A chunk file changed since then
// may belong to a later version than the index this generation read: it
// ends the generation (ESTALE). Changed since the open: a ctime after this
// time, and after the index's own ctime (a chunk file newer than its frame
// index).
// Why the comparison is right: the kernel stamps a change with the coarse
// realtime clock, or (multigrain timestamps, Linux 6.13 on, once the file's
// times were queried) a finer time; neither is ever ahead of the real time
// of the change. So a file last changed before the open has a ctime at or
// below this (fine) time: never taken for a changed one, however quickly a
// reader follows its writer (cp -r of a sparse frame, copying chunks.b2frame
// first, then a read). A change after the open is stamped after it, except
// a coarse stamp within the clock tick (a few ms) after the open: only that
// is missed. A rename updates the ctime of the renamed file (ext4, xfs,
// btrfs, tmpfs): a chunk file renamed into place counts too. One fstat per
// chunk file at its first use; nothing at the open.
int64_t OpenTime() {
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  return Nanos(now);
}

class LocalSource final : public ByteSource {
 public:
  LocalSource(std::string path, bool sparse, Signature signature, struct stat frame_stat,
              int64_t opened_ns, DescriptorCache* descriptors)
      : path_(std::move(path)),
        sparse_(sparse),
        signature_(std::move(signature)),
        frame_stat_(frame_stat),
        opened_ns_(opened_ns),
        descriptors_(descriptors) {}

  const std::string& name() const override { return path_; }
  bool sparse() const override { return sparse_; }
  const Signature& signature() const override { return signature_; }
  bool found_stale() const override { return stale_.load(std::memory_order_relaxed); }
  // Measured on a page-cached frame (2 shared cores): a pread + fstat pair
  // costs ~10 us, copying ~0.45 us per KiB more: reading a gap pays below
  // ~20 KiB.
  source::CostProfile cost() const override {
    CostProfile cost;
    cost.merge_gap = 20 << 10;
    return cost;
  }

  Result<int64_t> PartSize(int64_t part) const override {
    if (part == kFramePart) {
      if (frame_stat_.st_ino == 0) return InvalidData(path_ + " has no chunks.b2frame");
      return static_cast<int64_t>(frame_stat_.st_size);
    }
    B2NDFS_ASSIGN_OR_RETURN(const PartFile f, OpenPart(part));
    return static_cast<int64_t>(f.expected.st_size);
  }

  // Several holds share one Held; the last token released closes what it
  // kept (in whoever releases it). A hold taken when this version's frame is
  // no longer at the path nor in the descriptor cache keeps nothing: reads
  // then answer ESTALE, as without a hold.
  std::shared_ptr<const void> HoldVersion() const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (std::shared_ptr<Held> held = held_.lock()) return held;
    }
    auto fresh = std::make_shared<Held>();
    if (frame_stat_.st_ino != 0) {
      auto open = descriptors_->Open(PartPath(kFramePart), frame_stat_.st_dev, frame_stat_.st_ino);
      if (open.ok() && SameFile(open->st, frame_stat_)) fresh->frame = std::move(open->file);
    }
    std::shared_ptr<Held> held;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held = held_.lock();  // another thread's, taken meanwhile
      if (held == nullptr) held_ = held = fresh;
    }
    return held;  // an unused `fresh` closes its descriptor here, unlocked
  }

  Status Read(int64_t part, int64_t offset, size_t length, uint8_t* out) const override {
    B2NDFS_ASSIGN_OR_RETURN(const PartFile f, OpenPart(part));
    const int64_t size = f.expected.st_size;
    if (offset < 0 || offset > size || static_cast<int64_t>(length) > size - offset) {
      return InvalidData(PartName(part) + ": read of " + std::to_string(length) + " bytes at " +
                         std::to_string(offset) + " passes its end (" + std::to_string(size) +
                         " bytes)");
    }
    B2NDFS_RETURN_IF_ERROR(f.file->ReadExact(offset, out, length).WithContext(PartName(part)));
    // Checked after the read: a writer updates the times before it changes
    // bytes, so bytes read before an unchanged fstat are this version's.
    B2NDFS_ASSIGN_OR_RETURN(const struct stat now, f.file->Stat());
    if (!SameVersion(now, f.expected)) return Stale(part);
    return Status::Ok();
  }

 private:
  struct PartFile {
    std::shared_ptr<const File> file;
    struct stat expected;
  };

  std::string PartPath(int64_t part) const {
    if (part == kFramePart) return sparse_ ? path_ + "/chunks.b2frame" : path_;
    return path_ + "/" + SparseChunkFileName(part);
  }
  std::string PartName(int64_t part) const {
    return part == kFramePart ? PartPath(part) : SparseChunkFileName(part);
  }

  Status Stale(int64_t part) const {
    stale_.store(true, std::memory_order_relaxed);
    descriptors_->Drop(PartPath(part));
    return Status(ESTALE, PartPath(part) + " changed on disk");
  }

  // A descriptor of the part as this generation knows it: the one a hold
  // keeps, else the descriptor cache's, which may be of an older or newer
  // file under the same path: identities are checked here, contents after
  // every read.
  Result<PartFile> OpenPart(int64_t part) const {
    if (part < kFramePart || (part != kFramePart && !sparse_)) {
      return InvalidData("no chunk file " + std::to_string(part) + " in a contiguous frame");
    }
    const std::string path = PartPath(part);
    struct stat expected {};
    bool known = part == kFramePart;
    std::shared_ptr<Held> held;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held = held_.lock();
      if (known) {
        expected = frame_stat_;
      } else if (auto it = chunk_files_.find(part); it != chunk_files_.end()) {
        expected = it->second;
        known = true;
      }
    }
    if (held != nullptr && known) {
      if (part == kFramePart) {
        if (held->frame != nullptr) return PartFile{held->frame, expected};
      } else {
        std::lock_guard<std::mutex> lock(held->mutex);
        if (auto it = held->chunks.find(part); it != held->chunks.end()) {
          return PartFile{it->second, expected};
        }
      }
    }
    std::shared_ptr<const File> file;
    if (!known) {
      // First use of this chunk file: the version on disk now is this
      // generation's (chunks.b2frame, checked on every read, names it) if it
      // has not changed since the open.
      B2NDFS_ASSIGN_OR_RETURN(const struct stat st, StatPath(path));
      B2NDFS_ASSIGN_OR_RETURN(OpenFile open, descriptors_->Open(path, st.st_dev, st.st_ino));
      B2NDFS_ASSIGN_OR_RETURN(const struct stat now, open.file->Stat());
      // Changed since this version was opened (OpenTime()).
      if (Nanos(now.st_ctim) > opened_ns_ && Nanos(now.st_ctim) > Nanos(frame_stat_.st_ctim)) {
        return Stale(part);
      }
      std::lock_guard<std::mutex> lock(mutex_);
      expected = chunk_files_.try_emplace(part, now).first->second;
      if (!SameVersion(now, expected)) return Stale(part);
      file = std::move(open.file);
    } else {
      B2NDFS_ASSIGN_OR_RETURN(OpenFile open,
                              descriptors_->Open(path, expected.st_dev, expected.st_ino));
      if (!SameFile(open.st, expected)) return Stale(part);
      file = std::move(open.file);
    }
    if (held != nullptr && part != kFramePart) {
      std::lock_guard<std::mutex> lock(held->mutex);
      if (held->chunks.size() < kMaxHeldChunkFiles) held->chunks.try_emplace(part, file);
    }
    return PartFile{std::move(file), expected};
  }

  const std::string path_;
  const bool sparse_;
  const Signature signature_;
  const struct stat frame_stat_;
  const int64_t opened_ns_;  // OpenTime() at the open
  DescriptorCache* descriptors_;
  mutable std::atomic<bool> stale_{false};
  // A leaf lock (a Held's mutex is never taken under it); guards
  // chunk_files_ and held_.
  mutable std::mutex mutex_;
  mutable std::unordered_map<int64_t, struct stat> chunk_files_;
  mutable std::weak_ptr<Held> held_;  // what the live holds share, if any
};

}  // namespace

Result<Signature> ProbeLocal(const std::string& path) {
  B2NDFS_ASSIGN_OR_RETURN(const struct stat st, StatPath(path));
  if (!S_ISDIR(st.st_mode)) return FileSignature(st);
  // A directory without its index is a (broken) version too: creating the
  // index changes the directory's mtime.
  // Only a missing index is one; any other failure to look (EACCES, EIO,
  // ENOMEM, ELOOP) is an error of this probe, not a changed signature.
  struct stat frame {};
  const std::string frame_path = path + "/chunks.b2frame";
  if (::stat(frame_path.c_str(), &frame) != 0) {
    const int e = errno;
    if (e != ENOENT) return Status(e, frame_path + ": " + std::strerror(e));
    frame = {};
  }
  Signature s = FileSignature(frame);
  s.dir_inode = st.st_ino;
  s.dir_mtime_ns = Nanos(st.st_mtim);
  return s;
}

Result<std::shared_ptr<const ByteSource>> OpenLocal(const std::string& path,
                                                    DescriptorCache* descriptors) {
  const int64_t opened_ns = OpenTime();  // before anything of the version is seen
  B2NDFS_ASSIGN_OR_RETURN(const struct stat st, StatPath(path));
  const bool sparse = S_ISDIR(st.st_mode);
  const std::string frame_path = sparse ? path + "/chunks.b2frame" : path;
  if (sparse && ::access(frame_path.c_str(), F_OK) != 0 && errno == ENOENT) {
    // Served as a container that says what is missing.
    struct stat none {};
    Signature signature = FileSignature(none);
    signature.dir_inode = st.st_ino;
    signature.dir_mtime_ns = Nanos(st.st_mtim);
    return std::shared_ptr<const ByteSource>(std::make_shared<LocalSource>(
        path, sparse, std::move(signature), none, opened_ns, descriptors));
  }
  B2NDFS_ASSIGN_OR_RETURN(const struct stat frame_st, StatPath(frame_path));
  if (!S_ISREG(frame_st.st_mode)) return InvalidData(frame_path + " is not a regular file");
  // The descriptor decides the version (a path replaced between the stat and
  // the open must not mix two files), and its fstat is fresh: the cache may
  // have opened it before an in-place rewrite.
  B2NDFS_ASSIGN_OR_RETURN(OpenFile frame,
                          descriptors->Open(frame_path, frame_st.st_dev, frame_st.st_ino));
  B2NDFS_ASSIGN_OR_RETURN(const struct stat now, frame.file->Stat());
  Signature signature = FileSignature(now);
  if (sparse) {
    signature.dir_inode = st.st_ino;
    signature.dir_mtime_ns = Nanos(st.st_mtim);
  }
  return std::shared_ptr<const ByteSource>(std::make_shared<LocalSource>(
      path, sparse, std::move(signature), now, opened_ns, descriptors));
}

}  // namespace b2ndfs::source
