// The transfer loop of an HttpClient: one thread drives every request of the
// client on one libcurl multi handle, so that a batch of range requests is
// in flight at once on a bounded pool of kept-alive connections (libcurl
// queues what the bound leaves waiting), and its callers only wait.
// Each request is run as HttpClient::Perform ran it on a thread of its own:
// attempts within its deadline, transient failures retried after a backoff
// with full jitter (a timer here, not a sleeping thread), the server marked
// as not answering when a request runs out of time, every failure counted and
// (rate-limited) logged. The checks of an answer are http_attempt.cc's
// (EvaluateAttempt).
// The thread starts on first use and is stopped before a fork (see
// RegisterForkHandlers).
// Lock order: the loop registry's mutex, then a Loop's lifecycle_mutex_, then
// its mutex_; a caller's Batch::mutex is a leaf lock, never held with those.
#include <curl/curl.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "b2ndfs/util/log.h"
#include "b2ndfs/util/text.h"
#include "http_request.h"

namespace b2ndfs::remote {
namespace {

using SteadyClock = std::chrono::steady_clock;

using ::b2ndfs::text::Now;

// The requests one caller waits for, and those that ended and are not yet
// reported to it.
struct Batch {
  std::mutex mutex;  // leaf lock; guards ended, parts, remaining
  std::condition_variable changed;
  std::vector<std::pair<size_t, Status>> ended;
  // Ranges of multi-range requests still running whose bytes are in:
  // (request, target).
  std::vector<std::pair<size_t, size_t>> parts;
  size_t remaining = 0;
};

// One request on its way through the loop. Touched only by the loop's
// thread once submitted.
struct Transfer {
  HttpClient::Request* request = nullptr;
  Batch* batch = nullptr;
  size_t index = 0;
  double deadline = 0;
  int attempt = 0;
  double not_before = 0;  // of its next attempt (a retry's backoff)
  CURL* easy = nullptr;   // while an attempt runs
  curl_slist* headers = nullptr;
  SteadyClock::time_point started;
  Status last;
  ErrorKind kind = ErrorKind::kTimeout;
};

// Idle easy handles kept for reuse beyond the connection bound.
constexpr size_t kSpareHandles = 16;

}  // namespace

class HttpClient::Loop {
 public:
  explicit Loop(HttpClient* client) : client_(client) {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    Registry().push_back(this);
  }

  ~Loop() {
    {
      std::lock_guard<std::mutex> lock(RegistryMutex());
      auto& loops = Registry();
      loops.erase(std::find(loops.begin(), loops.end(), this));
    }
    Stop();
  }

  // Hands the transfers to the loop's thread, started on first use; false
  // if libcurl could not start (nothing was handed over).
  bool Submit(const std::vector<Transfer*>& transfers) {
    std::lock_guard<std::mutex> lifecycle(lifecycle_mutex_);
    CURLM* multi;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (multi_ == nullptr) {
        multi_ = curl_multi_init();
        if (multi_ == nullptr) return false;
        const long connections =
            static_cast<long>(std::max<size_t>(client_->options_.connections, 1));
        curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, connections);
        curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, connections);
        curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, connections);
        stopping_ = false;
        thread_ = std::thread([this] { Main(); });
      }
      incoming_.insert(incoming_.end(), transfers.begin(), transfers.end());
      multi = multi_;
    }
    curl_multi_wakeup(multi);
    return true;
  }

  // Ends the thread (requests still queued or running end with EIO) and
  // closes the connections; the next Submit starts afresh.
  void Stop() {
    std::lock_guard<std::mutex> lifecycle(lifecycle_mutex_);
    CURLM* multi;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (multi_ == nullptr) return;
      stopping_ = true;
      multi = multi_;
    }
    curl_multi_wakeup(multi);
    thread_.join();
    for (CURL* h : idle_) curl_easy_cleanup(h);
    idle_.clear();
    curl_multi_cleanup(multi);
    std::lock_guard<std::mutex> lock(mutex_);
    multi_ = nullptr;
  }

  // Threads do not survive fork(), and the daemon forks (fuse_daemonize)
  // after the source was checked with requests of this client: every loop
  // is stopped before a fork and starts again on its next use, in whichever
  // process that is. (No request may be in flight across a fork: it would
  // end with EIO.)
  static void RegisterForkHandlers() {
    static std::once_flag once;
    std::call_once(once, [] {
      ::pthread_atfork(
          [] {
            RegistryMutex().lock();
            for (Loop* loop : Registry()) loop->Stop();
          },
          [] { RegistryMutex().unlock(); }, [] { RegistryMutex().unlock(); });
    });
  }

 private:
  void Main() {
    std::vector<Transfer*> waiting;  // not started yet, or backing off
    std::vector<Transfer*> running;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        waiting.insert(waiting.end(), incoming_.begin(), incoming_.end());
        incoming_.clear();
        if (stopping_) break;
      }
      double now = Now();
      double wake = now + 1.0;
      for (size_t i = 0; i < waiting.size();) {
        Transfer* t = waiting[i];
        if (t->not_before > now) {
          wake = std::min(wake, t->not_before);
          ++i;
          continue;
        }
        waiting[i] = waiting.back();
        waiting.pop_back();
        if (Start(t)) running.push_back(t);
      }
      if (running.size() > client_->peak_in_flight_.load(std::memory_order_relaxed)) {
        client_->peak_in_flight_.store(running.size(), std::memory_order_relaxed);
      }
      int still_running = 0;
      curl_multi_perform(multi_, &still_running);
      for (Transfer* t : running) PostCompleted(t);
      int left = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
        if (msg->msg != CURLMSG_DONE) continue;
        Transfer* t = nullptr;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
        if (t == nullptr) continue;
        const CURLcode code = msg->data.result;
        running.erase(std::find(running.begin(), running.end(), t));
        Finished(t, code, &waiting);
      }
      // libcurl ends an attempt at its own timeout; this only guards
      // against an attempt that waited for a connection beyond it.
      now = Now();
      for (size_t i = 0; i < running.size();) {
        Transfer* t = running[i];
        if (now < t->deadline + 1.0) {
          ++i;
          continue;
        }
        running[i] = running.back();
        running.pop_back();
        Detach(t);
        t->last = Status(EIO, t->request->What() + ": no answer in time");
        t->kind = ErrorKind::kTimeout;
        End(t);
      }
      const int timeout_ms =
          waiting.empty() ? 1000 : std::clamp(static_cast<int>((wake - Now()) * 1000) + 1, 0, 1000);
      curl_multi_poll(multi_, nullptr, 0, timeout_ms, nullptr);
    }
    for (Transfer* t : running) {
      Detach(t);
      waiting.push_back(t);
    }
    for (Transfer* t : waiting) {
      t->last = Status(EIO, t->request->What() + ": the client is shutting down");
      t->kind = ErrorKind::kConnection;
      End(t);
    }
  }

  // Starts an attempt; false if the request ended instead.
  bool Start(Transfer* t) {
    const double left = t->deadline - Now();
    if (left <= 0) {
      End(t);
      return false;
    }
    CURL* easy = nullptr;
    if (!idle_.empty()) {
      easy = idle_.back();
      idle_.pop_back();
    } else {
      easy = curl_easy_init();
    }
    if (easy == nullptr) {
      t->last = Status(ENOMEM, t->request->What() + ": no memory for a request");
      t->kind = ErrorKind::kConnection;
      End(t);
      return false;
    }
    ConfigureAttempt(easy, *t->request, client_->options_, left, &t->headers);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, t);
    t->easy = easy;
    t->started = SteadyClock::now();
    if (curl_multi_add_handle(multi_, easy) != CURLM_OK) {
      Detach(t);
      t->last = Status(EIO, t->request->What() + ": libcurl refused the request");
      t->kind = ErrorKind::kConnection;
      End(t);
      return false;
    }
    return true;
  }

  // Takes the easy handle back from an attempt (its connection stays in the
  // multi handle's pool).
  void Detach(Transfer* t) {
    if (t->easy == nullptr) return;
    curl_multi_remove_handle(multi_, t->easy);
    curl_slist_free_all(t->headers);
    t->headers = nullptr;
    if (idle_.size() < std::max<size_t>(client_->options_.connections, kSpareHandles)) {
      idle_.push_back(t->easy);
    } else {
      curl_easy_cleanup(t->easy);
    }
    t->easy = nullptr;
  }

  // Hands the caller the ranges of `t` whose bytes came in since the last
  // call (a multi-range answer's parts, as each ends).
  void PostCompleted(Transfer* t) {
    std::vector<size_t>& completed = t->request->completed;
    if (completed.empty()) return;
    Batch* batch = t->batch;
    {
      std::lock_guard<std::mutex> lock(batch->mutex);
      for (size_t target : completed) batch->parts.emplace_back(t->index, target);
      batch->changed.notify_all();
    }
    completed.clear();
  }

  void Finished(Transfer* t, CURLcode code, std::vector<Transfer*>* waiting) {
    client_->latency_.Record(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - t->started)
            .count()));
    client_->requests_++;
    PostCompleted(t);
    bool transient = false;
    t->last = EvaluateAttempt(t->easy, code, *t->request, &transient, &t->kind);
    // Every range came whole before the answer went wrong (a connection
    // reset before the closing boundary): nothing is left to ask for.
    if (!t->last.ok() && t->request->AllDelivered()) t->last = Status::Ok();
    client_->bytes_ += t->request->received;
    Detach(t);
    if (t->last.ok() || !transient || t->attempt >= client_->options_.retries) {
      End(t);
      return;
    }
    // Full jitter: a random wait up to 100 ms * 2^attempt (at most 2 s), so
    // that many readers of a struggling server do not retry in step.
    const double cap = std::min(2.0, 0.1 * static_cast<double>(1 << std::min(t->attempt, 10)));
    double wait = std::uniform_real_distribution<double>(0, cap)(random_);
    // A server that says when to come back (429 or 503 with Retry-After)
    // is asked again no sooner; if that is past the deadline, not at all.
    if (t->request->retry_after > 0) wait = std::max(wait, t->request->retry_after);
    if (Now() + wait + 0.05 >= t->deadline) {
      End(t);
      return;
    }
    t->attempt++;
    t->not_before = Now() + wait;
    client_->retries_++;
    waiting->push_back(t);
  }

  // Reports the request's outcome to its caller; `t` is not touched after.
  void End(Transfer* t) {
    PostCompleted(t);
    Status status = t->last;
    if (status.ok()) {
      if (client_->down_until_.load(std::memory_order_relaxed) != 0) client_->down_until_.store(0);
    } else if (!t->request->multi_refused) {
      // (A refused multi-range request is asked again range by range:
      // not a failure, and logged once by GetRanges.)
      client_->Failed(status, t->kind, t->deadline);
    }
    Batch* batch = t->batch;
    std::lock_guard<std::mutex> lock(batch->mutex);
    batch->ended.emplace_back(t->index, std::move(status));
    batch->remaining--;
    // Notified under the lock: the caller may free the batch as soon as it
    // can take the lock again.
    batch->changed.notify_all();
  }

  // Every live loop, for the fork handlers. The registry's mutex comes
  // before any loop's mutex_.
  static std::mutex& RegistryMutex() {
    static std::mutex mutex;
    return mutex;
  }
  static std::vector<Loop*>& Registry() {
    static std::vector<Loop*> loops;
    return loops;
  }

  HttpClient* const client_;
  // Held by Submit and through Stop (the join included): nothing is handed
  // to a loop that is stopping. Before mutex_.
  std::mutex lifecycle_mutex_;
  std::mutex mutex_;        // guards multi_ (set by Submit and Stop), incoming_, stopping_
  CURLM* multi_ = nullptr;  // null while stopped; used by the thread
  std::thread thread_;
  std::vector<Transfer*> incoming_;
  bool stopping_ = false;
  // The loop thread's own (and Stop's, after the join).
  std::vector<CURL*> idle_;
  std::mt19937_64 random_{std::random_device{}()};
};

// Here, where the loop is a complete type.
HttpClient::HttpClient(HttpOptions options) : options_(std::move(options)) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  Loop::RegisterForkHandlers();
  loop_ = std::make_unique<Loop>(this);
}

HttpClient::~HttpClient() { loop_.reset(); }

void HttpClient::Failed(Status& status, ErrorKind& kind, double deadline) {
  if (Now() >= deadline - 0.001) {
    status = Status(status.error_number(), status.message() + " (gave up after " +
                                               std::to_string(options_.timeout) + " s)");
    if (kind != ErrorKind::kNotFound && kind != ErrorKind::kDenied) kind = ErrorKind::kTimeout;
    if (status.error_number() == EIO) {
      down_until_.store(Now() + std::min(options_.timeout, kDownSeconds),
                        std::memory_order_relaxed);
    }
  }
  // Names that are not there are ordinary answers; other failures are
  // logged, at most a few per second so that a dead server cannot flood
  // the log.
  CountError(kind);
  // Not logged either: a server that ignores Range (EOPNOTSUPP), which the
  // mount says once when it starts and each container's meta.json says.
  if (status.error_number() != ENOENT && status.error_number() != EOPNOTSUPP && LogAllowed()) {
    Log(LogLevel::kWarning, status.message());
  }
}

void HttpClient::Run(std::span<Request* const> requests, const RangeDone& done,
                     const PartDone& part_done) {
  if (requests.empty()) return;
  const double start = Now();
  // A server that just let a request run out of time is not asked again
  // for a moment: a reader's retried pages and the read-ahead queued behind
  // it would otherwise each wait the whole timeout, one after the other.
  // Ends every request at once with `why` (nothing was sent).
  auto fail_all = [&](auto why) {
    std::exception_ptr thrown;
    for (size_t i = 0; i < requests.size(); ++i) {
      try {
        done(i, why(*requests[i]));
      } catch (...) {
        if (!thrown) thrown = std::current_exception();
      }
    }
    if (thrown) std::rethrow_exception(thrown);
  };
  if (const double down = down_until_.load(std::memory_order_relaxed); start < down) {
    fail_all([&](const Request& r) {
      CountError(ErrorKind::kDown);
      return Status(EIO, r.What() + ": the server did not answer within " +
                             std::to_string(options_.timeout) + " s a moment ago (asked again in " +
                             std::to_string(down - start) + " s)");
    });
    return;
  }
  Batch batch;
  batch.remaining = requests.size();
  std::vector<Transfer> transfers(requests.size());
  std::vector<Transfer*> submit;
  submit.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    Transfer& t = transfers[i];
    t.request = requests[i];
    t.batch = &batch;
    t.index = i;
    t.deadline = start + options_.timeout;
    t.last = Status(EIO, requests[i]->What() + ": timed out waiting for a connection");
    submit.push_back(&t);
  }
  if (!loop_->Submit(submit)) {
    fail_all([&](const Request& r) {
      CountError(ErrorKind::kConnection);
      return Status(ENOMEM, r.What() + ": libcurl could not start");
    });
    return;
  }
  // The transfers live on this stack frame: wait for every one, whatever
  // `done` does.
  std::exception_ptr thrown;
  std::vector<std::pair<size_t, Status>> ended;
  std::vector<std::pair<size_t, size_t>> parts;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(batch.mutex);
      batch.changed.wait(lock, [&] {
        return !batch.ended.empty() || !batch.parts.empty() || batch.remaining == 0;
      });
      ended.swap(batch.ended);
      parts.swap(batch.parts);
      if (ended.empty() && parts.empty() && batch.remaining == 0) break;
    }
    // A request's parts were posted before its end: reported in that order.
    for (auto& [index, target] : parts) {
      if (thrown || !part_done) continue;
      try {
        part_done(index, target);
      } catch (...) {
        thrown = std::current_exception();
      }
    }
    parts.clear();
    for (auto& [index, status] : ended) {
      if (thrown) continue;
      try {
        done(index, status);
      } catch (...) {
        thrown = std::current_exception();
      }
    }
    ended.clear();
  }
  if (thrown) std::rethrow_exception(thrown);
}

}  // namespace b2ndfs::remote
