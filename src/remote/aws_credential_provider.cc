// CredentialProvider (renewal of temporary keys) and the small libcurl
// exchange the credentials services are asked with (see aws_credentials.h).
#include "b2ndfs/remote/aws_credential_provider.h"

#include <curl/curl.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "b2ndfs/remote/aws_credentials.h"
#include "b2ndfs/remote/http_client.h"
#include "b2ndfs/util/log.h"

namespace b2ndfs::remote {
namespace {

// Every provider with a thread, for the fork handler. Before any
// provider's mutexes.
std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}
std::vector<CredentialProvider*>& Registry() {
  static std::vector<CredentialProvider*> providers;
  return providers;
}

size_t Collect(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  const size_t n = size * count;
  if (body->size() + n > kMaxCredentialAnswer) return 0;  // too large: the transfer fails
  body->append(data, n);
  return n;
}

Result<AwsHttpAnswer> CurlSend(const AwsHttpRequest& request) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Status(ENOMEM, "curl_easy_init failed");
  AwsHttpAnswer answer;
  struct curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  // Without this libcurl would add "Expect: 100-continue" to a large POST.
  headers = curl_slist_append(headers, "Expect:");
  const long timeout_ms = std::max(100L, static_cast<long>(request.timeout * 1000));
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  // The metadata and container endpoints are never behind a proxy (STS may be).
  curl_easy_setopt(curl, CURLOPT_NOPROXY,
                   "169.254.169.254,169.254.170.2,169.254.170.23,127.0.0.1,localhost,::1");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  if (request.method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  } else if (request.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  const CURLcode code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (code != CURLE_OK) {
    return Status(code == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : EIO,
                  RedactUrl(request.url) + ": " + curl_easy_strerror(code));
  }
  return answer;
}

}  // namespace

AwsHttpSend CurlHttpSend() { return CurlSend; }

Clock SystemClock() {
  return [] { return static_cast<int64_t>(::time(nullptr)); };
}

int64_t RefreshTime(int64_t fetched_at, int64_t expiration) {
  const int64_t lifetime = std::max<int64_t>(0, expiration - fetched_at);
  return expiration - std::min(kRefreshMarginSeconds, lifetime / 2);
}

int64_t RetryDelay(int64_t now, int64_t expiration) {
  return std::clamp<int64_t>((expiration - now) / 4, 5, 60);
}

Result<std::shared_ptr<CredentialProvider>> CredentialProvider::Create(
    std::unique_ptr<CredentialSource> source, Clock clock, bool background) {
  std::shared_ptr<CredentialProvider> p(
      new CredentialProvider(std::move(source), std::move(clock), background));
  const int64_t now = p->clock_();
  B2NDFS_ASSIGN_OR_RETURN(p->current_, p->source_->Fetch());
  p->description_ = p->source_->Describe();
  if (p->current_.expiration) {
    p->next_attempt_ = std::max(now + 1, RefreshTime(now, *p->current_.expiration));
  }
  return p;
}

CredentialProvider::CredentialProvider(std::unique_ptr<CredentialSource> source, Clock clock,
                                       bool background)
    : clock_(std::move(clock)), background_(background), source_(std::move(source)) {
  static std::once_flag once;
  std::call_once(once, [] {
    // Threads do not survive fork(), and the daemon forks (fuse_daemonize)
    // after the first requests were signed: the renewal thread is stopped
    // before and started again by the next Current().
    // The registry stays locked across the fork, so no thread starts again
    // in between.
    ::pthread_atfork(
        [] {
          RegistryMutex().lock();
          for (CredentialProvider* p : Registry()) p->Stop();
        },
        [] { RegistryMutex().unlock(); }, [] { RegistryMutex().unlock(); });
  });
}

CredentialProvider::~CredentialProvider() {
  {
    std::lock_guard<std::mutex> registry(RegistryMutex());
    auto& all = Registry();
    all.erase(std::remove(all.begin(), all.end(), this), all.end());
  }
  Stop();
}

void CredentialProvider::Stop() {
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // (Not from the thread itself: a fork of its own, were there one, would
    // wait for itself.)
    if (!running_ || thread_.get_id() == std::this_thread::get_id()) return;
    stopping_ = true;
    wake_.notify_all();
    thread = std::move(thread_);
  }
  thread.join();
  std::lock_guard<std::mutex> lock(mutex_);
  running_ = false;
  stopping_ = false;
}

void CredentialProvider::StartThreadLocked() {
  running_ = true;
  stopping_ = false;
  thread_ = std::thread([this] { Main(); });
}

AwsCredentials CredentialProvider::Current() {
  bool start = false;
  AwsCredentials keys;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    keys = current_.keys;
    if (!current_.expiration) return keys;
    const int64_t now = clock_();
    if (now >= *current_.expiration && !expired_logged_) {
      expired_logged_ = true;
      Log(LogLevel::kError, "s3 credentials from " + description_ + " expired at " +
                                FormatExpiration(*current_.expiration) +
                                " and could not be renewed: requests are refused until they are");
    }
    start = background_ && !running_;
    if (background_ && running_ && now >= next_attempt_) wake_.notify_all();
  }
  if (start) {
    // The registry first (lock order), then start unless another did. Not
    // waiting for it: a fork holds it while it stops the HTTP loops, which
    // may be signing this very request; a later request starts the thread.
    std::unique_lock<std::mutex> registry(RegistryMutex(), std::try_to_lock);
    if (!registry.owns_lock()) return keys;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!running_) {
      auto& all = Registry();
      if (std::find(all.begin(), all.end(), this) == all.end()) all.push_back(this);
      StartThreadLocked();
    }
  }
  return keys;
}

std::optional<int64_t> CredentialProvider::expiration() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_.expiration;
}

uint64_t CredentialProvider::refreshes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refreshes_;
}

std::string CredentialProvider::Describe() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return description_ + (current_.expiration
                             ? ", expire " + FormatExpiration(*current_.expiration) +
                                   " (renewed from " + FormatExpiration(next_attempt_) + ")"
                             : ", do not expire");
}

bool CredentialProvider::RefreshIfDue() {
  std::lock_guard<std::mutex> refreshing(refresh_mutex_);
  const int64_t now = clock_();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!current_.expiration || now < next_attempt_) return false;
  }
  auto fetched = source_->Fetch();
  const std::string description = source_->Describe();
  std::lock_guard<std::mutex> lock(mutex_);
  if (fetched.ok()) {
    if (failing_) Log(LogLevel::kInfo, "s3 credentials from " + description + " renewed again");
    current_ = std::move(*fetched);
    description_ = description;
    failing_ = false;
    expired_logged_ = false;
    ++refreshes_;
    next_attempt_ =
        current_.expiration ? std::max(now + 1, RefreshTime(now, *current_.expiration)) : now;
    Log(LogLevel::kDebug,
        "s3 credentials renewed: " + description_ +
            (current_.expiration ? ", expire " + FormatExpiration(*current_.expiration) : ""));
    return true;
  }
  if (!failing_) {
    failing_ = true;
    Log(LogLevel::kWarning, "s3 credentials: renewing from " + description + " failed (" +
                                fetched.status().message() + "); the current keys are used until " +
                                FormatExpiration(*current_.expiration));
  }
  next_attempt_ = now + RetryDelay(now, *current_.expiration);
  return true;
}

void CredentialProvider::Main() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    const int64_t now = clock_();
    if (current_.expiration && now >= next_attempt_) {
      lock.unlock();
      (void)RefreshIfDue();
      lock.lock();
      continue;
    }
    const int64_t wait = current_.expiration ? std::clamp<int64_t>(next_attempt_ - now, 1, 60) : 60;
    wake_.wait_for(lock, std::chrono::seconds(wait));
  }
}

}  // namespace b2ndfs::remote
