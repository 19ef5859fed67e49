#include "async_reads.h"

#include <algorithm>
#include <cerrno>
#include <exception>
#include <string>
#include <utility>

#include "b2ndfs/util/log.h"
#include "b2ndfs/vfs/filesystem.h"

namespace b2ndfs::fuse {
namespace {

// Set on the executor's own threads: the op they call comes back to Defer().
thread_local bool on_worker = false;

}  // namespace

AsyncReads::AsyncReads(Options options) : options_(options) {
  const int workers = std::max(1, options_.workers);
  threads_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { WorkerLoop(); });
}

AsyncReads::~AsyncReads() { Shutdown(); }

bool AsyncReads::Defer(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
                       const struct fuse_file_info* fi, ReadOp op) noexcept {
  if (on_worker || fi == nullptr) return false;
  const auto* handle = reinterpret_cast<const vfs::FileHandle*>(fi->fh);
  if (handle == nullptr || !handle->remote) return false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || waiting_.size() >= options_.max_queued) {
      ++counters_.inline_full;
      return false;
    }
  }
  // Registered before the job is visible to a worker: once a worker may have
  // answered it, `req` may be freed. An interrupt that already came calls
  // OnInterrupt right here, with libfuse's locks held, so mutex_ is not held
  // now (it finds nothing queued; the check below answers it).
  fuse_req_interrupt_func(req, &AsyncReads::OnInterrupt, this);
  if (fuse_req_interrupted(req)) {
    fuse_reply_err(req, EINTR);
    return true;
  }
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      ++counters_.inline_full;
      return false;
    }
    FileQueue& queue = files_[ino];
    queue.waiting.push_back(Job{req, ino, size, offset, *fi, op});
    waiting_.emplace(req, ino);
    OfferTurn(ino, queue);
  } catch (...) {
    // Out of memory while queueing: serve it here. A job pushed before the
    // failure is taken back so that the request is answered exactly once.
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = files_.find(ino);
    if (it != files_.end()) {
      auto& jobs = it->second.waiting;
      jobs.erase(
          std::remove_if(jobs.begin(), jobs.end(), [req](const Job& j) { return j.req == req; }),
          jobs.end());
      if (jobs.empty() && it->second.running == 0 && !it->second.in_turn) files_.erase(it);
    }
    waiting_.erase(req);
    return false;
  }
  wake_.notify_one();
  return true;
}

void AsyncReads::OfferTurn(fuse_ino_t ino, FileQueue& queue) {
  if (!queue.in_turn && !queue.waiting.empty() && queue.running < options_.per_file) {
    turns_.push_back(ino);
    queue.in_turn = true;
  }
}

void AsyncReads::OnInterrupt(fuse_req_t req, void* self) {
  static_cast<AsyncReads*>(self)->Interrupt(req);
}

// Called by libfuse with the request's lock held, while the request is alive
// (it holds a reference), so `req` can be compared and answered. Only a read
// still waiting is answered: a running one belongs to its worker.
void AsyncReads::Interrupt(fuse_req_t req) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = waiting_.find(req);
    if (found == waiting_.end()) return;
    const fuse_ino_t ino = found->second;
    waiting_.erase(found);
    auto file = files_.find(ino);
    if (file != files_.end()) {
      auto& jobs = file->second.waiting;
      jobs.erase(
          std::remove_if(jobs.begin(), jobs.end(), [req](const Job& j) { return j.req == req; }),
          jobs.end());
      // A file left in turns_ with nothing waiting is skipped by the workers.
      if (jobs.empty() && file->second.running == 0 && !file->second.in_turn) files_.erase(file);
    }
    ++counters_.interrupted;
  }
  fuse_reply_err(req, EINTR);
}

void AsyncReads::WorkerLoop() {
  on_worker = true;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !turns_.empty(); });
    if (turns_.empty()) return;  // stopping, and nothing is waiting
    const fuse_ino_t ino = turns_.front();
    turns_.pop_front();
    auto file = files_.find(ino);
    if (file == files_.end()) continue;
    FileQueue& queue = file->second;
    queue.in_turn = false;
    if (queue.waiting.empty()) {  // emptied by interrupts
      if (queue.running == 0) files_.erase(file);
      continue;
    }
    Job job = std::move(queue.waiting.front());
    queue.waiting.pop_front();
    waiting_.erase(job.req);
    ++queue.running;
    // Its next read goes to the back of the line: other files come first.
    OfferTurn(ino, queue);
    if (queue.in_turn) wake_.notify_one();
    ++counters_.deferred;
    lock.unlock();
    if (fuse_req_interrupted(job.req)) {
      fuse_reply_err(job.req, EINTR);
    } else {
      // The op is the session's read: it replies exactly once, whatever
      // happens (its own trampoline).
      job.op(job.req, job.ino, job.size, job.offset, &job.fi);
    }
    lock.lock();
    file = files_.find(ino);
    if (file == files_.end()) continue;  // cannot happen: running > 0 keeps it
    --file->second.running;
    OfferTurn(ino, file->second);
    if (file->second.in_turn) {
      wake_.notify_one();
    } else if (file->second.waiting.empty() && file->second.running == 0) {
      files_.erase(file);
    }
  }
}

void AsyncReads::Shutdown() {
  std::vector<fuse_req_t> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    for (auto& [ino, queue] : files_) {
      for (const Job& job : queue.waiting) failed.push_back(job.req);
      queue.waiting.clear();
    }
    waiting_.clear();
    turns_.clear();
    counters_.failed += failed.size();
  }
  wake_.notify_all();
  // The kernel's readers get an error rather than waiting forever; after an
  // unmount the replies fail quietly (nobody waits any more).
  for (fuse_req_t req : failed) fuse_reply_err(req, EIO);
  // Running reads finish first: they hold handles the session frees next.
  for (auto& thread : threads_) thread.join();
  threads_.clear();
  const Counters c = counters();
  Log(LogLevel::kDebug, "remote reads: " + std::to_string(c.deferred) +
                            " off the request threads, " + std::to_string(c.interrupted) +
                            " interrupted, " + std::to_string(c.failed) + " failed at shutdown, " +
                            std::to_string(c.inline_full) + " inline");
}

AsyncReads::Counters AsyncReads::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

}  // namespace b2ndfs::fuse
