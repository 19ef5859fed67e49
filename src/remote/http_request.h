// remote/http_request (private to remote): one HTTP request as libcurl
// runs it, shared by http_attempt.cc (what an attempt sends and how its answer
// is judged) and http_transfers.cc (the loop that runs attempts at once).
// A Request belongs to the thread that submitted it; while an attempt runs,
// only the transfer loop's thread touches it.
#pragma once

#include <curl/curl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "b2ndfs/remote/byteranges.h"
#include "b2ndfs/remote/http_client.h"

namespace b2ndfs::remote {

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
  // A multi-range request (`ranged` too): its ranges, ascending and
  // disjoint; the answer goes through `parser`.
  std::vector<ByterangesParser::Target> targets;
  // Across attempts: the targets whose bytes are all in, each reported to
  // the caller as its part ends (well before the answer does) and never
  // asked for again by a retry; and those not reported yet (the loop takes
  // them). This attempt asks for the `live` ones (indices into targets).
  std::vector<char> delivered;
  std::vector<size_t> completed;
  std::vector<size_t> live;
  std::unique_ptr<ByterangesParser> parser;
  std::string parse_error;
  // The answer was not the parts asked for (a 200, a malformed body): the
  // server is not asked for several ranges at once again.
  bool multi_refused = false;
  // Documents.
  std::string* document = nullptr;
  size_t max_document = 0;
  // The answer (of the last response, after redirects).
  long status = 0;
  size_t received = 0;
  bool overflow = false;  // more bytes than asked for, or a 200 to a Range
  ObjectInfo info;
  std::string content_range;
  double retry_after = 0;     // seconds a 429 or 503 answer's Retry-After asks for
  std::string bucket_region;  // x-amz-bucket-region (S3)
  std::string ms_error_code;  // x-ms-error-code (Azure)
  bool url_signed = false;    // sent to a URL HttpOptions::sign extended (a SAS)
  std::string error_body;     // the start of an error answer's body

  void ResetAnswer() {
    status = 0;
    received = 0;
    overflow = false;
    info = ObjectInfo();
    content_range.clear();
    retry_after = 0;
    bucket_region.clear();
    ms_error_code.clear();
    error_body.clear();
    parser.reset();
    parse_error.clear();
    multi_refused = false;
    if (document != nullptr) document->clear();
  }
  // A multi-range request all of whose ranges are in.
  bool AllDelivered() const {
    return !targets.empty() && delivered.size() == targets.size() &&
           std::find(delivered.begin(), delivered.end(), 0) == delivered.end();
  }
  std::string What() const {
    std::string what = std::string(method) + " " + RedactUrl(url);
    if (!targets.empty()) {
      what += " " + std::to_string(targets.size()) + " ranges, bytes " +
              std::to_string(targets.front().first) + "-...-" + std::to_string(targets.back().last);
    } else if (ranged) {
      what += " bytes " + std::to_string(offset) + "-" +
              std::to_string(offset + static_cast<int64_t>(length) - 1);
    }
    return what;
  }
};

// Sets `curl` (reset, so its connections stay with whoever owns them) up
// for one attempt of `request`: URL, timeouts within `seconds_left`,
// callbacks, Range and version headers, and the extra (signed) headers. The
// header list goes to *headers; the caller frees it after the attempt.
void ConfigureAttempt(CURL* curl, HttpClient::Request& request, const HttpOptions& options,
                      double seconds_left, curl_slist** headers);

// Judges an attempt that ended with `code`: the status, whether it is worth
// another attempt, and the kind of error (HttpStats). Range answers are
// checked for a 206 with exactly the Content-Range asked for, the version's
// size and the full body.
Status EvaluateAttempt(CURL* curl, CURLcode code, HttpClient::Request& request, bool* transient,
                       ErrorKind* kind);

}  // namespace b2ndfs::remote
