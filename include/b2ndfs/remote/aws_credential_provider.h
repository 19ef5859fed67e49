// remote/aws_credential_provider: the current keys of one credential source
// (aws_credentials.h), renewed while the mount lives.
//
// Renewal: a CredentialProvider holds the current keys of one source; keys
// with an Expiration are fetched again kRefreshMarginSeconds before it (half
// their lifetime before it when they live less than twice that), by a
// thread of the provider, so a request never waits for a renewal. A failed
// renewal keeps the old keys until they expire, is logged once, and is
// retried (RetryDelay).
//
// Secrets: keys are never logged; messages name where keys come from.
// Thread-safety: a CredentialProvider from any thread (lock order below).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "b2ndfs/remote/aws_credentials.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

// When keys fetched at `fetched_at` that expire at `expiration` are renewed.
constexpr int64_t kRefreshMarginSeconds = 300;
int64_t RefreshTime(int64_t fetched_at, int64_t expiration);
// How long after a failed renewal the next try comes.
int64_t RetryDelay(int64_t now, int64_t expiration);

// The current keys of one source. Thread-safety: every method from any
// thread; Current() never waits for the network.
class CredentialProvider {
 public:
  // Fetches the first keys (an error if that fails). `background`: a thread
  // (started on the first Current(), stopped before a fork and started again
  // after it) renews them; without it, RefreshIfDue() does (tests).
  static Result<std::shared_ptr<CredentialProvider>> Create(
      std::unique_ptr<CredentialSource> source, Clock clock = SystemClock(),
      bool background = true);
  ~CredentialProvider();
  CredentialProvider(const CredentialProvider&) = delete;
  CredentialProvider& operator=(const CredentialProvider&) = delete;

  // The newest keys fetched (expired ones too, if no renewal has succeeded:
  // the server then refuses the request).
  AwsCredentials Current();
  std::optional<int64_t> expiration() const;
  // Fetches new keys if they are due (or a retry is); whether it fetched.
  // Holds refresh_mutex_ through the fetch.
  bool RefreshIfDue();
  // "web identity (role arn:...), expire 2026-11-27T20:00:00Z".
  std::string Describe() const;
  uint64_t refreshes() const;  // successful renewals

 private:
  CredentialProvider(std::unique_ptr<CredentialSource> source, Clock clock, bool background);
  void StartThreadLocked();
  void Stop();
  void Main();

  const Clock clock_;
  const bool background_;
  // Lock order: refresh_mutex_ (held through a fetch), then mutex_.
  std::mutex refresh_mutex_;
  std::unique_ptr<CredentialSource> source_;  // used under refresh_mutex_
  mutable std::mutex mutex_;                  // guards everything below
  std::condition_variable wake_;
  ExpiringCredentials current_;
  std::string description_;
  int64_t next_attempt_ = 0;  // when to fetch again (with an expiration)
  bool failing_ = false;      // the last renewal failed (logged once)
  bool expired_logged_ = false;
  uint64_t refreshes_ = 0;
  bool running_ = false, stopping_ = false;
  std::thread thread_;
};

}  // namespace b2ndfs::remote
