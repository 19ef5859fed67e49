#include "b2ndfs/remote/http_client.h"

// The requests of a client: HEAD, GET, Range GETs and their grouping into
// multi-range requests. One attempt (what it sends, how its answer is judged)
// is http_attempt.cc's; running attempts at once is http_transfers.cc's.
#include <algorithm>
#include <functional>

#include "b2ndfs/util/log.h"
#include "http_request.h"
#include "http_text.h"

namespace b2ndfs::remote {

using text::Now;

void HttpClient::CountError(ErrorKind kind) {
  errors_++;
  errors_by_kind_[static_cast<int>(kind)]++;
}

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kConnection:
      return "connection";
    case ErrorKind::kServer:
      return "server";
    case ErrorKind::kNotFound:
      return "not_found";
    case ErrorKind::kDenied:
      return "denied";
    case ErrorKind::kChanged:
      return "changed";
    case ErrorKind::kProtocol:
      return "protocol";
    case ErrorKind::kDown:
      return "server_down";
    case ErrorKind::kCount:
      break;
  }
  return "other";
}

bool HttpClient::LogAllowed() {
  const double now = Now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (now - log_window_start_ > 1.0) {
    log_window_start_ = now;
    logged_in_window_ = 0;
  }
  return ++logged_in_window_ <= 5;
}

bool IsWeakEtag(const std::string& etag) { return etag.rfind("W/", 0) == 0; }

Result<ObjectInfo> HttpClient::Head(const std::string& url) {
  Request r;
  r.method = "HEAD";
  r.url = url;
  B2NDFS_RETURN_IF_ERROR(Perform(r));
  return r.info;
}

Result<std::string> HttpClient::Get(const std::string& url, ObjectInfo* info) {
  std::string document;
  Request r;
  r.url = url;
  r.document = &document;
  r.max_document = options_.max_document;
  B2NDFS_RETURN_IF_ERROR(Perform(r));
  if (info != nullptr) *info = r.info;
  return document;
}

Status HttpClient::GetRange(const std::string& url, int64_t offset, size_t length, uint8_t* out,
                            const ObjectInfo& version) {
  if (length == 0) return Status::Ok();
  Request r;
  r.url = url;
  r.ranged = true;
  r.offset = offset;
  r.length = length;
  r.out = out;
  r.version = &version;
  return Perform(r);
}

namespace {

// Ranges of one request name one version (its If-Match).
bool SameVersion(const ObjectInfo* a, const ObjectInfo* b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr) return false;
  return a->etag == b->etag && a->size == b->size && a->last_modified == b->last_modified;
}

}  // namespace

void HttpClient::GetRanges(std::span<const RangeGet> gets, const RangeDone& done) {
  // Requests: one range each, or (multi_range) the ranges of one object
  // version in groups, ascending and disjoint.
  std::vector<std::vector<size_t>> groups;
  {
    std::vector<size_t> order;
    for (size_t i = 0; i < gets.size(); ++i) {
      if (gets[i].length == 0) {
        done(i, Status::Ok());
      } else {
        order.push_back(i);
      }
    }
    const bool multi = options_.multi_range && !no_multi_range_.load(std::memory_order_relaxed);
    if (multi) {
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const RangeGet& x = gets[a];
        const RangeGet& y = gets[b];
        if (*x.url != *y.url) return *x.url < *y.url;
        return x.offset < y.offset;
      });
    }
    // Enough ranges a request that a batch needs about 8 requests (a round
    // trip on connections already open), within the bound.
    const size_t per_request =
        multi ? std::clamp<size_t>((order.size() + 7) / 8, 1, kMaxRangesPerRequest) : 1;
    for (size_t i : order) {
      if (!groups.empty() && groups.back().size() < per_request) {
        const RangeGet& last = gets[groups.back().back()];
        const RangeGet& g = gets[i];
        if (*last.url == *g.url && SameVersion(last.version, g.version) &&
            g.offset >= last.offset + static_cast<int64_t>(last.length)) {
          groups.back().push_back(i);
          continue;
        }
      }
      groups.push_back({i});
    }
  }
  std::vector<Request> requests(groups.size());
  std::vector<Request*> run;
  for (size_t j = 0; j < groups.size(); ++j) {
    Request& r = requests[j];
    const RangeGet& g = gets[groups[j].front()];
    r.url = *g.url;
    r.ranged = true;
    r.version = g.version;
    if (groups[j].size() == 1) {
      r.offset = g.offset;
      r.length = g.length;
      r.out = g.out;
    } else {
      for (size_t i : groups[j]) {
        const RangeGet& m = gets[i];
        r.targets.push_back(ByterangesParser::Target{
            m.offset, m.offset + static_cast<int64_t>(m.length) - 1, m.out});
      }
    }
    run.push_back(&r);
  }
  std::vector<size_t> again;  // ranges of refused multi-range requests
  // Ranges reported as their parts came in, before their request ended.
  std::vector<std::vector<char>> reported(groups.size());
  for (size_t j = 0; j < groups.size(); ++j) reported[j].assign(groups[j].size(), 0);
  Run(
      run,
      [&](size_t j, const Status& status) {
        const bool refused = !status.ok() && requests[j].multi_refused;
        if (refused) no_multi_range_.store(true, std::memory_order_relaxed);
        for (size_t k = 0; k < groups[j].size(); ++k) {
          if (reported[j][k] != 0) continue;
          if (refused) {
            again.push_back(groups[j][k]);
          } else {
            done(groups[j][k], status);
          }
        }
      },
      [&](size_t j, size_t k) {
        reported[j][k] = 1;
        done(groups[j][k], Status::Ok());
      });
  if (again.empty()) return;
  Log(LogLevel::kInfo, RedactUrl(*gets[again.front()].url) +
                           ": the server does not answer multi-range requests as asked; "
                           "asking for one range a request from now on");
  std::vector<RangeGet> singles;
  for (size_t i : again) singles.push_back(gets[i]);
  GetRanges(singles, [&](size_t k, const Status& status) { done(again[k], status); });
}

Status HttpClient::Perform(Request& request) {
  Request* one = &request;
  Status status;
  Run(std::span<Request* const>(&one, 1), [&](size_t, const Status& s) { status = s; });
  return status;
}

HttpStats HttpClient::stats() const {
  HttpStats s;
  s.requests = requests_.load();
  s.retries = retries_.load();
  s.errors = errors_.load();
  s.bytes_fetched = bytes_.load();
  s.peak_in_flight = peak_in_flight_.load();
  for (int k = 0; k < static_cast<int>(ErrorKind::kCount); ++k) {
    s.errors_by_kind[k] = errors_by_kind_[k].load();
  }
  s.latency = latency_.Summarize();
  return s;
}

}  // namespace b2ndfs::remote
