#include "read_ahead.h"

#include <algorithm>

#include "b2ndfs/store/container.h"
#include "b2ndfs/views/view.h"

namespace b2ndfs::vfs {
namespace {

// A remote file's read-ahead window is this many times max_readahead.
constexpr int64_t kRemoteReadaheadFactor = 4;
// Read-ahead goes on into at most this many files (the one read included).
constexpr int kReadAheadMaxFiles = 16;
// Files pushed into the kernel's page cache ahead of their reader are at
// most this big (each is rendered whole into one buffer).
constexpr int64_t kPushMaxBytes = 16 << 20;
// How many files ahead of a reader are pushed: two, so that the FUSE layer
// renders and stores one while its reader reads the file before it, and is
// still a file ahead when rendering takes longer than reading.
constexpr int kPushAheadFiles = 2;
// Pushed files remembered until their open (a reader goes through them in
// order: a few are enough; more are forgotten, oldest first).
constexpr size_t kPushedRemembered = 256;

}  // namespace

void ReadAheadPolicy::SetPushed(Ino ino, bool pushed) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pushed) {
    pushed_.erase(ino);
    return;
  }
  if (!pushed_.insert(ino).second) return;
  pushed_order_.push_back(ino);
  while (pushed_order_.size() > kPushedRemembered) {
    pushed_.erase(pushed_order_.front());
    pushed_order_.pop_front();
  }
}

bool ReadAheadPolicy::TakePushed(Ino ino) {
  std::lock_guard<std::mutex> lock(mutex_);
  // (Its place in pushed_order_ goes when it comes first.)
  return pushed_.erase(ino) != 0;
}

void ReadAheadPolicy::OnOpen(const ViewHandle& handle, bool remote) {
  if (!TakePushed(handle.ino)) return;
  // Files up to kPushAheadFiles on were pushed before: the one after them.
  const store::Container& container = *handle.container;
  std::shared_ptr<const views::Node> file = handle.view;
  for (int i = 0; i < kPushAheadFiles && file != nullptr; ++i) file = file->Next(container);
  if (file == nullptr) return;
  file->ReadAhead(container, 0, file->Size(container));
  Push(handle, file, remote);
}

// A reader whose next request starts near where the previous one ended is
// sequential: decompress a growing window of blocks ahead of it.
void ReadAheadPolicy::OnRead(const ViewHandle& handle, int64_t offset, size_t length, bool remote) {
  if (handle.pattern == nullptr) return;
  const int64_t n = static_cast<int64_t>(length);
  const int64_t end = offset + n;
  // Remote: a longer window, so that its batches (below) make requests of a
  // few MiB, which a server answers at a fraction of the per-request cost.
  int64_t max_window = options_.max_readahead * (remote ? kRemoteReadaheadFactor : 1);
  if (options_.cache_bytes > 0) max_window = std::min(max_window, options_.cache_bytes / 8);
  if (max_window <= 0) return;
  int64_t from = 0, to = 0;
  {
    ReadPattern& p = *handle.pattern;
    std::lock_guard<std::mutex> lock(p.mutex);
    const int64_t slack = 2 * std::max<int64_t>(n, 128 << 10);
    // A reader that starts at the file's start is taken as sequential from
    // its first read (most readers of a file start there and go on): a
    // remote reader's next blocks then go out in the same round trip as this
    // read's, and a file read in one request (a slice of slices/0/ that an
    // image-sequence tool opens, reads and closes) still reads ahead into
    // the next file.
    const bool from_start = offset == 0;
    if (from_start) {
      // A new pass from the start (the file reopened and read again, its
      // pages dropped): what an earlier pass asked for is no guide, its
      // blocks may be gone, and its push must be made again.
      p.next_offset = -1;
      p.window = 0;
      p.prefetched_until = 0;
    }
    const bool sequential = from_start || (p.next_offset >= 0 && offset >= p.next_offset - slack &&
                                           offset <= p.next_offset + slack);
    if (sequential) {
      p.window = std::min(max_window, std::max(p.window * 2, 2 * n));
      from = std::max(end, p.prefetched_until);
      to = end + p.window;
      // A remote reader's read-ahead goes out in batches of half the window:
      // the blocks of a batch come in few large requests, where topping the
      // window up after every read would ask for a little at a time.
      if (remote && to - from < p.window / 2) to = from;
      if (to > from) p.prefetched_until = to;
      p.next_offset = std::max(p.next_offset, end);
    } else {
      p.window = 0;
      p.prefetched_until = 0;
      p.next_offset = end;
    }
  }
  if (to <= from) return;
  // What lies past the end is in the files a reader in name order reads
  // next (slices/0/), where there are such: [from, to) runs on through them.
  const store::Container& container = *handle.container;
  int64_t begin = 0;  // where a file starts in that run
  int files = 0;
  for (auto file = handle.view; file != nullptr && begin < to && files < kReadAheadMaxFiles;
       file = file->Next(container), ++files) {
    const int64_t size = file->Size(container);
    const int64_t a = std::max(from, begin), b = std::min(to, begin + size);
    if (b > a) {
      file->ReadAhead(container, a - begin, b - a);
      // The window has just reached one of the next files: its reader will
      // open it and read it whole, so its pages can be waiting in the kernel.
      if (files >= 1 && files <= kPushAheadFiles && a == begin) Push(handle, file, remote);
    }
    begin += size;
  }
}

void ReadAheadPolicy::Push(const ViewHandle& handle, const std::shared_ptr<const views::Node>& file,
                           bool remote) {
  if (!push_ || remote || handle.ino_base == 0) return;
  if (file->ordinal() == views::kNoOrdinal) return;
  const int64_t size = file->Size(*handle.container);
  if (size <= 0 || size > kPushMaxBytes) return;
  const Ino ino = handle.ino_base + file->ordinal();
  PagePush push;
  push.ino = ino;
  push.size = size;
  push.render = [container = handle.container, file, size](uint8_t* out) -> Status {
    // Only from cached blocks: decoding here would compete with the
    // reader's own requests and read-ahead (a cold reader is not helped).
    if (!file->Cached(*container)) return Status(EAGAIN, file->name() + " is not decompressed yet");
    B2NDFS_ASSIGN_OR_RETURN(const size_t n,
                            file->Read(*container, 0, static_cast<size_t>(size), out));
    if (static_cast<int64_t>(n) != size) return Status(EIO, "short read of " + file->name());
    return Status::Ok();
  };
  // The kernel refuses pages of an inode it does not hold (not looked up
  // yet): then the file's open has no push to carry on.
  push.done = [this, size, ino](bool stored) {
    if (!stored) {
      SetPushed(ino, false);
      return;
    }
    pushed_files_.fetch_add(1, std::memory_order_relaxed);
    pushed_bytes_.fetch_add(static_cast<uint64_t>(size), std::memory_order_relaxed);
  };
  // Marked when queued, not when stored: a reader that opens the file while
  // its pages are still on their way carries the push on all the same (its
  // reads of pages not yet there reach the daemon as usual).
  SetPushed(ino, true);
  if (!push_(std::move(push))) SetPushed(ino, false);
}

}  // namespace b2ndfs::vfs
