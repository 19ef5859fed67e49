// HttpClient's transfer loop against a small scripted HTTP/1.1 server on
// loopback (a thread per connection, keep-alive): GetRanges has many
// requests in flight at once and lands exact bytes; each range is still
// checked as GetRange checks it (a 200 to a Range, a wrong Content-Range, a
// short body), retried after a 503, and ended within the timeout when the
// server does not answer; multi-range requests land exact bytes from
// multipart answers, and a server answering one with the whole object is
// asked singly from then on; a client used before fork() works in the child
// (the loop's thread is restarted there).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "b2ndfs/remote/http_client.h"
#include "b2ndfs/util/atomic_max.h"
#include "b2ndfs/util/sanitizers.h"

using namespace b2ndfs;
using remote::HttpClient;

namespace {

constexpr size_t kObjectBytes = 1 << 20;

uint8_t ByteAt(int64_t i) { return static_cast<uint8_t>((i * 7 + i / 251) % 251); }

// What the server answers to one request: the raw response, or empty to
// close the connection without an answer.
struct Seen {
  std::string method;
  int64_t first = -1, last = -1;                    // the (first) Range asked for, if any
  std::vector<std::pair<int64_t, int64_t>> ranges;  // all of them
  int attempt = 0;                                  // of this range, counted from 1
};
using Script = std::function<std::string(const Seen&)>;

std::string Answer206(int64_t first, int64_t last, int64_t total = kObjectBytes,
                      int64_t cr_first = -1) {
  std::string body;
  for (int64_t i = first; i <= last; ++i) body += static_cast<char>(ByteAt(i));
  return "HTTP/1.1 206 Partial Content\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nContent-Range: bytes " + std::to_string(cr_first >= 0 ? cr_first : first) + "-" +
         std::to_string(last) + "/" + std::to_string(total) + "\r\nETag: \"v1\"\r\n\r\n" + body;
}

// In an answer: the server sends what comes before kPause, calls the
// test's pause hook (with the request), then sends the rest; before
// kClose, it sends what comes before and closes the connection.
const std::string kPause = "<<PAUSE>>";
const std::string kClose = "<<CLOSE>>";

class Server {
 public:
  explicit Server(Script script, std::function<void(const Seen&)> pause = nullptr)
      : script_(std::move(script)), pause_(std::move(pause)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    REQUIRE(::listen(listener_, 256) == 0);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~Server() {
    stop_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    acceptor_.join();
    std::lock_guard<std::mutex> lock(mutex_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    for (auto& t : connections_) t.join();
    for (int fd : fds_) ::close(fd);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/obj"; }
  int peak() const { return peak_.load(); }

 private:
  void Accept() {
    while (!stop_) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      std::lock_guard<std::mutex> lock(mutex_);
      fds_.push_back(fd);
      connections_.emplace_back([this, fd] { Serve(fd); });
    }
  }
  void Serve(int fd) {
    std::string in;
    char buf[4096];
    for (;;) {
      size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return;
        in.append(buf, static_cast<size_t>(n));
      }
      const std::string head = in.substr(0, end);
      in.erase(0, end + 4);
      Seen seen;
      seen.method = head.substr(0, head.find(' '));
      const size_t range = head.find("Range: bytes=");
      if (range != std::string::npos) {
        seen.first = std::stoll(head.substr(range + 13));
        seen.last = std::stoll(head.substr(head.find('-', range + 13) + 1));
        std::string list = head.substr(range + 13, head.find("\r\n", range) - range - 13);
        for (size_t at = 0; at < list.size();) {
          const size_t comma = std::min(list.find(',', at), list.size());
          const std::string one = list.substr(at, comma - at);
          seen.ranges.emplace_back(std::stoll(one), std::stoll(one.substr(one.find('-') + 1)));
          at = comma + 1;
        }
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        seen.attempt = ++attempts_[seen.first];
      }
      const int now = ++in_flight_;
      RaiseAtomic(peak_, now);
      // Long enough for the client's other requests to arrive meanwhile.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::string out = script_(seen);
      --in_flight_;
      if (out.empty()) return;
      const size_t pause = out.find(kPause);
      if (pause != std::string::npos) {
        if (!Send(fd, out.substr(0, pause))) return;
        if (pause_) pause_(seen);
        out.erase(0, pause + kPause.size());
      }
      const size_t close = out.find(kClose);
      if (!Send(fd, out.substr(0, close))) return;
      if (close != std::string::npos) {
        ::shutdown(fd, SHUT_RDWR);  // the client sees the connection end
        return;
      }
    }
  }
  static bool Send(int fd, const std::string& bytes) {
    return bytes.empty() || ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) >= 0;
  }

  Script script_;
  std::function<void(const Seen&)> pause_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> in_flight_{0}, peak_{0};
  std::thread acceptor_;
  std::mutex mutex_;  // guards fds_, connections_, attempts_
  std::vector<int> fds_;
  std::vector<std::thread> connections_;
  std::map<int64_t, int> attempts_;
};

// A multipart answer; `marker` (kPause or kClose) goes after the first
// `marked` parts (it is not counted in Content-Length).
std::string AnswerMultipart(const Seen& s, bool reversed = false, size_t marked = 0,
                            const std::string& marker = "") {
  if (s.ranges.size() == 1) return Answer206(s.first, s.last);
  std::string body;
  size_t at = std::string::npos;  // of the marker in body
  auto ranges = s.ranges;
  if (reversed) std::reverse(ranges.begin(), ranges.end());
  for (size_t k = 0; k < ranges.size(); ++k) {
    if (k == marked && !marker.empty()) at = body.size();
    const auto [first, last] = ranges[k];
    body += "\r\n--XYZ\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes " +
            std::to_string(first) + "-" + std::to_string(last) + "/" +
            std::to_string(kObjectBytes) + "\r\n\r\n";
    for (int64_t i = first; i <= last; ++i) body += static_cast<char>(ByteAt(i));
  }
  body += "\r\n--XYZ--\r\n";
  const size_t length = body.size();
  if (at != std::string::npos) body.insert(at, marker);
  return "HTTP/1.1 206 Partial Content\r\nContent-Type: multipart/byteranges; "
         "boundary=XYZ\r\nContent-Length: " +
         std::to_string(length) + "\r\n\r\n" + body;
}

struct Batch {
  std::vector<std::vector<uint8_t>> out;
  std::vector<remote::RangeGet> gets;
  std::vector<Status> status;
  int calls = 0;
};

// n ranges of 1000 bytes, 3000 apart.
Batch RunBatch(HttpClient& client, const std::string& url, const remote::ObjectInfo& version,
               size_t n) {
  Batch b;
  b.out.resize(n, std::vector<uint8_t>(1000));
  b.status.resize(n, Status(EINVAL, "never reported"));
  for (size_t i = 0; i < n; ++i) {
    b.gets.push_back(
        remote::RangeGet{&url, static_cast<int64_t>(i) * 3000, 1000, b.out[i].data(), &version});
  }
  client.GetRanges(b.gets, [&](size_t i, const Status& s) {
    b.status[i] = s;
    b.calls++;
  });
  return b;
}

bool Exact(const Batch& b) {
  for (size_t i = 0; i < b.out.size(); ++i) {
    for (size_t k = 0; k < 1000; ++k) {
      if (b.out[i][k] != ByteAt(static_cast<int64_t>(i) * 3000 + static_cast<int64_t>(k))) {
        return false;
      }
    }
  }
  return true;
}

remote::HttpOptions Options(double timeout = 10, size_t connections = 16) {
  remote::HttpOptions o;
  o.timeout = timeout;
  o.connections = connections;
  return o;
}

}  // namespace

TEST_CASE("GetRanges has many ranges in flight and lands exact bytes", "[http]") {
  Server server([](const Seen& s) { return Answer206(s.first, s.last); });
  HttpClient client(Options(10, 16));
  remote::ObjectInfo version;
  version.size = kObjectBytes;
  version.etag = "\"v1\"";
  const std::string url = server.url();
  Batch b = RunBatch(client, url, version, 64);
  CHECK(b.calls == 64);
  for (const Status& s : b.status) REQUIRE(s.ok());
  CHECK(Exact(b));
  // Bounded by the connections, and far beyond one at a time.
  CHECK(server.peak() <= 16);
  CHECK(server.peak() >= 8);
  const remote::HttpStats stats = client.stats();
  CHECK(stats.requests == 64);
  CHECK(stats.bytes_fetched == 64 * 1000);
  CHECK(stats.peak_in_flight >= 16);
  // A single GetRange goes the same way.
  std::vector<uint8_t> one(10);
  REQUIRE(client.GetRange(url, 5, 10, one.data(), version).ok());
  CHECK(one[0] == ByteAt(5));
}

TEST_CASE("GetRanges checks every answer as GetRange does", "[http]") {
  remote::ObjectInfo version;
  version.size = kObjectBytes;
  SECTION("a 503 is retried") {
    Server server([](const Seen& s) {
      if (s.attempt == 1) return std::string("HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n");
      return Answer206(s.first, s.last);
    });
    HttpClient client(Options());
    const std::string url = server.url();
    Batch b = RunBatch(client, url, version, 20);
    for (const Status& s : b.status) REQUIRE(s.ok());
    CHECK(Exact(b));
    CHECK(client.stats().retries == 20);
  }
  SECTION("a 200 to a Range request is EOPNOTSUPP, naming the cause and the fix") {
    Server server([](const Seen&) {
      return std::string("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n") +
             std::string(5000, 'x');
    });
    HttpClient client(Options());
    const std::string url = server.url();
    Batch b = RunBatch(client, url, version, 8);
    for (const Status& s : b.status) {
      CHECK(s.error_number() == EOPNOTSUPP);
      CHECK(s.message().find("ignored the Range") != std::string::npos);
      CHECK(s.message().find("answers Range requests") != std::string::npos);
    }
  }
  SECTION("a 200 with the whole object is the answer to a range of all of it") {
    auto whole = [](const Seen&) {
      std::string body;
      for (int64_t i = 0; i < static_cast<int64_t>(kObjectBytes); ++i) {
        body += static_cast<char>(ByteAt(i));
      }
      return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kObjectBytes) + "\r\n\r\n" +
             body;
    };
    Server server(whole);
    HttpClient client(Options());
    std::vector<uint8_t> out(kObjectBytes);
    REQUIRE(client.GetRange(server.url(), 0, kObjectBytes, out.data(), version).ok());
    for (size_t i = 0; i < kObjectBytes; i += 4099)
      CHECK(out[i] == ByteAt(static_cast<int64_t>(i)));
    // Of another length: another version.
    remote::ObjectInfo shorter = version;
    shorter.size = kObjectBytes - 1;
    std::vector<uint8_t> less(kObjectBytes - 1);
    CHECK(client.GetRange(server.url(), 0, less.size(), less.data(), shorter).error_number() ==
          EOPNOTSUPP);
  }
  SECTION("a wrong Content-Range is EIO, another total size ESTALE") {
    Server server([](const Seen& s) {
      if (s.first == 0) return Answer206(s.first, s.last, kObjectBytes, s.first + 1);
      if (s.first == 3000) return Answer206(s.first, s.last, kObjectBytes + 1);
      return Answer206(s.first, s.last);
    });
    HttpClient client(Options());
    const std::string url = server.url();
    Batch b = RunBatch(client, url, version, 4);
    CHECK(b.status[0].error_number() == EIO);
    CHECK(b.status[1].error_number() == ESTALE);
    CHECK(b.status[2].ok());
    CHECK(b.status[3].ok());
  }
  SECTION("a server that does not answer: every range ends within the timeout") {
    Server server([](const Seen&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      return std::string();
    });
    HttpClient client(Options(0.5));
    const std::string url = server.url();
    const auto started = std::chrono::steady_clock::now();
    Batch b = RunBatch(client, url, version, 6);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(took < 1.2);
    for (const Status& s : b.status) CHECK(s.error_number() == EIO);
    // Marked down: the next request fails at once.
    std::vector<uint8_t> one(10);
    CHECK(client.GetRange(url, 0, 10, one.data(), version).error_number() == EIO);
    CHECK(client.stats().errors_by_kind[static_cast<int>(remote::ErrorKind::kDown)] >= 1);
  }
}

TEST_CASE("multi-range requests, and a server that refuses them", "[http]") {
  remote::ObjectInfo version;
  version.size = kObjectBytes;
  std::atomic<int> requests{0}, multi{0};
  SECTION("multipart answers, parts in any order") {
    Server server([&](const Seen& s) {
      requests++;
      if (s.ranges.size() > 1) multi++;
      return AnswerMultipart(s, s.first % 2 == 0);
    });
    remote::HttpOptions o = Options();
    o.multi_range = true;
    HttpClient client(o);
    const std::string url = server.url();
    Batch b = RunBatch(client, url, version, 64);
    for (const Status& s : b.status) REQUIRE(s.ok());
    CHECK(Exact(b));
    CHECK(requests.load() == 8);  // 8 ranges a request
    CHECK(multi.load() == 8);
  }
  SECTION("a 200 with the whole object: aborted, asked again singly, remembered") {
    Server server([&](const Seen& s) {
      requests++;
      if (s.ranges.size() > 1) {
        multi++;
        std::string whole(kObjectBytes, 'x');
        return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(whole.size()) + "\r\n\r\n" +
               whole;
      }
      return Answer206(s.first, s.last);
    });
    remote::HttpOptions o = Options();
    o.multi_range = true;
    HttpClient client(o);
    const std::string url = server.url();
    Batch b = RunBatch(client, url, version, 16);
    for (const Status& s : b.status) REQUIRE(s.ok());
    CHECK(Exact(b));
    CHECK(multi.load() >= 1);
    // Far less than the whole object per refused request.
    CHECK(client.stats().bytes_fetched < kObjectBytes / 2 * static_cast<uint64_t>(multi.load()));
    const int multi_before = multi.load();
    Batch again = RunBatch(client, url, version, 16);
    for (const Status& s : again.status) REQUIRE(s.ok());
    CHECK(multi.load() == multi_before);
  }
  SECTION("without multi_range (S3) every range is a request of its own") {
    Server server([&](const Seen& s) {
      requests++;
      if (s.ranges.size() > 1) multi++;
      return AnswerMultipart(s);
    });
    HttpClient client(Options());
    const std::string url = server.url();
    Batch b = RunBatch(client, url, version, 16);
    for (const Status& s : b.status) REQUIRE(s.ok());
    CHECK(requests.load() == 16);
    CHECK(multi.load() == 0);
  }
}

TEST_CASE("a multi-range answer's ranges land as its parts come; a retry asks for the rest",
          "[http]") {
  remote::ObjectInfo version;
  version.size = kObjectBytes;
  remote::HttpOptions o = Options();
  o.multi_range = true;
  // 64 ranges: 8 requests of 8.
  std::vector<std::vector<uint8_t>> out(64, std::vector<uint8_t>(1000));
  std::vector<remote::RangeGet> gets;
  std::vector<Status> status(64, Status(EINVAL, "never reported"));
  const auto run = [&](HttpClient& client, const std::string& url, auto&& on_done) {
    gets.clear();
    for (size_t i = 0; i < 64; ++i) {
      gets.push_back(
          remote::RangeGet{&url, static_cast<int64_t>(i) * 3000, 1000, out[i].data(), &version});
    }
    client.GetRanges(gets, [&](size_t i, const Status& st) {
      status[i] = st;
      on_done(i);
    });
    for (const Status& st : status) REQUIRE(st.ok());
    for (size_t i = 0; i < 64; ++i) {
      for (size_t k = 0; k < 1000; ++k) {
        REQUIRE(out[i][k] == ByteAt(static_cast<int64_t>(i) * 3000 + static_cast<int64_t>(k)));
      }
    }
  };
  SECTION("reported while the answer is still coming") {
    // Each answer stops after half its parts until the client has reported
    // their ranges: reported only once the request ended, the server waits
    // in vain (5 s) and says so.
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<int64_t> reported;  // offsets, guarded by mutex
    std::atomic<int> released_by_client{0};
    Server server([&](const Seen& s) { return AnswerMultipart(s, false, 4, kPause); },
                  [&](const Seen& s) {
                    std::unique_lock<std::mutex> lock(mutex);
                    const bool all = changed.wait_for(lock, std::chrono::seconds(5), [&] {
                      for (size_t k = 0; k < 4; ++k) {
                        if (std::find(reported.begin(), reported.end(), s.ranges[k].first) ==
                            reported.end()) {
                          return false;
                        }
                      }
                      return true;
                    });
                    if (all) released_by_client++;
                  });
    HttpClient client(o);
    const std::string url = server.url();
    run(client, url, [&](size_t i) {
      std::lock_guard<std::mutex> lock(mutex);
      reported.push_back(gets[i].offset);
      changed.notify_all();
    });
    CHECK(released_by_client.load() == 8);
    CHECK(client.stats().retries == 0);
  }
  SECTION("a connection cut after some parts: the retry asks only for the others") {
    std::mutex mutex;
    std::vector<std::vector<std::pair<int64_t, int64_t>>> asked;  // guarded by mutex
    Server server([&](const Seen& s) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        asked.push_back(s.ranges);
      }
      // First attempts (8 ranges): 4 parts, then the connection closes.
      return s.ranges.size() == 8 ? AnswerMultipart(s, false, 4, kClose) : AnswerMultipart(s);
    });
    HttpClient client(o);
    const std::string url = server.url();
    run(client, url, [](size_t) {});
    CHECK(client.stats().retries == 8);
    std::lock_guard<std::mutex> lock(mutex);
    REQUIRE(asked.size() == 16);
    std::vector<std::pair<int64_t, int64_t>> first_halves, retried;
    for (const auto& ranges : asked) {
      if (ranges.size() == 8) {
        first_halves.insert(first_halves.end(), ranges.begin() + 4, ranges.end());
      } else {
        CHECK(ranges.size() == 4);
        retried.insert(retried.end(), ranges.begin(), ranges.end());
      }
    }
    std::sort(first_halves.begin(), first_halves.end());
    std::sort(retried.begin(), retried.end());
    CHECK(retried == first_halves);  // exactly the ranges that did not come
  }
}

// Not under ThreadSanitizer, which cannot follow a process with threads (the
// test server's) across fork(): it kills the child as it starts threads.
#ifndef B2NDFS_THREAD_SANITIZER
TEST_CASE("a client used before fork() works in the child", "[http]") {
  Server server([](const Seen& s) { return Answer206(s.first, s.last); });
  HttpClient client(Options());
  remote::ObjectInfo version;
  version.size = kObjectBytes;
  const std::string url = server.url();
  std::vector<uint8_t> one(10);
  REQUIRE(client.GetRange(url, 0, 10, one.data(), version).ok());
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    Batch b = RunBatch(client, url, version, 8);
    bool ok = Exact(b);
    for (const Status& s : b.status) ok = ok && s.ok();
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // And still in the parent.
  REQUIRE(client.GetRange(url, 3000, 10, one.data(), version).ok());
  CHECK(one[0] == ByteAt(3000));
}
#endif  // B2NDFS_THREAD_SANITIZER
