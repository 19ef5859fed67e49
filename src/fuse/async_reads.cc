#include "async_reads.h"

#include <algorithm>
#include <cerrno>
#include <exception>
#include <string>
#include <utility>

#include "b2ndfs/util/log.h"

namespace b2ndfs::fuse {

AsyncReads::AsyncReads(Options options, Serve serve) : options_(options), serve_(std::move(serve)) {
  const int workers = std::max(1, options_.workers);
  threads_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { WorkerLoop(); });
}

AsyncReads::~AsyncReads() { Shutdown(); }

bool AsyncReads::Defer(Request& req, uint64_t ino, size_t size, off_t offset,
                       vfs::FileHandle* handle) noexcept {
  if (handle == nullptr || !handle->remote) return false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || waiting_.size() >= options_.max_queued) {
      ++counters_.inline_full;
      return false;
    }
  }
  std::unique_ptr<Request> detached;
  try {
    detached = req.Detach();
  } catch (...) {
    return false;  // out of memory: served here
  }
  const void* id = detached->id();
  // Registered before the job is visible to a worker: once a worker may have
  // answered it, the request may be freed. An interrupt that already came
  // calls Interrupted right here, with libfuse's locks held, so mutex_ is
  // not held now (it finds nothing queued; the check below answers it).
  detached->OnInterrupt(this);
  if (detached->interrupted()) {
    detached->ReplyErr(EINTR);
    return true;
  }
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      ++counters_.inline_full;
      return false;
    }
    FileQueue& queue = files_[ino];
    queue.waiting.push_back(Job{std::move(detached), ino, size, offset, handle});
    waiting_.emplace(id, ino);
    OfferTurn(ino, queue);
  } catch (...) {
    // Out of memory while queueing: serve it here. A job pushed before the
    // failure is taken back so that the request is answered exactly once.
    std::lock_guard<std::mutex> lock(mutex_);
    TakeWaiting(ino, id);
    waiting_.erase(id);
    return false;
  }
  wake_.notify_one();
  return true;
}

std::unique_ptr<Request> AsyncReads::TakeWaiting(uint64_t ino, const void* id) {
  std::unique_ptr<Request> taken;
  auto file = files_.find(ino);
  if (file == files_.end()) return taken;
  auto& jobs = file->second.waiting;
  auto job =
      std::find_if(jobs.begin(), jobs.end(), [id](const Job& j) { return j.req->id() == id; });
  if (job != jobs.end()) {
    taken = std::move(job->req);
    jobs.erase(job);
  }
  // A file left in turns_ with nothing waiting is skipped by the workers.
  if (jobs.empty() && file->second.running == 0 && !file->second.in_turn) files_.erase(file);
  return taken;
}

void AsyncReads::OfferTurn(uint64_t ino, FileQueue& queue) {
  if (!queue.in_turn && !queue.waiting.empty() && queue.running < options_.per_file) {
    turns_.push_back(ino);
    queue.in_turn = true;
  }
}

// Called by libfuse with the request's lock held, while the request is alive
// (it holds a reference), so `id` can be compared and the request answered.
// Only a read still waiting is answered: a running one belongs to its worker.
void AsyncReads::Interrupted(const void* id) {
  std::unique_ptr<Request> req;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = waiting_.find(id);
    if (found == waiting_.end()) return;
    const uint64_t ino = found->second;
    waiting_.erase(found);
    req = TakeWaiting(ino, id);
    if (req == nullptr) return;
    ++counters_.interrupted;
  }
  req->ReplyErr(EINTR);
}

void AsyncReads::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !turns_.empty(); });
    if (turns_.empty()) return;  // stopping, and nothing is waiting
    const uint64_t ino = turns_.front();
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
    waiting_.erase(job.req->id());
    ++queue.running;
    // Its next read goes to the back of the line: other files come first.
    OfferTurn(ino, queue);
    if (queue.in_turn) wake_.notify_one();
    ++counters_.deferred;
    lock.unlock();
    if (job.req->interrupted()) {
      job.req->ReplyErr(EINTR);
    } else {
      // It replies exactly once, whatever happens (the operations'
      // trampoline).
      serve_(*job.req, *job.handle, job.size, job.offset);
    }
    job.req.reset();
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
  std::vector<std::unique_ptr<Request>> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    for (auto& [ino, queue] : files_) {
      for (Job& job : queue.waiting) failed.push_back(std::move(job.req));
      queue.waiting.clear();
    }
    waiting_.clear();
    turns_.clear();
    counters_.failed += failed.size();
  }
  wake_.notify_all();
  // The kernel's readers get an error rather than waiting forever; after an
  // unmount the replies fail quietly (nobody waits any more).
  for (auto& req : failed) req->ReplyErr(EIO);
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
