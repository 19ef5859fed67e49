// remote/http_attempt: one attempt of an HTTP request as libcurl runs it:
// what it sends (ConfigureAttempt: URL, timeouts, Range and version headers,
// signatures), what libcurl's callbacks keep of the answer (OnHeader, OnBody)
// and how the answer is judged (EvaluateAttempt). Declared in http_request.h;
// http_transfers.cc runs the attempts, http_client.cc the requests.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <ctime>

#include "b2ndfs/remote/s3_xml.h"
#include "http_request.h"
#include "http_text.h"

namespace b2ndfs::remote {

using text::Lower;
using text::ParseInt64;
using text::Trim;

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
  } else if (name == "content-encoding") {
    r->info.content_encoding = value;
  } else if (name == "content-range") {
    r->content_range = value;
  } else if (name == "x-amz-bucket-region") {
    r->bucket_region = value;
  } else if (name == "x-ms-error-code") {
    r->ms_error_code = value;
  } else if (name == "retry-after") {
    r->retry_after = ParseRetryAfter(value, static_cast<int64_t>(::time(nullptr))).value_or(0);
  }
  return n;
}

// A single Range request for all of an object: a 200 with the whole object
// (a server that ignores Range, as Python's http.server) is what was asked.
bool AsksWholeObject(const HttpClient::Request& r) {
  return r.ranged && r.targets.empty() && r.offset == 0 && r.version != nullptr &&
         r.version->size >= 0 && static_cast<int64_t>(r.length) == r.version->size;
}

// Why a Range request answered with the whole object failed, and the fix.
Status RangeIgnored(const HttpClient::Request& r) {
  return Status(EOPNOTSUPP, r.What() + ": the server ignored the Range request (HTTP " +
                                std::to_string(r.status) +
                                "): b2ndfs reads a container of more than 1 MiB by ranges; "
                                "serve it with a web server that answers Range requests "
                                "(nginx, Apache, lighttpd; README.md, \"Remote sources\")");
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
  if (!r->targets.empty()) {
    // A multi-range answer: a 200 is the whole object (a server that takes
    // no multi-range requests, or ignores Range): stop at once.
    if (r->status != 206) {
      r->overflow = true;
      r->multi_refused = true;
      return 0;
    }
    if (r->parser == nullptr) {
      std::vector<ByterangesParser::Target> wanted;
      wanted.reserve(r->live.size());
      for (size_t t : r->live) wanted.push_back(r->targets[t]);
      r->parser = std::make_unique<ByterangesParser>(std::move(wanted),
                                                     r->version != nullptr ? r->version->size : -1);
      if (auto boundary = ByterangesBoundary(r->info.content_type)) {
        r->parser->StartMultipart(*boundary);
      } else if (!r->parser->StartSinglePart(r->content_range)) {
        r->parse_error = r->parser->error();
        return 0;
      }
    }
    const bool fed = r->parser->Feed(data, n);
    // The parts that ended are good whatever comes after them.
    const size_t before = r->completed.size();
    r->parser->TakeCompleted(&r->completed);
    for (size_t i = before; i < r->completed.size(); ++i) {
      const size_t target = r->live[r->completed[i]];
      r->completed[i] = target;
      r->delivered[target] = 1;
    }
    if (!fed) {
      r->parse_error = r->parser->error();
      return 0;
    }
  } else if (r->ranged) {
    // Only a 206 for exactly the bytes asked for is written; a 200 (the
    // server ignored Range) is the whole object: stop at once, unless that
    // is what was asked for.
    const bool whole = r->status == 200 && AsksWholeObject(*r);
    if ((r->status != 206 && !whole) || n > r->length - r->received) {
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

// " (CODE)" of an S3-style error answer, and where the bucket is when the
// answer says (a request signed for another region: a 301 with
// x-amz-bucket-region, or a 400 whose document names <Region>).
std::string ErrorCode(const std::string& body, const std::string& bucket_region,
                      const std::string& code_header) {
  std::string code = S3ErrorCode(body);
  // A HEAD answer has no body: Azure names its code in a header too. It
  // goes into messages: a plain word only.
  if (code.empty() && !code_header.empty() && code_header.size() <= 64 &&
      std::all_of(code_header.begin(), code_header.end(),
                  [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; })) {
    code = code_header;
  }
  std::string region = ValidRegionName(bucket_region);
  if (region.empty()) region = S3ErrorRegion(body);
  std::string out = code;
  if (!region.empty()) {
    out += std::string(out.empty() ? "" : "; ") + "the bucket is in " + region +
           ": mount with -o region=" + region;
  }
  return out.empty() ? "" : " (" + out + ")";
}

bool IsHttps(const std::string& url) { return Lower(url.substr(0, 8)) == "https://"; }

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

void ConfigureAttempt(CURL* curl, HttpClient::Request& request, const HttpOptions& options,
                      double seconds_left, curl_slist** headers) {
  // Forgets the handle's options; its connections stay in the multi
  // handle's pool (keep-alive).
  curl_easy_reset(curl);
  request.ResetAnswer();
  const long left_ms = std::max(1L, static_cast<long>(seconds_left * 1000));
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  // HTTP/1.1 also where a TLS server offers HTTP/2: with Debian 12's
  // libcurl (7.88) and nginx, reads over h2 stalled 0.2-1 s in about a
  // third of fresh mounts (a 20 ms link: 12 of 36 reads, none over 1.1),
  // and the reads here are planned for kept-alive connections in parallel
  // with multi-range requests anyway.
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, left_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, std::min(left_ms, 10000L));
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  // An https source is read over https only: a redirect to http:// would
  // send the request, and a password with it, in clear, and take bytes
  // anyone on the path may have changed (EvaluateAttempt names the refusal).
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR,
                   IsHttps(request.url) ? "https" : "http,https");
  // A password (the URL's or .netrc's) goes to the host, port and scheme
  // it was given for, never to another one a redirect names (libcurl's
  // default, set here so that it stays so).
  curl_easy_setopt(curl, CURLOPT_UNRESTRICTED_AUTH, 0L);
  // A signed request is bound to its host and path: it cannot follow a
  // redirect (S3 answers a wrong region with 301 and an error document).
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, options.extra_headers ? 0L : 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);
  if (!options.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options.ca_file.c_str());
  if (!options.netrc_file.empty()) {
    // A password in the URL comes first; libcurl sends the file's only to
    // the host it names (not to another one a redirect leads to).
    curl_easy_setopt(curl, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
    curl_easy_setopt(curl, CURLOPT_NETRC_FILE, options.netrc_file.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &request);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &request);
  // Compressed transfer would make Range offsets meaningless.
  curl_easy_setopt(curl, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  if (std::strcmp(request.method, "HEAD") == 0) curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  struct curl_slist* list = nullptr;
  std::string range;
  if (!request.targets.empty()) {
    // A retry asks only for what earlier attempts did not deliver.
    request.delivered.resize(request.targets.size(), 0);
    request.live.clear();
    for (size_t i = 0; i < request.targets.size(); ++i) {
      if (request.delivered[i] == 0) request.live.push_back(i);
    }
    for (size_t i : request.live) {
      const ByterangesParser::Target& t = request.targets[i];
      if (!range.empty()) range += ",";
      range += std::to_string(t.first) + "-" + std::to_string(t.last);
    }
  } else if (request.ranged) {
    range = std::to_string(request.offset) + "-" +
            std::to_string(request.offset + static_cast<int64_t>(request.length) - 1);
  }
  HttpOptions::Attempt attempt{request.method, request.url, range.empty() ? "" : "bytes=" + range,
                               "", ""};
  if (request.ranged) {
    curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    if (request.version != nullptr && !request.version->etag.empty() &&
        !IsWeakEtag(request.version->etag)) {
      attempt.if_match = request.version->etag;
      list = curl_slist_append(list, ("If-Match: " + attempt.if_match).c_str());
    } else if (request.version != nullptr && !request.version->last_modified.empty()) {
      attempt.if_unmodified_since = request.version->last_modified;
      list =
          curl_slist_append(list, ("If-Unmodified-Since: " + attempt.if_unmodified_since).c_str());
    }
  }
  if (options.extra_headers) {
    for (const auto& header : options.extra_headers(request.method, request.url,
                                                    range.empty() ? "" : "bytes=" + range)) {
      list = curl_slist_append(list, header.c_str());
    }
  }
  if (options.sign) {
    for (const auto& header : options.sign(attempt)) list = curl_slist_append(list, header.c_str());
    // libcurl copies the URL; the signed one stays out of answers.
    curl_easy_setopt(curl, CURLOPT_URL, attempt.url.c_str());
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    request.url_signed = attempt.url != request.url;
  }
  if (list != nullptr) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  *headers = list;
}

namespace {

// Step 1 of EvaluateAttempt: the transfer itself (libcurl's code, an answer
// longer than asked for, a multi-range answer that did not parse).
Status CheckTransfer(CURL* curl, CURLcode code, HttpClient::Request& r, bool* transient,
                     ErrorKind* kind) {
  if (!r.parse_error.empty()) {
    r.multi_refused = true;
    if (r.parser != nullptr && r.parser->changed()) {
      *kind = ErrorKind::kChanged;
      return Status(ESTALE, r.What() + ": the object changed (" + r.parse_error + ")");
    }
    return Status(EIO, r.What() + ": a malformed multi-range answer: " + r.parse_error);
  }
  if (r.overflow) {
    if (r.ranged && r.targets.empty() && r.status == 200) return RangeIgnored(r);
    if (r.ranged && r.status == 200) {
      return Status(EIO, r.What() + ": the server ignored the Range request (HTTP 200)");
    }
    return Status(EIO, r.What() + ": the answer is longer than asked for");
  }
  if (code == CURLE_UNSUPPORTED_PROTOCOL && IsHttps(r.url)) {
    // libcurl refused to follow a redirect of an https request elsewhere
    // (CURLOPT_REDIR_PROTOCOLS_STR); the effective URL is where it led.
    char* where = nullptr;
    curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &where);
    const std::string target = where != nullptr && !IsHttps(where) ? RedactUrl(where) : "";
    *kind = ErrorKind::kDenied;
    return Status(EACCES, r.What() + ": refused to follow a redirect from https to " +
                              (target.empty() ? std::string("another scheme") : target) +
                              " (an https source is read over https only)");
  }
  if (code != CURLE_OK) {
    *transient = TransientCurlError(code);
    *kind = code == CURLE_OPERATION_TIMEDOUT ? ErrorKind::kTimeout : ErrorKind::kConnection;
    std::string why = curl_easy_strerror(code);
    if (code == CURLE_PEER_FAILED_VERIFICATION) {
      why +=
          " (the server's certificate is not signed by an authority trusted here; ca_file= "
          "names others)";
    }
    return Status(EIO, r.What() + ": " + why);
  }
  return Status::Ok();
}

// Step 2: the HTTP status, the encoding, and where the answer came from.
Status CheckAnswer(const HttpClient::Request& r, long status, bool* transient, ErrorKind* kind) {
  const std::string answer =
      "HTTP " + std::to_string(status) + ErrorCode(r.error_body, r.bucket_region, r.ms_error_code);
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
  if (!r.info.content_encoding.empty() && Lower(r.info.content_encoding) != "identity") {
    return Status(EIO, r.What() + ": the answer is encoded (Content-Encoding: " +
                           r.info.content_encoding + "), not the object's own bytes");
  }
  return Status::Ok();
}

void NoteFinalUrl(CURL* curl, HttpClient::Request& r) {
  char* final_url = nullptr;
  if (r.url_signed) {
    r.info.final_url = r.url;  // no redirect was followed
  } else if (curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &final_url) == CURLE_OK &&
             final_url != nullptr) {
    r.info.final_url = final_url;
  }
}

// Step 3 of a Range request: the bytes asked for of the version asked for.
Status CheckRangeAnswer(HttpClient::Request& r, long status, bool* transient, ErrorKind* kind) {
  if (status == 200 && AsksWholeObject(r)) {
    // The whole object, as asked, from a server that ignores Range: of the
    // version asked for only if its length and validators agree.
    const ObjectInfo& want = *r.version;
    if ((r.info.size >= 0 && r.info.size != want.size) ||
        (!want.etag.empty() && !r.info.etag.empty() && r.info.etag != want.etag) ||
        (!want.last_modified.empty() && !r.info.last_modified.empty() &&
         r.info.last_modified != want.last_modified)) {
      *kind = ErrorKind::kChanged;
      return Status(ESTALE, r.What() + ": the object changed");
    }
    if (r.received != r.length) {
      *transient = true;
      return Status(EIO, r.What() + ": short body (" + std::to_string(r.received) + " of " +
                             std::to_string(r.length) + " bytes)");
    }
    return Status::Ok();
  }
  if (status != 206) {
    r.multi_refused = !r.targets.empty();
    if (r.targets.empty() && status == 200) return RangeIgnored(r);
    return Status(EIO, r.What() + ": the server ignored the Range request (HTTP " +
                           std::to_string(status) + ")");
  }
  if (!r.targets.empty()) {
    if (r.parser == nullptr || !r.parser->Finish()) {
      r.multi_refused = true;
      const std::string why = r.parser != nullptr ? r.parser->error() : "no body";
      if (r.parser != nullptr && r.parser->changed()) {
        *kind = ErrorKind::kChanged;
        return Status(ESTALE, r.What() + ": the object changed (" + why + ")");
      }
      return Status(EIO, r.What() + ": a malformed multi-range answer: " + why);
    }
    return Status::Ok();
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

}  // namespace

Status EvaluateAttempt(CURL* curl, CURLcode code, HttpClient::Request& r, bool* transient,
                       ErrorKind* kind) {
  *transient = false;
  *kind = ErrorKind::kProtocol;
  B2NDFS_RETURN_IF_ERROR(CheckTransfer(curl, code, r, transient, kind));
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  r.status = status;
  B2NDFS_RETURN_IF_ERROR(CheckAnswer(r, status, transient, kind));
  NoteFinalUrl(curl, r);
  if (!r.ranged) return Status::Ok();
  return CheckRangeAnswer(r, status, transient, kind);
}

}  // namespace b2ndfs::remote
