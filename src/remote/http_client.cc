#include "b2ndfs/remote/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <ctime>
#include <random>
#include <thread>

#include "b2ndfs/remote/s3_xml.h"
#include "b2ndfs/util/log.h"

namespace b2ndfs::remote {
namespace {

using Clock = std::chrono::steady_clock;

double Now() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r' || s[b - 1] == '\n')) {
    --b;
  }
  return s.substr(a, b - a);
}

bool ParseInt64(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

std::string PercentEncode(const std::string& text, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (c == '/' && keep_slash)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string RedactUrl(const std::string& url) {
  std::string out = url;
  const size_t cut = out.find_first_of("?#");
  if (cut != std::string::npos) out.resize(cut);
  const size_t scheme = out.find("://");
  const size_t host = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t slash = out.find('/', host);
  const size_t at = out.rfind('@', slash == std::string::npos ? out.size() : slash);
  if (at != std::string::npos && at >= host) out.erase(host, at + 1 - host);
  return out;
}

std::optional<ContentRange> ParseContentRange(const std::string& value) {
  const std::string v = Trim(value);
  if (Lower(v.substr(0, 6)) != "bytes ") return std::nullopt;
  const size_t dash = v.find('-', 6), slash = v.find('/', 6);
  if (dash == std::string::npos || slash == std::string::npos || dash > slash) return std::nullopt;
  ContentRange r;
  if (!ParseInt64(v.substr(6, dash - 6), &r.first) ||
      !ParseInt64(v.substr(dash + 1, slash - dash - 1), &r.last) || r.last < r.first) {
    return std::nullopt;
  }
  const std::string total = v.substr(slash + 1);
  if (total != "*" && (!ParseInt64(total, &r.total) || r.total <= r.last)) return std::nullopt;
  return r;
}

std::optional<int64_t> ParseHttpDate(const std::string& value) {
  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
  struct tm tm {};
  const std::string v = Trim(value);
  const char* end = ::strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(::timegm(&tm));
}

// One request and what came back.
struct HttpClient::Request {
  const char* method = "GET";
  std::string url;
  // Range requests: the bytes wanted, where they go, and the version.
  bool ranged = false;
  int64_t offset = 0;
  size_t length = 0;
  uint8_t* out = nullptr;
  const ObjectInfo* version = nullptr;
  // Documents.
  std::string* document = nullptr;
  size_t max_document = 0;
  // The answer (of the last response, after redirects).
  long status = 0;
  size_t received = 0;
  bool overflow = false;  // more bytes than asked for, or a 200 to a Range
  ObjectInfo info;
  std::string content_range;
  std::string error_body;  // the start of an error answer's body

  void ResetAnswer() {
    status = 0;
    received = 0;
    overflow = false;
    info = ObjectInfo();
    content_range.clear();
    error_body.clear();
    if (document != nullptr) document->clear();
  }
  std::string What() const {
    std::string what = std::string(method) + " " + RedactUrl(url);
    if (ranged) {
      what += " bytes " + std::to_string(offset) + "-" +
              std::to_string(offset + static_cast<int64_t>(length) - 1);
    }
    return what;
  }
};

namespace {

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* r = static_cast<HttpClient::Request*>(user);
  const size_t n = size * count;
  const std::string line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response (after a redirect or a 100 Continue): forget the last.
    r->ResetAnswer();
    const size_t sp = line.find(' ');
    if (sp != std::string::npos) r->status = std::strtol(line.c_str() + sp + 1, nullptr, 10);
    return n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return n;
  const std::string name = Lower(Trim(line.substr(0, colon)));
  const std::string value = Trim(line.substr(colon + 1));
  if (name == "content-length") {
    int64_t v;
    if (ParseInt64(value, &v)) r->info.size = v;
  } else if (name == "etag") {
    r->info.etag = value;
  } else if (name == "last-modified") {
    r->info.last_modified = value;
    r->info.mtime = ParseHttpDate(value).value_or(0);
  } else if (name == "content-type") {
    r->info.content_type = value;
  } else if (name == "content-range") {
    r->content_range = value;
  }
  return n;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* r = static_cast<HttpClient::Request*>(user);
  const size_t n = size * count;
  if (r->status < 200 || r->status >= 300) {
    // An error page: only its start is kept, for its S3 error code.
    constexpr size_t kMaxErrorBody = 4096;
    r->error_body.append(
        data, std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, r->error_body.size())));
    return n;
  }
  if (r->ranged) {
    // Only a 206 for exactly the bytes asked for is written; a 200 (the
    // server ignored Range) would be the whole object: stop at once.
    if (r->status != 206 || n > r->length - r->received) {
      r->overflow = true;
      return 0;
    }
    std::memcpy(r->out + r->received, data, n);
  } else if (r->document != nullptr) {
    if (n > r->max_document - r->document->size()) {
      r->overflow = true;
      return 0;
    }
    r->document->append(data, n);
  }
  r->received += n;
  return n;
}

// " (NoSuchKey)": the <Code> of an S3 error document, if it is a plain word.
std::string ErrorCode(const std::string& body) {
  const std::string code = S3ErrorCode(body);
  return code.empty() ? "" : " (" + code + ")";
}

bool TransientCurlError(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

}  // namespace

HttpClient::HttpClient(HttpOptions options) : options_(std::move(options)) { GlobalInit(); }

HttpClient::~HttpClient() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* HttpClient::Acquire(double deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
    if (created_ < std::max<size_t>(options_.connections, 1)) {
      ++created_;
      lock.unlock();
      CURL* h = curl_easy_init();
      if (h == nullptr) {
        lock.lock();
        --created_;
        return nullptr;
      }
      return h;
    }
    const double left = deadline - Now();
    if (left <= 0) return nullptr;
    available_.wait_for(lock, std::chrono::duration<double>(left));
  }
}

void HttpClient::Release(void* curl) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(curl);
  }
  available_.notify_one();
}

Status HttpClient::Attempt(void* handle, Request& r, double seconds_left, bool* transient,
                           ErrorKind* kind) {
  CURL* curl = static_cast<CURL*>(handle);
  *transient = false;
  *kind = ErrorKind::kProtocol;
  // Keeps the handle's connections (keep-alive) and forgets its options.
  curl_easy_reset(curl);
  r.ResetAnswer();
  const long left_ms = std::max(1L, static_cast<long>(seconds_left * 1000));
  curl_easy_setopt(curl, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, left_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, std::min(left_ms, 10000L));
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  // A signed request is bound to its host and path: it cannot follow a
  // redirect (S3 answers a wrong region with 301 and an error document).
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, options_.extra_headers ? 0L : 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
  // Compressed transfer would make Range offsets meaningless.
  curl_easy_setopt(curl, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  if (std::strcmp(r.method, "HEAD") == 0) curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  struct curl_slist* headers = nullptr;
  std::string range;
  if (r.ranged) {
    range = std::to_string(r.offset) + "-" +
            std::to_string(r.offset + static_cast<int64_t>(r.length) - 1);
    curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    if (r.version != nullptr && !r.version->etag.empty()) {
      headers = curl_slist_append(headers, ("If-Match: " + r.version->etag).c_str());
    } else if (r.version != nullptr && !r.version->last_modified.empty()) {
      headers =
          curl_slist_append(headers, ("If-Unmodified-Since: " + r.version->last_modified).c_str());
    }
  }
  if (options_.extra_headers) {
    for (const auto& header :
         options_.extra_headers(r.method, r.url, range.empty() ? "" : "bytes=" + range)) {
      headers = curl_slist_append(headers, header.c_str());
    }
  }
  if (headers != nullptr) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const auto started = Clock::now();
  const CURLcode code = curl_easy_perform(curl);
  latency_.Record(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started).count()));
  curl_slist_free_all(headers);
  requests_++;
  if (r.overflow) {
    if (r.ranged && r.status == 200) {
      return Status(EIO, r.What() + ": the server ignored the Range request (HTTP 200)");
    }
    return Status(EIO, r.What() + ": the answer is longer than asked for");
  }
  if (code != CURLE_OK) {
    *transient = TransientCurlError(code);
    *kind = code == CURLE_OPERATION_TIMEDOUT ? ErrorKind::kTimeout : ErrorKind::kConnection;
    return Status(EIO, r.What() + ": " + curl_easy_strerror(code));
  }
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  r.status = status;
  bytes_ += r.received;
  const std::string answer = "HTTP " + std::to_string(status) + ErrorCode(r.error_body);
  if (status == 404 || status == 410) {
    *kind = ErrorKind::kNotFound;
    return Status(ENOENT, r.What() + ": " + answer);
  }
  if (status == 401 || status == 403) {
    *kind = ErrorKind::kDenied;
    return Status(EACCES, r.What() + ": " + answer);
  }
  if (status == 412) {
    *kind = ErrorKind::kChanged;
    return Status(ESTALE, r.What() + ": the object changed (HTTP 412)");
  }
  if (status == 429 || status >= 500) {
    *transient = true;
    *kind = ErrorKind::kServer;
    return Status(EIO, r.What() + ": " + answer);
  }
  if (status < 200 || status >= 300) return Status(EIO, r.What() + ": " + answer);
  if (!r.ranged) return Status::Ok();
  if (status != 206) {
    return Status(EIO, r.What() + ": the server ignored the Range request (HTTP " +
                           std::to_string(status) + ")");
  }
  const auto cr = ParseContentRange(r.content_range);
  const int64_t last = r.offset + static_cast<int64_t>(r.length) - 1;
  if (!cr || cr->first != r.offset || cr->last != last) {
    return Status(EIO, r.What() + ": wrong Content-Range '" + r.content_range + "'");
  }
  if (r.version != nullptr && r.version->size >= 0 && cr->total != r.version->size) {
    *kind = ErrorKind::kChanged;
    return Status(ESTALE, r.What() + ": the object changed (its size is now " +
                              std::to_string(cr->total) + ")");
  }
  if (r.received != r.length) {
    // A body cut short by a server that closed the connection cleanly.
    *transient = true;
    return Status(EIO, r.What() + ": short body (" + std::to_string(r.received) + " of " +
                           std::to_string(r.length) + " bytes)");
  }
  return Status::Ok();
}

Status HttpClient::Perform(Request& r) {
  const double start = Now();
  const double deadline = start + options_.timeout;
  // A server that just let a request run out of time is not asked again
  // for a moment: a reader's retried pages and the read-ahead queued behind
  // it would otherwise each wait the whole timeout, one after the other.
  if (const double down = down_until_.load(std::memory_order_relaxed); start < down) {
    CountError(ErrorKind::kDown);
    return Status(EIO, r.What() + ": the server did not answer within " +
                           std::to_string(options_.timeout) + " s a moment ago (asked again in " +
                           std::to_string(down - start) + " s)");
  }
  thread_local std::mt19937_64 random(std::random_device{}());
  Status last = Status(EIO, r.What() + ": timed out waiting for a connection");
  ErrorKind kind = ErrorKind::kTimeout;
  for (int attempt = 0;; ++attempt) {
    void* handle = Acquire(deadline);
    if (handle == nullptr) break;
    bool transient = false;
    last = Attempt(handle, r, deadline - Now(), &transient, &kind);
    Release(handle);
    if (last.ok()) {
      if (down_until_.load(std::memory_order_relaxed) != 0) down_until_.store(0);
      return last;
    }
    if (!transient || attempt >= options_.retries) break;
    // Full jitter: a random wait up to 100 ms * 2^attempt (at most 2 s), so
    // that many readers of a struggling server do not retry in step.
    const double cap = std::min(2.0, 0.1 * static_cast<double>(1 << std::min(attempt, 10)));
    const double wait = std::uniform_real_distribution<double>(0, cap)(random);
    if (Now() + wait + 0.05 >= deadline) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    retries_++;
  }
  if (Now() >= deadline - 0.001) {
    last = Status(last.error_number(),
                  last.message() + " (gave up after " + std::to_string(options_.timeout) + " s)");
    if (kind != ErrorKind::kNotFound && kind != ErrorKind::kDenied) kind = ErrorKind::kTimeout;
    if (last.error_number() == EIO) {
      down_until_.store(Now() + std::min(options_.timeout, kDownSeconds),
                        std::memory_order_relaxed);
    }
  }
  // Names that are not there are ordinary answers; other failures are
  // logged, at most a few per second so that a dead server cannot flood
  // the log.
  CountError(kind);
  if (last.error_number() != ENOENT && LogAllowed()) Log(LogLevel::kWarning, last.message());
  return last;
}

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

HttpStats HttpClient::stats() const {
  HttpStats s;
  s.requests = requests_.load();
  s.retries = retries_.load();
  s.errors = errors_.load();
  s.bytes_fetched = bytes_.load();
  for (int k = 0; k < static_cast<int>(ErrorKind::kCount); ++k) {
    s.errors_by_kind[k] = errors_by_kind_[k].load();
  }
  s.latency = latency_.Summarize();
  return s;
}

}  // namespace b2ndfs::remote
