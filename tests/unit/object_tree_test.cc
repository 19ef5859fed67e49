// Remote trees against a small S3-like server on loopback (path-style
// bucket, ListObjectsV2, HEAD, Range GETs that honour If-Match): which
// failures say that a container is gone (404, 410: ENOENT) and which are an
// outage (503, a refused connection), in Probe(), Stat() and OpenContainer();
// a remote source keeps reading its version (If-Match) and answers ESTALE
// once the object changed; a sparse frame's chunk objects are read at the
// versions its listing named when the generation opened. Also the local
// tree's classification (source::IsGone).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/remote/s3_tree.h"
#include "b2ndfs/source/tree.h"
#include "meta_cache.h"
#include "temp_dir.h"

using namespace b2ndfs;

namespace {

constexpr size_t kBytes = 3000;
// Above the size a remote source fetches whole at its first read (1 MiB).
constexpr size_t kLarge = (size_t{1} << 20) + kBytes;

std::string Pattern(char seed, size_t n = kBytes) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + static_cast<char>(i * 7));
  return s;
}

std::string Decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// One bucket "bkt". Every object has the ETag "v<N>" of its N-th write.
class FakeS3 {
 public:
  FakeS3() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    REQUIRE(::listen(listener_, 64) == 0);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~FakeS3() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    acceptor_.join();
    std::lock_guard<std::mutex> lock(mutex_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    for (auto& t : connections_) t.join();
    for (int fd : fds_) ::close(fd);
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void Put(const std::string& key, const std::string& bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++writes_;
    char date[64];
    std::snprintf(date, sizeof date, "Fri, 27 Nov 2026 18:%02d:%02d GMT", writes_ / 60 % 60,
                  writes_ % 60);
    objects_[key] = Object{bytes, "\"v" + std::to_string(writes_) + "\"", date};
  }
  void Remove(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    objects_.erase(key);
  }
  // Every request is answered with this status (0: served).
  void FailWith(int status) { fail_ = status; }
  // HEAD and GET answers name weak ETags (W/"v1"), which If-Match never
  // matches: a client holds a version by If-Unmodified-Since then.
  void UseWeakEtags() { weak_ = true; }
  int if_unmodified_seen() const { return if_unmodified_seen_; }
  // Requests served, by kind.
  int heads() const { return heads_; }
  int lists() const { return lists_; }
  int gets() const { return gets_; }
  int if_match_seen() const { return if_match_seen_; }
  // Listings answer at most this many keys and prefixes a page.
  void SetPageSize(size_t n) { page_size_ = n; }
  std::string last_list() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_list_;
  }

 private:
  struct Object {
    std::string bytes;
    std::string etag;
    std::string last_modified;
  };
  void Accept() {
    for (;;) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      std::lock_guard<std::mutex> lock(mutex_);
      fds_.push_back(fd);
      connections_.emplace_back([this, fd] { Serve(fd); });
    }
  }
  static std::string Header(const std::string& head, const std::string& name) {
    const size_t at = head.find("\r\n" + name + ": ");
    if (at == std::string::npos) return "";
    const size_t from = at + name.size() + 4;
    return head.substr(from, head.find("\r\n", from) - from);
  }
  static std::string Answer(int status, const std::string& headers, const std::string& body,
                            bool head_only = false) {
    return "HTTP/1.1 " + std::to_string(status) + " X\r\n" + headers +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + (head_only ? "" : body);
  }
  std::string Respond(const std::string& head) {
    const std::string method = head.substr(0, head.find(' '));
    const size_t target_at = head.find(' ') + 1;
    const std::string target = head.substr(target_at, head.find(' ', target_at) - target_at);
    const bool is_head = method == "HEAD";
    ++(is_head ? heads_ : target.find('?') != std::string::npos ? lists_ : gets_);
    if (fail_ != 0) return Answer(fail_, "", "", is_head);
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t query = target.find('?');
    const std::string path = Decode(target.substr(0, query));
    if (path.rfind("/bkt", 0) != 0) return Answer(404, "", "<Error><Code>NoSuchBucket</Code>");
    if (query != std::string::npos) {
      const size_t p = target.find("prefix=", query);
      const std::string prefix =
          p == std::string::npos ? "" : Decode(target.substr(p + 7, target.find('&', p) - p - 7));
      // Pages of at most max-keys (else page_size_) keys and prefixes, in
      // key order, continuing after the token (the page's last item).
      size_t limit = page_size_;
      if (const size_t m = target.find("max-keys=", query); m != std::string::npos) {
        limit = std::stoul(target.substr(m + 9));
      }
      std::string after;
      if (const size_t t = target.find("continuation-token=", query); t != std::string::npos) {
        after = Decode(target.substr(t + 19, target.find('&', t) - t - 19));
      }
      std::string items, last_item;
      std::string last_dir;
      size_t count = 0;
      bool truncated = false;
      for (const auto& [key, object] : objects_) {
        if (key.compare(0, prefix.size(), prefix) != 0) continue;
        const size_t slash = key.find('/', prefix.size());
        const std::string item = slash == std::string::npos ? key : key.substr(0, slash + 1);
        if (item == last_dir || (!after.empty() && item <= after)) continue;
        if (count == limit) {
          truncated = true;
          break;
        }
        ++count;
        last_item = item;
        if (slash != std::string::npos) {
          items += "<CommonPrefixes><Prefix>" + item + "</Prefix></CommonPrefixes>";
          last_dir = item;
          continue;
        }
        items += "<Contents><Key>" + key +
                 "</Key><LastModified>2026-11-27T18:00:00.000Z</LastModified>" + "<ETag>&quot;" +
                 object.etag.substr(1, object.etag.size() - 2) + "&quot;</ETag><Size>" +
                 std::to_string(object.bytes.size()) + "</Size></Contents>";
      }
      last_list_ = target;
      std::string xml = "<ListBucketResult><IsTruncated>" +
                        std::string(truncated ? "true" : "false") + "</IsTruncated>";
      if (truncated) xml += "<NextContinuationToken>" + last_item + "</NextContinuationToken>";
      xml += items;
      return Answer(200, "", xml + "</ListBucketResult>");
    }
    const std::string key = path.size() > 5 ? path.substr(5) : "";
    auto it = objects_.find(key);
    if (it == objects_.end()) return Answer(404, "", "<Error><Code>NoSuchKey</Code></Error>");
    const Object& object = it->second;
    const std::string validators = "ETag: " + std::string(weak_ ? "W/" : "") + object.etag +
                                   "\r\nLast-Modified: " + object.last_modified + "\r\n";
    const std::string range = Header(head, "Range");
    if (is_head || range.empty()) return Answer(200, validators, object.bytes, is_head);
    const std::string if_match = Header(head, "If-Match");
    if (!if_match.empty()) {
      ++if_match_seen_;
      if (if_match != object.etag) return Answer(412, "", "");
    }
    const std::string if_unmodified = Header(head, "If-Unmodified-Since");
    if (!if_unmodified.empty()) {
      ++if_unmodified_seen_;
      // Dates here only grow: another one is a later one.
      if (if_unmodified != object.last_modified) return Answer(412, "", "");
    }
    const int64_t first = std::stoll(range.substr(6));
    const int64_t last = std::stoll(range.substr(range.find('-') + 1));
    return Answer(206,
                  validators + "Content-Range: bytes " + std::to_string(first) + "-" +
                      std::to_string(last) + "/" + std::to_string(object.bytes.size()) + "\r\n",
                  object.bytes.substr(first, last - first + 1));
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
      const std::string head = in.substr(0, end + 2);
      in.erase(0, end + 4);
      const std::string out = Respond(head);
      if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) < 0) return;
    }
  }

  int listener_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::atomic<int> fail_{0};
  std::atomic<bool> weak_{false};
  std::atomic<int> if_match_seen_{0}, if_unmodified_seen_{0};
  std::atomic<int> heads_{0}, lists_{0}, gets_{0};
  std::atomic<size_t> page_size_{1000};
  std::string last_list_;
  std::mutex mutex_;  // guards objects_, writes_, fds_, connections_
  std::map<std::string, Object> objects_;
  int writes_ = 0;
  std::vector<int> fds_;
  std::vector<std::thread> connections_;
};

remote::S3Options Options(const FakeS3& server) {
  remote::S3Options o;
  o.endpoint = server.endpoint();
  o.remote.revalidate = 0;  // every question goes to the server
  o.remote.http.retries = 0;
  o.remote.http.timeout = 5;
  return o;
}

std::shared_ptr<source::Tree> OpenTree(const FakeS3& server, const std::string& url) {
  auto tree = remote::OpenS3Tree(url, Options(server));
  REQUIRE(tree.ok());
  return *tree;
}

// What a tree says of `path` in Probe(), Stat() and OpenContainer().
std::vector<Status> Ask(const source::Tree& tree, const std::string& path) {
  std::vector<Status> out;
  out.push_back(tree.Probe(path).status());
  out.push_back(tree.Stat(path).status());
  out.push_back(tree.OpenContainer(path, nullptr).status());
  return out;
}

std::string Read(const source::ByteSource& s, int64_t part, Status* status) {
  std::string out(kBytes, '\0');
  *status = s.Read(part, 0, kBytes, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

}  // namespace

TEST_CASE("a remote container is gone on 404 or 410, never on an outage", "[remote]") {
  auto server = std::make_unique<FakeS3>();
  server->Put("c.b2frame", Pattern('a'));
  auto tree = OpenTree(*server, "s3://bkt/");
  const std::string path = tree->root() + "/c.b2frame";
  for (const Status& s : Ask(*tree, path)) CHECK(s.ok());
  for (const int status : {500, 503, 429, 403}) {
    CAPTURE(status);
    server->FailWith(status);
    for (const Status& s : Ask(*tree, path)) {
      CHECK_FALSE(s.ok());
      CHECK_FALSE(source::IsGone(s));
    }
  }
  for (const int status : {404, 410}) {
    CAPTURE(status);
    server->FailWith(status);
    for (const Status& s : Ask(*tree, path)) CHECK(source::IsGone(s));
  }
  server->FailWith(0);
  for (const Status& s : Ask(*tree, path)) CHECK(s.ok());
  server->Remove("c.b2frame");
  for (const Status& s : Ask(*tree, path)) CHECK(source::IsGone(s));
  for (const Status& s : Ask(*tree, tree->root() + "/never.b2frame")) CHECK(source::IsGone(s));
  // No server at all: the connection is refused.
  server.reset();
  for (const Status& s : Ask(*tree, path)) {
    CHECK_FALSE(s.ok());
    CHECK_FALSE(source::IsGone(s));
  }
}

TEST_CASE("a remote root object is gone on 404, not on a 503", "[remote]") {
  FakeS3 server;
  server.Put("one.b2frame", Pattern('b'));
  auto tree = OpenTree(server, "s3://bkt/one.b2frame");
  for (const Status& s : Ask(*tree, tree->root())) CHECK(s.ok());
  server.FailWith(503);
  for (const Status& s : Ask(*tree, tree->root())) CHECK_FALSE(source::IsGone(s));
  server.FailWith(0);
  server.Remove("one.b2frame");
  for (const Status& s : Ask(*tree, tree->root())) CHECK(source::IsGone(s));
}

TEST_CASE("a remote source reads its version by If-Match, and ESTALE once it changed", "[remote]") {
  FakeS3 server;
  server.Put("c.b2frame", Pattern('c', kLarge));
  auto tree = OpenTree(server, "s3://bkt/");
  auto source = tree->OpenContainer(tree->root() + "/c.b2frame", nullptr);
  REQUIRE(source.ok());
  Status s;
  CHECK(Read(**source, source::kFramePart, &s) == Pattern('c'));
  REQUIRE(s.ok());
  CHECK(server.if_match_seen() == 1);
  server.Put("c.b2frame", Pattern('d', kLarge));  // same size, new ETag
  CHECK(Read(**source, source::kFramePart, &s) != Pattern('d'));
  CHECK(s.error_number() == ESTALE);
  CHECK((*source)->found_stale());
  // A new generation reads the new version.
  auto fresh = tree->OpenContainer(tree->root() + "/c.b2frame", nullptr);
  REQUIRE(fresh.ok());
  CHECK(Read(**fresh, source::kFramePart, &s) == Pattern('d'));
  CHECK(s.ok());
}

TEST_CASE("a version with a weak ETag is read by If-Unmodified-Since, and ESTALE once it changed",
          "[remote]") {
  FakeS3 server;
  server.UseWeakEtags();
  server.Put("c.b2frame", Pattern('k', kLarge));
  auto tree = OpenTree(server, "s3://bkt/");
  auto source = tree->OpenContainer(tree->root() + "/c.b2frame", nullptr);
  REQUIRE(source.ok());
  Status s;
  CHECK(Read(**source, source::kFramePart, &s) == Pattern('k'));
  REQUIRE(s.ok());
  CHECK(server.if_unmodified_seen() == 1);
  CHECK(server.if_match_seen() == 0);
  server.Put("c.b2frame", Pattern('l', kLarge));
  CHECK(Read(**source, source::kFramePart, &s) != Pattern('l'));
  CHECK(s.error_number() == ESTALE);
  CHECK((*source)->found_stale());
}

TEST_CASE("a sparse frame's chunk objects are read at the versions listed at the open",
          "[remote]") {
  FakeS3 server;
  server.Put("s.b2frame/chunks.b2frame", Pattern('e'));
  server.Put("s.b2frame/00000000.chunk", Pattern('f'));
  server.Put("s.b2frame/00000001.chunk", Pattern('g'));
  auto tree = OpenTree(server, "s3://bkt/");
  auto source = tree->OpenContainer(tree->root() + "/s.b2frame", nullptr);
  REQUIRE(source.ok());
  REQUIRE((*source)->sparse());
  Status s;
  CHECK(Read(**source, 0, &s) == Pattern('f'));
  REQUIRE(s.ok());
  // Chunk object 1, not read yet, rewritten (same size) after the open.
  server.Put("s.b2frame/00000001.chunk", Pattern('h'));
  CHECK(Read(**source, 1, &s) != Pattern('h'));
  CHECK(s.error_number() == ESTALE);
  CHECK((*source)->found_stale());
  CHECK(Read(**source, 0, &s) == Pattern('f'));
  CHECK(s.ok());
  CHECK(Read(**source, source::kFramePart, &s) == Pattern('e'));
  CHECK(s.ok());
  // A chunk object that was not there at the open is not this version's.
  server.Put("s.b2frame/00000002.chunk", Pattern('i'));
  Read(**source, 2, &s);
  CHECK(s.error_number() == ENOENT);
}

TEST_CASE("a local container is gone when its path is; other failures are not", "[source]") {
  testing::TempDir dir;
  auto tree = source::MakeLocalTree(dir.path.string());
  const std::string file = (dir.path / "f.b2frame").string();
  { std::ofstream(file) << Pattern('j'); }
  for (const Status& s : Ask(*tree, file)) CHECK(s.ok());
  for (const Status& s : Ask(*tree, (dir.path / "none.b2frame").string())) {
    CHECK(s.error_number() == ENOENT);
    CHECK(source::IsGone(s));
  }
  for (const Status& s : Ask(*tree, file + "/x.b2frame")) {
    CHECK(s.error_number() == ENOTDIR);
    CHECK(source::IsGone(s));
  }
  // A sparse frame whose index cannot be looked at (here: a symlink loop)
  // is an error, not a version without an index (a changed signature).
  const std::string sparse = (dir.path / "s.b2frame").string();
  REQUIRE(::mkdir(sparse.c_str(), 0755) == 0);
  REQUIRE(::symlink("chunks.b2frame", (sparse + "/chunks.b2frame").c_str()) == 0);
  auto probed = tree->Probe(sparse);
  CHECK(probed.status().error_number() == ELOOP);
  CHECK_FALSE(source::IsGone(probed.status()));
  CHECK_FALSE(source::IsGone(Status(EIO, "")));
  CHECK_FALSE(source::IsGone(Status(EMFILE, "")));
  CHECK_FALSE(source::IsGone(Status(ETIMEDOUT, "")));
  CHECK_FALSE(source::IsGone(Status::Ok()));
}

namespace {

std::shared_ptr<source::Tree> OpenTree(const FakeS3& server, const std::string& url,
                                       double revalidate) {
  remote::S3Options o = Options(server);
  o.remote.revalidate = revalidate;
  auto tree = remote::OpenS3Tree(url, o);
  REQUIRE(tree.ok());
  return *tree;
}

}  // namespace

TEST_CASE("an S3 listing's attributes open a container without a HEAD; a small one is one GET",
          "[remote]") {
  FakeS3 server;
  for (char c = 'a'; c < 'k'; ++c) server.Put(std::string(1, c) + ".b2frame", Pattern(c));
  server.Put("big.b2frame", Pattern('z', kLarge));
  auto tree = OpenTree(server, "s3://bkt/", 3600);
  const int lists = server.lists();
  REQUIRE(tree->List(tree->root()).ok());
  const std::string path = tree->root() + "/c.b2frame";
  auto st = tree->Stat(path);
  REQUIRE(st.ok());
  CHECK(st->st_size == static_cast<off_t>(kBytes));
  auto probed = tree->Probe(path);
  REQUIRE(probed.ok());
  auto source = tree->OpenContainer(path, &*probed);
  REQUIRE(source.ok());
  CHECK(server.heads() == 0);
  CHECK(server.lists() == lists);
  // Its first read fetches it whole; later reads cost nothing.
  Status s;
  CHECK(Read(**source, source::kFramePart, &s) == Pattern('c'));
  REQUIRE(s.ok());
  std::string tail(100, '\0');
  REQUIRE((*source)
              ->Read(source::kFramePart, kBytes - 100, 100, reinterpret_cast<uint8_t*>(tail.data()))
              .ok());
  CHECK(tail == Pattern('c').substr(kBytes - 100));
  CHECK(server.gets() == 1);
  // A large one is read by ranges.
  const std::string big = tree->root() + "/big.b2frame";
  auto big_probe = tree->Probe(big);
  REQUIRE(big_probe.ok());
  auto big_source = tree->OpenContainer(big, &*big_probe);
  REQUIRE(big_source.ok());
  CHECK(Read(**big_source, source::kFramePart, &s) == Pattern('z'));
  CHECK(Read(**big_source, source::kFramePart, &s) == Pattern('z'));
  CHECK(server.gets() == 3);
  CHECK(server.heads() == 0);
}

TEST_CASE("a lookup of one name in a stale listing is that name's HEAD, not a new listing",
          "[remote]") {
  FakeS3 server;
  for (char c = 'a'; c < 'k'; ++c) server.Put(std::string(1, c) + ".b2frame", Pattern(c));
  auto tree = OpenTree(server, "s3://bkt/", 0);  // every answer is stale at once
  const int lists = server.lists();
  CHECK(tree->Stat(tree->root() + "/c.b2frame").ok());
  CHECK(server.heads() == 1);
  CHECK(server.lists() == lists);
  // A name that is not an object: is anything below it? Two keys at most.
  CHECK(tree->Stat(tree->root() + "/nope.b2frame").status().error_number() == ENOENT);
  CHECK(server.heads() == 2);
  CHECK(server.lists() == lists + 1);
  CHECK(server.last_list().find("max-keys=2") != std::string::npos);
  CHECK(server.last_list().find("prefix=nope.b2frame%2F") != std::string::npos);
  // readdir lists again.
  CHECK(tree->List(tree->root()).ok());
  CHECK(server.lists() == lists + 2);
}

TEST_CASE("a lookup without its directory's listing asks about that one name", "[remote]") {
  FakeS3 server;
  for (int i = 0; i < 50; ++i) server.Put("d/k" + std::to_string(i) + ".b2frame", Pattern('a'));
  server.Put("d/sub/x.b2frame", Pattern('b'));
  auto tree = OpenTree(server, "s3://bkt/", 3600);
  const int lists = server.lists();
  const std::string d = tree->root() + "/d";
  auto object = tree->Stat(d + "/k7.b2frame");
  REQUIRE(object.ok());
  CHECK(S_ISREG(object->st_mode));
  CHECK(object->st_size == static_cast<off_t>(kBytes));
  CHECK(server.heads() == 1);
  CHECK(server.lists() == lists);
  auto sub = tree->Stat(d + "/sub");
  REQUIRE(sub.ok());
  CHECK(S_ISDIR(sub->st_mode));
  CHECK(server.heads() == 2);
  CHECK(server.lists() == lists + 1);
  CHECK(tree->Stat(d + "/none").status().error_number() == ENOENT);
  CHECK(server.lists() == lists + 2);
  // Each answer is kept for `revalidate` seconds, the missing name's too.
  CHECK(tree->Stat(d + "/k7.b2frame").ok());
  CHECK(tree->Stat(d + "/sub").ok());
  CHECK(tree->Stat(d + "/none").status().error_number() == ENOENT);
  CHECK(server.heads() == 3);
  CHECK(server.lists() == lists + 2);
}

TEST_CASE("a paged listing is read a page at a time, a key and a prefix of one name once",
          "[remote]") {
  FakeS3 server;
  server.SetPageSize(3);
  // In key order: a b x x.b2nd x.c (x/) y z0 .. z5: "x" is a key and a
  // prefix, three items apart.
  for (const char* key : {"d/a", "d/b", "d/x", "d/x.b2nd", "d/x.c", "d/x/1", "d/y"}) {
    server.Put(key, Pattern('q'));
  }
  for (int i = 0; i < 6; ++i) server.Put("d/z" + std::to_string(i), Pattern('r'));
  auto tree = OpenTree(server, "s3://bkt/", 3600);
  const int lists = server.lists();
  auto cursor = tree->OpenList(tree->root() + "/d");
  REQUIRE(cursor.ok());
  CHECK(server.lists() == lists);    // nothing read before the first page is asked for
  std::map<std::string, bool> seen;  // name -> is a directory
  int pages = 0;
  while (!(*cursor)->done()) {
    auto page = (*cursor)->Next();
    REQUIRE(page.ok());
    ++pages;
    CHECK(server.lists() == lists + pages);
    for (const auto& e : *page) {
      CHECK(seen.count(e.name) == 0);
      seen[e.name] = S_ISDIR(e.st.st_mode);
    }
  }
  CHECK(pages == 5);  // 13 items, 3 a page
  CHECK(seen.size() == 12);
  CHECK(seen["x"]);
  CHECK_FALSE(seen["x.b2nd"]);
  CHECK(seen.count("z5") == 1);
  // What the pages said answers lookups, and the whole listing is kept.
  const int heads = server.heads();
  CHECK(tree->Stat(tree->root() + "/d/z3").ok());
  CHECK(S_ISDIR(tree->Stat(tree->root() + "/d/x")->st_mode));
  CHECK(tree->List(tree->root() + "/d")->size() == 12);
  CHECK(server.heads() == heads);
  CHECK(server.lists() == lists + pages);
}

TEST_CASE("the metadata cache makes one request for concurrent lookups of one key", "[remote]") {
  remote::MetaCache<int> cache(16, [](const Result<int>& r) { return r.ok(); });
  std::atomic<int> loads{0};
  auto load = [&]() -> Result<int> {
    ++loads;
    // Held until the other three wait for this answer.
    while (cache.waiters("k") < 3) std::this_thread::yield();
    return 7;
  };
  std::vector<std::thread> threads;
  std::atomic<int> sevens{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      auto v = cache.Get("k", 60, load);
      if (v.ok() && *v == 7) ++sevens;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(loads == 1);
  CHECK(sevens == 4);
}

TEST_CASE("the metadata cache drops the least recently used key, not all of them", "[remote]") {
  remote::MetaCache<int> cache(2, [](const Result<int>&) { return true; });
  int loads = 0;
  auto load = [&]() -> Result<int> { return ++loads; };
  CHECK(*cache.Get("a", 60, load) == 1);
  CHECK(*cache.Get("b", 60, load) == 2);
  CHECK(*cache.Get("a", 60, load) == 1);  // a hit: "a" is now the most recent
  CHECK(*cache.Get("c", 60, load) == 3);  // "b" goes
  CHECK(cache.size() == 2);
  CHECK(*cache.Get("a", 60, load) == 1);
  CHECK(*cache.Get("b", 60, load) == 4);
  // A stale entry is loaded again.
  CHECK(*cache.Get("b", -1, load) == 5);
}

TEST_CASE("small objects fetched whole live in the given block cache, charged and evicted",
          "[remote]") {
  FakeS3 server;
  constexpr size_t kSmall = 200000;
  for (char c = 'a'; c < 'h'; ++c) server.Put(std::string(1, c) + ".b2frame", Pattern(c, kSmall));
  // One shard of 1 MiB: room for a few such objects, not for all seven.
  cache::BlockCache cache(size_t{1} << 20, 1);
  remote::S3Options options = Options(server);
  options.remote.cache = &cache;
  auto opened = remote::OpenS3Tree("s3://bkt/", options);
  REQUIRE(opened.ok());
  const std::shared_ptr<source::Tree> tree = *opened;
  auto read_tail = [&](char c) {
    auto source = tree->OpenContainer(tree->root() + "/" + std::string(1, c) + ".b2frame", nullptr);
    REQUIRE(source.ok());
    std::string tail(100, '\0');
    REQUIRE(
        (*source)
            ->Read(source::kFramePart, kSmall - 100, 100, reinterpret_cast<uint8_t*>(tail.data()))
            .ok());
    CHECK(tail == Pattern(c, kSmall).substr(kSmall - 100));
  };
  const int gets0 = server.gets();
  read_tail('a');
  CHECK(server.gets() - gets0 == 1);
  CHECK(cache.stats().bytes_cached >= kSmall);
  read_tail('a');  // another generation of the same version: from the cache
  CHECK(server.gets() - gets0 == 1);
  for (char c = 'b'; c < 'h'; ++c) read_tail(c);
  CHECK(server.gets() - gets0 == 7);
  CHECK(cache.stats().bytes_cached <= cache.capacity_bytes());
  CHECK(cache.stats().evictions > 0);
  read_tail('a');  // evicted: fetched whole again
  CHECK(server.gets() - gets0 == 8);
  // A new version is another entry: its first read fetches it.
  server.Put("g.b2frame", Pattern('x', kSmall));
  auto source = tree->OpenContainer(tree->root() + "/g.b2frame", nullptr);
  REQUIRE(source.ok());
  std::string head(10, '\0');
  REQUIRE((*source)->Read(source::kFramePart, 0, 10, reinterpret_cast<uint8_t*>(head.data())).ok());
  CHECK(head == Pattern('x', kSmall).substr(0, 10));
  CHECK(server.gets() - gets0 == 9);
}
