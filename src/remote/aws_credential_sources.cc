// The links of the credential chain (see aws_credentials.h): what each asks
// and how its answer is read. The secrets in an answer go into the returned
// keys and nowhere else: messages name the source and the HTTP status or
// the JSON/XML member that was wrong, never a value.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "b2ndfs/remote/aws_credential_provider.h"
#include "b2ndfs/remote/aws_credentials.h"
#include "b2ndfs/remote/http_client.h"
#include "b2ndfs/remote/s3_xml.h"
#include "b2ndfs/remote/sigv4.h"
#include "b2ndfs/util/text.h"

extern char** environ;

namespace b2ndfs::remote {
namespace {

constexpr size_t kMaxProcessOutput = 64u << 10;
constexpr size_t kMaxTokenFile = 64u << 10;
constexpr double kStsTimeout = 10;
constexpr double kContainerTimeout = 5;

Status HttpFailure(const AwsHttpAnswer& answer, const std::string& what) {
  std::string message = what + " answered HTTP " + std::to_string(answer.status);
  if (const std::string code = S3ErrorCode(answer.body); !code.empty()) {
    message += " (" + code + ")";
  }
  const int e = (answer.status == 401 || answer.status == 403) ? EACCES
                : answer.status == 404                         ? ENOENT
                                                               : EIO;
  return Status(e, message);
}

// A request whose failure (no answer at all) names the service asked.
Result<AwsHttpAnswer> Ask(const AwsHttpSend& send, const AwsHttpRequest& request,
                          const std::string& what) {
  auto answer = send(request);
  if (!answer.ok()) {
    return Status(answer.status().error_number(), what + ": " + answer.status().message());
  }
  return answer;
}

Result<std::string> ReadSmallFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(EACCES, what + " " + path + " cannot be read");
  std::string text(kMaxTokenFile + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxTokenFile) return Status(EIO, what + " " + path + " is too large");
  text = ::b2ndfs::text::Trim(text);
  if (text.empty()) return Status(EACCES, what + " " + path + " is empty");
  return text;
}

bool HeaderSafe(const std::string& value) {
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7F) return false;
  }
  return true;
}

// scheme://host[:port] and the path ("/" when none) of `url`.
void SplitUrl(const std::string& url, std::string* host, std::string* path) {
  const size_t scheme = url.find("://");
  const size_t authority = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t slash = url.find_first_of("/?", authority);
  *host = url.substr(authority, slash == std::string::npos ? std::string::npos : slash - authority);
  if (const size_t at = host->rfind('@'); at != std::string::npos) host->erase(0, at + 1);
  *path = slash == std::string::npos || url[slash] == '?'
              ? "/"
              : url.substr(slash, url.find('?', slash) - slash);
}

std::string AmzDate(int64_t now) {
  const time_t t = static_cast<time_t>(now);
  struct tm tm {};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

class StaticSource final : public CredentialSource {
 public:
  StaticSource(AwsCredentials keys, std::string description)
      : keys_(std::move(keys)), description_(std::move(description)) {}
  Result<ExpiringCredentials> Fetch() override { return ExpiringCredentials{keys_, std::nullopt}; }
  std::string Describe() const override { return description_; }
  bool is_static() const override { return true; }

 private:
  const AwsCredentials keys_;
  const std::string description_;
};

class ProcessSource final : public CredentialSource {
 public:
  ProcessSource(std::string command, std::string profile, double timeout)
      : command_(std::move(command)), profile_(std::move(profile)), timeout_(timeout) {}
  std::string Describe() const override { return "credential_process of profile " + profile_; }

  Result<ExpiringCredentials> Fetch() override {
    const std::string what = Describe();
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      return Status(errno, what + ": pipe: " + std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    const char* argv[] = {"sh", "-c", command_.c_str(), nullptr};
    pid_t pid = 0;
    // Its own process group, so that a timeout ends what the shell started too.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    const int spawned = ::posix_spawn(&pid, "/bin/sh", &actions, &attributes,
                                      const_cast<char* const*>(argv), environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (spawned != 0) {
      ::close(fds[0]);
      return Status(spawned, what + ": cannot start /bin/sh: " + std::strerror(spawned));
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(timeout_ * 1000));
    std::string output;
    bool too_long = false, timed_out = false;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      struct pollfd p = {fds[0], POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      output.append(buffer, static_cast<size_t>(n));
      if (output.size() > kMaxProcessOutput) {
        too_long = true;
        break;
      }
    }
    ::close(fds[0]);
    int status = 0;
    for (;;) {
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid || (done < 0 && errno != EINTR)) break;
      if (timed_out || too_long || std::chrono::steady_clock::now() >= deadline) {
        timed_out = timed_out || !too_long;
        ::kill(-pid, SIGKILL);
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (timed_out) {
      return Status(EIO, what + " did not answer within " + std::to_string(int(timeout_)) + " s");
    }
    if (too_long) return Status(EIO, what + " printed more than 64 KiB");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return Status(EACCES,
                    what + " failed (" +
                        (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                           : std::string("killed by a signal")) +
                        ")");
    }
    auto parsed = ParseProcessCredentials(output);
    if (!parsed.ok()) return Status(EIO, what + ": " + parsed.status().message());
    return parsed;
  }

 private:
  const std::string command_, profile_;
  const double timeout_;
};

class ContainerSource final : public CredentialSource {
 public:
  ContainerSource(std::string url, std::string token, std::string token_file, AwsHttpSend send)
      : url_(std::move(url)),
        token_(std::move(token)),
        token_file_(std::move(token_file)),
        send_(std::move(send)) {}
  std::string Describe() const override { return "container endpoint " + RedactUrl(url_); }

  Result<ExpiringCredentials> Fetch() override {
    const std::string what = Describe();
    AwsHttpRequest request{"GET", url_, {}, "", kContainerTimeout};
    std::string token = token_;
    if (!token_file_.empty()) {  // EKS Pod Identity rotates it: read it each time
      B2NDFS_ASSIGN_OR_RETURN(token,
                              ReadSmallFile(token_file_, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"));
    }
    if (!token.empty()) {
      if (!HeaderSafe(token))
        return Status(EINVAL, what + ": the authorization token has control characters");
      request.headers.push_back("Authorization: " + token);
    }
    B2NDFS_ASSIGN_OR_RETURN(const AwsHttpAnswer answer, Ask(send_, request, what));
    if (answer.status != 200) return HttpFailure(answer, what);
    auto parsed = ParseEndpointCredentials(answer.body);
    if (!parsed.ok()) return Status(EIO, what + ": " + parsed.status().message());
    return parsed;
  }

 private:
  const std::string url_, token_, token_file_;
  const AwsHttpSend send_;
};

class ImdsSource final : public CredentialSource {
 public:
  ImdsSource(std::string endpoint, double timeout, AwsHttpSend send, std::string hint)
      : endpoint_(std::move(endpoint)),
        hint_(std::move(hint)),
        timeout_(timeout),
        send_(std::move(send)) {
    while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
  }
  std::string Describe() const override {
    return "EC2 instance metadata at " + RedactUrl(endpoint_) +
           (role_.empty() ? "" : " (role " + role_ + ")");
  }

  Result<ExpiringCredentials> Fetch() override {
    auto fetched = FetchKeys();
    if (!fetched.ok() && !hint_.empty()) {
      return Status(fetched.status().error_number(), fetched.status().message() + hint_);
    }
    return fetched;
  }

 private:
  Result<ExpiringCredentials> FetchKeys() {
    const std::string what = "the EC2 instance metadata service at " + RedactUrl(endpoint_);
    B2NDFS_ASSIGN_OR_RETURN(const AwsHttpAnswer token,
                            Ask(send_,
                                {"PUT",
                                 endpoint_ + "/latest/api/token",
                                 {"X-aws-ec2-metadata-token-ttl-seconds: 21600"},
                                 "",
                                 timeout_},
                                what));
    if (token.status != 200) return HttpFailure(token, what + " (token)");
    if (token.body.empty() || !HeaderSafe(token.body)) {
      return Status(EIO, what + ": a malformed token");
    }
    const std::string header = "X-aws-ec2-metadata-token: " + token.body;
    const std::string base = endpoint_ + "/latest/meta-data/iam/security-credentials/";
    B2NDFS_ASSIGN_OR_RETURN(const AwsHttpAnswer roles,
                            Ask(send_, {"GET", base, {header}, "", timeout_}, what));
    if (roles.status != 200) return HttpFailure(roles, what + " (role)");
    std::string role = roles.body.substr(0, roles.body.find_first_of("\r\n"));
    while (!role.empty() && std::isspace(static_cast<unsigned char>(role.back()))) role.pop_back();
    for (unsigned char c : role) {
      if (!std::isalnum(c) && std::strchr("+=,.@_-", c) == nullptr) role.clear();
    }
    if (role.empty() || role.size() > 128) {
      return Status(EACCES, what + ": the instance has no IAM role");
    }
    B2NDFS_ASSIGN_OR_RETURN(const AwsHttpAnswer creds,
                            Ask(send_, {"GET", base + role, {header}, "", timeout_}, what));
    if (creds.status != 200) return HttpFailure(creds, what + " (role " + role + ")");
    auto members = ParseFlatJson(creds.body);
    if (!members.ok()) return Status(EIO, what + ": " + members.status().message());
    if (auto code = members->find("Code"); code != members->end() && code->second != "Success") {
      return Status(EACCES, what + " says " + code->second.substr(0, 64));
    }
    auto parsed = ParseEndpointCredentials(creds.body);
    if (!parsed.ok()) return Status(EIO, what + ": " + parsed.status().message());
    role_ = role;
    return parsed;
  }

  std::string endpoint_;
  const std::string hint_;
  const double timeout_;
  const AwsHttpSend send_;
  std::string role_;  // written by Fetch, read by Describe (one thread at a time)
};

// Form-encoded STS Query API parameters (sorted, as any order will do).
std::string StsForm(const std::map<std::string, std::string>& params) {
  std::string body;
  for (const auto& [k, v] : params) {
    if (!body.empty()) body += "&";
    body += AwsUriEncode(k, true) + "=" + AwsUriEncode(v, true);
  }
  return body;
}

std::map<std::string, std::string> RoleParams(const StsRole& role, const char* action,
                                              int64_t now) {
  std::map<std::string, std::string> p = {
      {"Action", action},
      {"Version", "2011-06-15"},
      {"RoleArn", role.role_arn},
      {"RoleSessionName",
       role.session_name.empty() ? "b2ndfs-" + std::to_string(now) : role.session_name}};
  if (role.duration_seconds > 0) p["DurationSeconds"] = std::to_string(role.duration_seconds);
  return p;
}

Result<ExpiringCredentials> StsCall(const AwsHttpSend& send, const StsRole& role,
                                    const std::string& body, const AwsCredentials* signer,
                                    const std::string& what) {
  AwsHttpRequest request{"POST", role.endpoint, {}, body, kStsTimeout};
  const std::string content_type = "application/x-www-form-urlencoded; charset=utf-8";
  request.headers.push_back("Content-Type: " + content_type);
  if (signer != nullptr) {
    std::string host, path;
    SplitUrl(role.endpoint, &host, &path);
    const std::string date = AmzDate(static_cast<int64_t>(::time(nullptr)));
    SigV4Request r;
    r.method = "POST";
    r.path = path;
    r.payload_hash = Sha256Hex(body);
    r.headers = {{"content-type", content_type}, {"host", host}, {"x-amz-date", date}};
    if (!signer->session_token.empty()) {
      r.headers.emplace_back("x-amz-security-token", signer->session_token);
      request.headers.push_back("X-Amz-Security-Token: " + signer->session_token);
    }
    const SigV4Signature s = SignV4(r, *signer, role.region, "sts", date);
    request.headers.push_back("Host: " + host);
    request.headers.push_back("X-Amz-Date: " + date);
    request.headers.push_back("Authorization: " + s.authorization);
  }
  B2NDFS_ASSIGN_OR_RETURN(const AwsHttpAnswer answer,
                          Ask(send, request, what + ": STS at " + RedactUrl(role.endpoint)));
  if (answer.status != 200)
    return HttpFailure(answer, what + ": STS at " + RedactUrl(role.endpoint));
  auto parsed = ParseStsCredentials(answer.body);
  if (!parsed.ok()) return Status(EIO, what + ": " + parsed.status().message());
  return parsed;
}

class AssumeRole final : public CredentialSource {
 public:
  AssumeRole(StsRole role, std::unique_ptr<CredentialSource> base, AwsHttpSend send)
      : role_(std::move(role)), base_(std::move(base)), send_(std::move(send)) {}
  std::string Describe() const override {
    return "assumed role " + role_.role_arn + " (from " + base_->Describe() + ")";
  }
  Result<ExpiringCredentials> Fetch() override {
    // The source's keys, fetched again when they are due as a provider's
    // would be (this fetch runs on the renewal thread of the mount's provider).
    const int64_t now = static_cast<int64_t>(::time(nullptr));
    if (!base_keys_ ||
        (base_keys_->expiration && now >= RefreshTime(base_fetched_at_, *base_keys_->expiration))) {
      auto fetched = base_->Fetch();
      if (!fetched.ok()) {
        if (!base_keys_ || (base_keys_->expiration && now >= *base_keys_->expiration)) {
          return Status(fetched.status().error_number(),
                        Describe() + ": " + fetched.status().message());
        }
      } else {
        base_keys_ = std::move(*fetched);
        base_fetched_at_ = now;
      }
    }
    auto params = RoleParams(role_, "AssumeRole", now);
    if (!role_.external_id.empty()) params["ExternalId"] = role_.external_id;
    return StsCall(send_, role_, StsForm(params), &base_keys_->keys, Describe());
  }

 private:
  const StsRole role_;
  const std::unique_ptr<CredentialSource> base_;
  std::optional<ExpiringCredentials> base_keys_;  // nullopt until fetched
  int64_t base_fetched_at_ = 0;
  const AwsHttpSend send_;
};

class WebIdentity final : public CredentialSource {
 public:
  WebIdentity(StsRole role, std::string token_file, AwsHttpSend send)
      : role_(std::move(role)), token_file_(std::move(token_file)), send_(std::move(send)) {}
  std::string Describe() const override { return "web identity (role " + role_.role_arn + ")"; }
  Result<ExpiringCredentials> Fetch() override {
    // Kubernetes rotates the projected token: read it on every fetch.
    B2NDFS_ASSIGN_OR_RETURN(const std::string token,
                            ReadSmallFile(token_file_, "the web identity token file"));
    auto params =
        RoleParams(role_, "AssumeRoleWithWebIdentity", static_cast<int64_t>(::time(nullptr)));
    params["WebIdentityToken"] = token;
    return StsCall(send_, role_, StsForm(params), nullptr, Describe());
  }

 private:
  const StsRole role_;
  const std::string token_file_;
  const AwsHttpSend send_;
};

}  // namespace

bool AllowedContainerUrl(const std::string& url) {
  const std::string lower = ::b2ndfs::text::Lower(url);
  if (lower.rfind("https://", 0) == 0) return true;
  if (lower.rfind("http://", 0) != 0) return false;
  std::string host, path;
  SplitUrl(lower, &host, &path);
  if (host.rfind('[', 0) == 0) {
    host = host.substr(1, host.find(']') - 1);
    return host == "::1" || host == "fd00:ec2::23";
  }
  host = host.substr(0, host.find(':'));
  if (host == "localhost" || host == "169.254.170.2" || host == "169.254.170.23") return true;
  // 127.0.0.0/8, written as four decimal numbers.
  unsigned a, b, c, d;
  char tail;
  return std::sscanf(host.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4 && a == 127 &&
         b < 256 && c < 256 && d < 256;
}

std::unique_ptr<CredentialSource> StaticCredentialSource(AwsCredentials keys,
                                                         std::string description) {
  return std::make_unique<StaticSource>(std::move(keys), std::move(description));
}
std::unique_ptr<CredentialSource> ProcessCredentialSource(std::string command, std::string profile,
                                                          double timeout) {
  return std::make_unique<ProcessSource>(std::move(command), std::move(profile), timeout);
}
std::unique_ptr<CredentialSource> ContainerCredentialSource(std::string url, std::string token,
                                                            std::string token_file,
                                                            AwsHttpSend send) {
  return std::make_unique<ContainerSource>(std::move(url), std::move(token), std::move(token_file),
                                           std::move(send));
}
std::unique_ptr<CredentialSource> ImdsCredentialSource(std::string endpoint, double timeout,
                                                       AwsHttpSend send, std::string hint) {
  return std::make_unique<ImdsSource>(std::move(endpoint), timeout, std::move(send),
                                      std::move(hint));
}
std::unique_ptr<CredentialSource> AssumeRoleSource(StsRole role,
                                                   std::unique_ptr<CredentialSource> base,
                                                   AwsHttpSend send) {
  return std::make_unique<AssumeRole>(std::move(role), std::move(base), std::move(send));
}
std::unique_ptr<CredentialSource> WebIdentitySource(StsRole role, std::string token_file,
                                                    AwsHttpSend send) {
  return std::make_unique<WebIdentity>(std::move(role), std::move(token_file), std::move(send));
}

}  // namespace b2ndfs::remote
