// remote/http_client: HTTP(S) requests for remote sources: HEAD, GET of a
// small document (a directory index), and Range GETs of an object's bytes.
//
// Ownership: an HttpClient owns one thread that runs every request of the
// client on a libcurl multi handle (http_transfers.cc): any number of
// requests are in flight at once on at most Options::connections
// connections, kept alive between requests; requests beyond that wait for a
// free connection. A caller waits only for its own requests (GetRanges: for
// the batch it handed over, each reported as it ends). libcurl is private to
// this module.
// Time: every request, retries included, ends within Options::timeout
// seconds (waiting for a free connection counts too); transient failures
// (connection refused or reset, timeouts of one attempt, 5xx, 429) are retried
// at most Options::retries times with exponential backoff and full jitter,
// and no sooner than a 429 or 503 answer's Retry-After asks (a request whose
// wait would pass its deadline fails at once instead).
// A request that runs out of time marks the server as not answering: for
// min(timeout, kDownSeconds) seconds requests fail at once (EIO) instead of
// each waiting the whole timeout (a reader's every page, and the read-ahead
// behind it, would otherwise wait one after the other).
// Errors: Status with ENOENT (404, 410), EACCES (401, 403), ESTALE (412: the
// object is no longer the version asked for, or a Range answer names another
// total size), EIO for everything else (timeouts, a 200 answer to a Range
// request, a short body, a wrong Content-Range, an encoded answer: a
// Content-Encoding other than identity, whose bytes are not the object's).
// Messages name the URL without credentials or query string (RedactUrl),
// and the error code of an S3-style XML error body (<Code>, else Azure's
// x-ms-error-code header) and the
// bucket's region, if the answer names them; failures other than ENOENT
// are also logged (a few per second at most).
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/util/latency.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

// The URL for messages: no user:password@, no query string or fragment.
std::string RedactUrl(const std::string& url);

// RFC 3986 percent-encoding: unreserved characters kept, every other byte
// %XX (upper-case hex, as SigV4 requires); '/' kept when `keep_slash`.
std::string PercentEncode(const std::string& text, bool keep_slash);

// A parsed "Content-Range: bytes FIRST-LAST/TOTAL" (TOTAL may be "*": -1).
struct ContentRange {
  int64_t first = 0;
  int64_t last = 0;
  int64_t total = -1;
};
std::optional<ContentRange> ParseContentRange(const std::string& value);

// Seconds since the epoch of an RFC 7231 HTTP date (IMF-fixdate, as servers
// send in Last-Modified); nullopt if malformed.
std::optional<int64_t> ParseHttpDate(const std::string& value);

// Seconds a Retry-After header asks to wait (delta-seconds, or an HTTP
// date relative to `now`, seconds since the epoch); nullopt if malformed.
std::optional<double> ParseRetryAfter(const std::string& value, int64_t now);

// What a server says about an object.
struct ObjectInfo {
  int64_t size = -1;  // -1: not known
  std::string etag;
  std::string last_modified;
  int64_t mtime = 0;  // seconds since the epoch, from last_modified (0: not known)
  std::string content_type;
  std::string content_encoding;  // "" or "identity": the object's own bytes
  std::string final_url;         // where the answer came from, after redirects
};

// An ETag of the weak kind (W/"..."): never equal under If-Match's strong
// comparison, so a version with one is held by If-Unmodified-Since instead.
bool IsWeakEtag(const std::string& etag);

// See "Time" above.
constexpr double kDownSeconds = 5.0;

// Connections to one server, and so requests in flight at once (-o
// connections=N): enough for the block ranges of a large read to go out in
// a round trip or two.
constexpr size_t kDefaultConnections = 32;

// The most ranges one multi-range request asks for (its Range header stays
// within ~1.5 KB: servers limit header sizes, nginx to 8 KB a line).
constexpr size_t kMaxRangesPerRequest = 64;

// One range of GetRanges(): `length` bytes at `offset` of the object at `url`,
// into `out`, at `version` (as GetRange). The url and version must outlive
// the call.
struct RangeGet {
  const std::string* url = nullptr;
  int64_t offset = 0;
  size_t length = 0;
  uint8_t* out = nullptr;
  const ObjectInfo* version = nullptr;
};
using RangeDone = std::function<void(size_t index, const Status& status)>;

struct HttpOptions {
  double timeout = 30.0;                     // seconds a request may take, retries included
  int retries = 3;                           // further attempts after a transient failure
  size_t connections = kDefaultConnections;  // kept-alive connections, so requests at once
  bool verify_tls = true;                    // peer certificate and host name
  std::string ca_file;     // PEM authorities to verify against; empty: the system's
  std::string netrc_file;  // user names and passwords by host (.netrc); empty: none
  // GetRanges may ask for several ranges of an object in one request
  // (multipart/byteranges). Never for S3, which answers such a request
  // with the whole object.
  bool multi_range = false;
  size_t max_document = 64u << 20;  // largest body Get() accepts
  // Further headers of one attempt ("Name: value"), computed per attempt
  // from the method, the URL and the Range header's value ("bytes=A-B", or
  // empty) as sent: an S3 signature, whose date must be fresh on every
  // retry. Their values are never logged.
  std::function<std::vector<std::string>(const std::string& method, const std::string& url,
                                         const std::string& range)>
      extra_headers;
  // For a signer that needs more of an attempt than extra_headers sees
  // (Azure's SharedKey signs the conditional headers too; a SAS token goes
  // into the query): called per attempt after extra_headers, it returns
  // further headers and may append to `url`, which is then what is sent
  // (never what messages or ObjectInfo::final_url name). A signed request
  // follows no redirect. Its values are never logged.
  struct Attempt {
    std::string method;
    std::string url;
    std::string range;  // the Range header's value ("bytes=A-B"), or ""
    std::string if_match;
    std::string if_unmodified_since;
  };
  std::function<std::vector<std::string>(Attempt& attempt)> sign;
};

// Why a request failed in the end (HttpStats::errors_by_kind).
enum class ErrorKind {
  kTimeout,     // no answer within the timeout
  kConnection,  // refused, reset, DNS, TLS
  kServer,      // 5xx or 429 after the retries
  kNotFound,    // 404, 410
  kDenied,      // 401, 403
  kChanged,     // 412 or another total size: the object changed
  kProtocol,    // a 200 to a Range, a wrong Content-Range, a short body, ...
  kDown,        // not sent: the server did not answer a moment ago
  kCount
};
const char* ErrorKindName(ErrorKind kind);

struct HttpStats {
  uint64_t requests = 0;  // attempts, retries included
  uint64_t retries = 0;
  uint64_t errors = 0;  // requests that failed in the end
  uint64_t errors_by_kind[static_cast<int>(ErrorKind::kCount)] = {};
  uint64_t bytes_fetched = 0;
  uint64_t peak_in_flight = 0;        // the most requests handed to libcurl at once
  LatencyHistogram::Summary latency;  // of each attempt, answered or not
};

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // HEAD: the object's size, ETag and Last-Modified.
  Result<ObjectInfo> Head(const std::string& url);
  // GET of a whole (small) document.
  Result<std::string> Get(const std::string& url, ObjectInfo* info = nullptr);
  // Reads exactly `length` bytes at `offset` with a Range request. With a
  // non-empty `etag` the server must still hold that version (If-Match),
  // else with `last_modified` (If-Unmodified-Since); a known `version.size`
  // must be the total size the answer names.
  Status GetRange(const std::string& url, int64_t offset, size_t length, uint8_t* out,
                  const ObjectInfo& version);
  // Reads every range at once, each exactly as GetRange (its own request,
  // checks, retries and deadline; with Options::multi_range, ranges of one
  // object share requests of up to kMaxRangesPerRequest ranges, until the
  // server answers one of them with anything but the parts asked for: then
  // they are asked for again one by one, and so from then on). done(i,
  // status) is called once per range,
  // on the calling thread, as each ends (in any order); returns after the
  // last. An exception thrown by `done` is rethrown once all have ended.
  void GetRanges(std::span<const RangeGet> gets, const RangeDone& done);

  HttpStats stats() const;
  const HttpOptions& options() const { return options_; }

  // Defined in http_request.h (libcurl's callbacks see it).
  struct Request;

 private:
  class Loop;  // http_transfers.cc
  Status Perform(Request& request);
  // Runs the requests at once (http_transfers.cc); done(i, status) on this
  // thread as each ends, and before that part_done(i, t) as each range t
  // of multi-range request i comes in whole (a retry then asks only for the
  // others; a request whose ranges all came is a success).
  using PartDone = std::function<void(size_t request, size_t target)>;
  void Run(std::span<Request* const> requests, const RangeDone& done,
           const PartDone& part_done = nullptr);
  // A request failed in the end: marks a timeout, counts and logs it.
  void Failed(Status& status, ErrorKind& kind, double deadline);
  void CountError(ErrorKind kind);
  bool LogAllowed();

  const HttpOptions options_;
  std::mutex mutex_;             // leaf lock; guards the log rate
  double log_window_start_ = 0;  // guarded by mutex_, as logged_in_window_
  int logged_in_window_ = 0;
  std::atomic<uint64_t> requests_{0}, retries_{0}, errors_{0}, bytes_{0}, peak_in_flight_{0};
  std::atomic<uint64_t> errors_by_kind_[static_cast<int>(ErrorKind::kCount)] = {};
  LatencyHistogram latency_;
  std::atomic<double> down_until_{0};        // Now() before which requests fail at once
  std::atomic<bool> no_multi_range_{false};  // the server refused a multi-range request
  std::unique_ptr<Loop> loop_;               // last: stopped first
};

}  // namespace b2ndfs::remote
