// The AWS credential chain (remote/aws_credentials.h) without a network: the
// order of the sources, what each asks (through a fake AwsHttpSend) and how
// its answer is read, renewal timing on an injected clock, and that no
// secret reaches a message or a description.
#include "b2ndfs/remote/aws_credentials.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "b2ndfs/remote/aws_credential_provider.h"

using namespace b2ndfs;
using namespace b2ndfs::remote;

namespace {

const char* kSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzEXAMPLEKEY";
const char* kToken = "IQoJb3JpZ2luX2VjEXAMPLETOKEN&<>";

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string WriteFile(const std::string& name, const std::string& text, mode_t mode = 0600) {
  const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  const std::string path =
      dir + "/b2ndfs_aws_credentials_test_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
  return path;
}

// Records each request; answers from a queue (or a function).
struct FakeHttp {
  std::vector<AwsHttpRequest> requests;
  std::function<AwsHttpAnswer(const AwsHttpRequest&)> answer;
  AwsHttpSend Send() {
    return [this](const AwsHttpRequest& r) -> Result<AwsHttpAnswer> {
      requests.push_back(r);
      return answer(r);
    };
  }
};

bool HasHeader(const AwsHttpRequest& r, const std::string& header) {
  for (const auto& h : r.headers) {
    if (h == header) return true;
  }
  return false;
}

std::string HeaderValue(const AwsHttpRequest& r, const std::string& name) {
  for (const auto& h : r.headers) {
    if (h.rfind(name + ": ", 0) == 0) return h.substr(name.size() + 2);
  }
  return "";
}

std::string EndpointJson(const std::string& key, const std::string& expiration) {
  return "{\"AccessKeyId\": \"" + key + "\", \"SecretAccessKey\": \"" + std::string(kSecret) +
         "\", \"Token\": \"" + kToken + "\", \"Expiration\": \"" + expiration + "\"}";
}

std::string StsXml(const std::string& key) {
  return "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
         "<AssumeRoleResult><Credentials><AccessKeyId>" +
         key +
         "</AccessKeyId><SecretAccessKey>wJalr/K7+=</SecretAccessKey>"
         "<SessionToken>IQo&amp;&lt;x&gt;&#65;</SessionToken>"
         "<Expiration>2026-11-27T20:00:00Z</Expiration></Credentials>"
         "</AssumeRoleResult></AssumeRoleResponse>";
}

}  // namespace

TEST_CASE("credentials: the chain's order") {
  const std::string creds =
      WriteFile("chain_credentials",
                "[default]\naws_access_key_id=DEFAULTKEY\naws_secret_access_key=DS\n"
                "[src]\naws_access_key_id=SRCKEY\naws_secret_access_key=SS\n");
  const std::string config =
      WriteFile("chain_config",
                "[default]\nregion=eu-central-1\n"
                "[profile role]\nrole_arn=arn:aws:iam::1:role/r\nsource_profile=src\n"
                "[profile chained]\nrole_arn=arn:aws:iam::1:role/outer\nsource_profile=role\n"
                "[profile webp]\nrole_arn=arn:aws:iam::1:role/w\nweb_identity_token_file=/t\n"
                "[profile envrole]\nrole_arn=arn:aws:iam::1:role/e\ncredential_source=Environment\n"
                "[profile bad]\nrole_arn=arn:aws:iam::1:role/b\n"
                "[profile proc]\ncredential_process=/bin/echo hi\n"
                "[profile empty]\nregion=us-west-1\n");
  const std::string nowhere = "/nonexistent/b2ndfs";
  const std::map<std::string, std::string> base = {{"AWS_SHARED_CREDENTIALS_FILE", creds},
                                                   {"AWS_CONFIG_FILE", config}};
  auto describe = [](const AwsSettings& s, const std::map<std::string, std::string>& vars) {
    auto r = ResolveAwsCredentials(s, Env(vars));
    REQUIRE(r.ok());
    REQUIRE(r->source);
    return r->source->Describe();
  };
  AwsSettings none;
  AwsSettings role;
  role.profile = "role";

  CHECK(describe(none, base).find("profile default in") == 0);
  auto env = base;
  env["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  env["AWS_SECRET_ACCESS_KEY"] = kSecret;
  CHECK(describe(none, env) == "the environment (AWS_ACCESS_KEY_ID)");
  // An explicit profile beats the environment; its role beats its keys.
  CHECK(describe(role, env) ==
        "assumed role arn:aws:iam::1:role/r (from profile src in " + creds + " or " + config + ")");
  AwsSettings chained;
  chained.profile = "chained";
  CHECK(describe(chained, base)
            .find("assumed role arn:aws:iam::1:role/outer (from assumed role "
                  "arn:aws:iam::1:role/r") == 0);
  AwsSettings webp;
  webp.profile = "webp";
  CHECK(describe(webp, base) == "web identity (role arn:aws:iam::1:role/w)");
  AwsSettings envrole;
  envrole.profile = "envrole";
  CHECK(describe(envrole, env).find("(from the environment") != std::string::npos);
  AwsSettings bad;
  bad.profile = "bad";
  CHECK(ResolveAwsCredentials(bad, Env(base)).status().error_number() == EINVAL);
  AwsSettings proc;
  proc.profile = "proc";
  CHECK(describe(proc, base) == "credential_process of profile proc");

  // A web identity of the environment beats the profile's static keys but
  // not a profile's role.
  auto web = base;
  web["AWS_WEB_IDENTITY_TOKEN_FILE"] = "/var/run/token";
  web["AWS_ROLE_ARN"] = "arn:aws:iam::1:role/pod";
  CHECK(describe(none, web) == "web identity (role arn:aws:iam::1:role/pod)");
  CHECK(describe(role, web).find("assumed role") == 0);
  // profile= turns the environment's web identity off, as it does its keys.
  AwsSettings src;
  src.profile = "src";
  CHECK(describe(src, web).find("profile src in ") == 0);

  // Nothing in the files: the container endpoint, then IMDS.
  std::map<std::string, std::string> bare = {{"AWS_SHARED_CREDENTIALS_FILE", nowhere},
                                             {"AWS_CONFIG_FILE", nowhere}};
  AwsSettings empty;
  empty.profile = "empty";
  CHECK(describe(empty, base).find("EC2 instance metadata at http://169.254.169.254") == 0);
  CHECK(describe(none, bare).find("EC2 instance metadata at http://169.254.169.254") == 0);
  auto container = bare;
  container["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"] = "/v2/credentials/abc";
  CHECK(describe(none, container) == "container endpoint http://169.254.170.2/v2/credentials/abc");
  container["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"] = "";
  container["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = "http://192.0.2.1/creds";
  CHECK(ResolveAwsCredentials(none, Env(container)).status().error_number() == EACCES);
  auto disabled = bare;
  disabled["AWS_EC2_METADATA_DISABLED"] = "TRUE";
  auto refused = ResolveAwsCredentials(none, Env(disabled));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().error_number() == ENOENT);
  CHECK(refused.status().message().find("no_sign") != std::string::npos);
  auto imds = bare;
  imds["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = "http://127.0.0.1:9/";
  CHECK(describe(none, imds) == "EC2 instance metadata at http://127.0.0.1:9");

  // Endpoints and region.
  auto endpoints = env;
  endpoints["AWS_ENDPOINT_URL"] = "http://all";
  CHECK(ResolveAwsCredentials(none, Env(endpoints))->s3_endpoint == "http://all");
  endpoints["AWS_ENDPOINT_URL_S3"] = "http://s3only";
  CHECK(ResolveAwsCredentials(none, Env(endpoints))->s3_endpoint == "http://s3only");
  CHECK(ResolveAwsCredentials(none, Env(env))->region == "eu-central-1");
  CHECK(ResolveAwsCredentials(empty, Env(base))->region == "us-west-1");

  // No description names a secret.
  CHECK(describe(none, env).find(kSecret) == std::string::npos);
  for (const auto& p : {creds, config}) ::unlink(p.c_str());
}

TEST_CASE("credentials: credential_process, endpoint JSON and STS XML are parsed strictly") {
  auto p = ParseProcessCredentials(
      "{\"Version\": 1, \"AccessKeyId\": \"AK\", \"SecretAccessKey\": \"S\\/K\\u00e9\", "
      "\"SessionToken\": \"T\", \"Expiration\": \"2026-11-27T20:00:00Z\"}");
  REQUIRE(p.ok());
  CHECK(p->keys.access_key_id == "AK");
  CHECK(p->keys.secret_access_key == "S/K\xc3\xa9");
  CHECK(p->keys.session_token == "T");
  CHECK(p->expiration == 1795809600);
  CHECK(ParseProcessCredentials("{\"Version\":1,\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"S\","
                                "\"Expiration\":\"2026-11-27T20:00:00+00:00\"}")
            ->expiration == 1795809600);
  // Long-lived keys: no Expiration.
  CHECK_FALSE(
      ParseProcessCredentials("{\"Version\":1,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\"}")
          ->expiration.has_value());
  const std::string leaky =
      std::string("{\"Version\": 2, \"SecretAccessKey\": \"") + kSecret + "\"}";
  auto v2 = ParseProcessCredentials(leaky);
  REQUIRE_FALSE(v2.ok());
  CHECK(v2.status().message().find(kSecret) == std::string::npos);
  for (const char* bad : {"", "[]", "{\"a\": {\"b\": 1}}", "{\"a\": \"unterminated}", "{\"a\": 1,}",
                          "{\"a\": 1} trailing", "{\"a\": \"\\q\"}"}) {
    CAPTURE(bad);
    CHECK(ParseFlatJson(bad).status().error_number() == EIO);
  }
  auto missing = ParseProcessCredentials(std::string("{\"Version\":1,\"SecretAccessKey\":\"") +
                                         kSecret + "\"}");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find(kSecret) == std::string::npos);
  CHECK_FALSE(ParseEndpointCredentials(EndpointJson("AK", "tomorrow")).ok());

  auto e = ParseEndpointCredentials(EndpointJson("ASIAE", "2026-11-27T20:00:00Z"));
  REQUIRE(e.ok());
  CHECK(e->keys.session_token == kToken);

  auto sts = ParseStsCredentials(StsXml("ASIASTS"));
  REQUIRE(sts.ok());
  CHECK(sts->keys.access_key_id == "ASIASTS");
  CHECK(sts->keys.secret_access_key == "wJalr/K7+=");
  CHECK(sts->keys.session_token == "IQo&<x>A");
  CHECK(sts->expiration == 1795809600);
  CHECK_FALSE(ParseStsCredentials("<!DOCTYPE x [<!ENTITY e \"x\">]>" + StsXml("A")).ok());
  CHECK_FALSE(ParseStsCredentials("<ErrorResponse><Error><Code>AccessDenied</Code></Error>"
                                  "</ErrorResponse>")
                  .ok());
  CHECK_FALSE(ParseStsCredentials(StsXml("A") + StsXml("B")).ok());
  std::string unclosed = StsXml("A");
  unclosed.replace(unclosed.find("</SessionToken>"), 15, "");
  CHECK_FALSE(ParseStsCredentials(unclosed).ok());
  CHECK(FormatExpiration(1795809600) == "2026-11-27T20:00:00Z");
}

TEST_CASE("credentials: IMDSv2 asks for a token, the role, then its keys") {
  FakeHttp http;
  int status = 200;
  http.answer = [&](const AwsHttpRequest& r) {
    if (r.method == "PUT") return AwsHttpAnswer{200, "IMDSTOKEN"};
    if (r.url.back() == '/') return AwsHttpAnswer{200, "my-role\n"};
    return AwsHttpAnswer{status, EndpointJson("ASIAIMDS", "2026-11-27T20:00:00Z")};
  };
  auto source = ImdsCredentialSource("http://127.0.0.1:9/", 1, http.Send());
  auto c = source->Fetch();
  REQUIRE(c.ok());
  CHECK(c->keys.access_key_id == "ASIAIMDS");
  CHECK(c->expiration == 1795809600);
  REQUIRE(http.requests.size() == 3);
  CHECK(http.requests[0].method == "PUT");
  CHECK(http.requests[0].url == "http://127.0.0.1:9/latest/api/token");
  CHECK(HasHeader(http.requests[0], "X-aws-ec2-metadata-token-ttl-seconds: 21600"));
  CHECK(http.requests[1].url == "http://127.0.0.1:9/latest/meta-data/iam/security-credentials/");
  CHECK(HasHeader(http.requests[1], "X-aws-ec2-metadata-token: IMDSTOKEN"));
  CHECK(http.requests[2].url ==
        "http://127.0.0.1:9/latest/meta-data/iam/security-credentials/my-role");
  CHECK(HasHeader(http.requests[2], "X-aws-ec2-metadata-token: IMDSTOKEN"));
  CHECK(source->Describe() == "EC2 instance metadata at http://127.0.0.1:9 (role my-role)");
  status = 401;
  auto denied = source->Fetch();
  CHECK(denied.status().error_number() == EACCES);
  CHECK(denied.status().message().find("IMDSTOKEN") == std::string::npos);
}

TEST_CASE("credentials: the container endpoint sends the token file's current token") {
  const std::string token_file = WriteFile("container_token", "first-token\n");
  FakeHttp http;
  http.answer = [](const AwsHttpRequest&) {
    return AwsHttpAnswer{200, EndpointJson("ASIAECS", "2026-11-27T20:00:00Z")};
  };
  auto source = ContainerCredentialSource("http://169.254.170.23/v1/credentials", "", token_file,
                                          http.Send());
  REQUIRE(source->Fetch().ok());
  WriteFile("container_token", "second-token\n");
  REQUIRE(source->Fetch().ok());
  REQUIRE(http.requests.size() == 2);
  CHECK(http.requests[0].method == "GET");
  CHECK(HasHeader(http.requests[0], "Authorization: first-token"));
  CHECK(HasHeader(http.requests[1], "Authorization: second-token"));
  WriteFile("container_token", "evil\r\nX-Injected: 1\n");
  CHECK(source->Fetch().status().error_number() == EINVAL);
  ::unlink(token_file.c_str());

  CHECK(AllowedContainerUrl("https://example.com/creds"));
  CHECK(AllowedContainerUrl("http://127.0.0.1:8080/creds"));
  CHECK(AllowedContainerUrl("http://localhost/creds"));
  CHECK(AllowedContainerUrl("http://169.254.170.2/creds"));
  CHECK(AllowedContainerUrl("http://[fd00:ec2::23]/creds"));
  CHECK_FALSE(AllowedContainerUrl("http://192.0.2.1/creds"));
  CHECK_FALSE(AllowedContainerUrl("http://127.0.0.1.evil.com/creds"));
  CHECK_FALSE(AllowedContainerUrl("file:///etc/passwd"));
}

TEST_CASE("credentials: STS AssumeRole is signed with the source's keys; web identity is not") {
  FakeHttp http;
  long status = 200;
  http.answer = [&](const AwsHttpRequest&) {
    return status == 200 ? AwsHttpAnswer{200, StsXml("ASIAROLE")}
                         : AwsHttpAnswer{status,
                                         "<ErrorResponse><Error><Code>AccessDenied</Code>"
                                         "</Error></ErrorResponse>"};
  };
  StsRole role{"http://127.0.0.1:9", "eu-west-1", "arn:aws:iam::1:role/r", "sess", "ext-1", 900};
  auto source = AssumeRoleSource(
      role, StaticCredentialSource(AwsCredentials{"AKIASOURCE", kSecret, ""}, "profile src"),
      http.Send());
  auto c = source->Fetch();
  REQUIRE(c.ok());
  CHECK(c->keys.access_key_id == "ASIAROLE");
  REQUIRE(http.requests.size() == 1);
  const AwsHttpRequest& r = http.requests[0];
  CHECK(r.method == "POST");
  CHECK(r.url == "http://127.0.0.1:9");
  CHECK(r.body ==
        "Action=AssumeRole&DurationSeconds=900&ExternalId=ext-1&RoleArn=arn%3Aaws%3Aiam%3A%3A1%"
        "3Arole%2Fr&RoleSessionName=sess&Version=2011-06-15");
  const std::string auth = HeaderValue(r, "Authorization");
  CHECK(auth.find("AWS4-HMAC-SHA256 Credential=AKIASOURCE/") == 0);
  CHECK(auth.find("/eu-west-1/sts/aws4_request") != std::string::npos);
  CHECK(HeaderValue(r, "Host") == "127.0.0.1:9");
  for (const auto& h : r.headers) CHECK(h.find(kSecret) == std::string::npos);
  CHECK(source->Describe() == "assumed role arn:aws:iam::1:role/r (from profile src)");
  status = 403;
  auto denied = source->Fetch();
  REQUIRE_FALSE(denied.ok());
  CHECK(denied.status().error_number() == EACCES);
  CHECK(denied.status().message().find("AccessDenied") != std::string::npos);

  // A source profile that cannot give keys yet: an error, then a retry works.
  struct Flaky : CredentialSource {
    int calls = 0;
    Result<ExpiringCredentials> Fetch() override {
      if (++calls == 1) return Status(EIO, "not yet");
      return ExpiringCredentials{AwsCredentials{"AKIALATER", kSecret, ""}, std::nullopt};
    }
    std::string Describe() const override { return "flaky"; }
  };
  status = 200;
  http.requests.clear();
  auto later = AssumeRoleSource(role, std::make_unique<Flaky>(), http.Send());
  CHECK(later->Fetch().status().message().find("not yet") != std::string::npos);
  CHECK(http.requests.empty());
  REQUIRE(later->Fetch().ok());
  REQUIRE(later->Fetch().ok());  // the source's long-lived keys are fetched once
  REQUIRE(http.requests.size() == 2);
  CHECK(HeaderValue(http.requests[1], "Authorization").find("Credential=AKIALATER/") !=
        std::string::npos);

  const std::string token_file = WriteFile("web_token", "jwt-one\n");
  http.requests.clear();
  StsRole web{"http://127.0.0.1:9", "us-east-1", "arn:aws:iam::1:role/w", "", "", 0};
  auto identity = WebIdentitySource(web, token_file, http.Send());
  REQUIRE(identity->Fetch().ok());
  WriteFile("web_token", "jwt-two\n");
  REQUIRE(identity->Fetch().ok());
  REQUIRE(http.requests.size() == 2);
  CHECK(HeaderValue(http.requests[0], "Authorization").empty());
  CHECK(http.requests[0].body.find("Action=AssumeRoleWithWebIdentity&") == 0);
  CHECK(http.requests[0].body.find("RoleSessionName=b2ndfs-") != std::string::npos);
  CHECK(http.requests[0].body.find("WebIdentityToken=jwt-one") != std::string::npos);
  CHECK(http.requests[1].body.find("WebIdentityToken=jwt-two") != std::string::npos);
  ::unlink(token_file.c_str());
}

TEST_CASE("credentials: credential_process runs the command, bounded in time") {
  auto ok = ProcessCredentialSource(
      "printf '{\"Version\":1,\"AccessKeyId\":\"PK\",\"SecretAccessKey\":\"%s\"}' PS", "p");
  auto c = ok->Fetch();
  REQUIRE(c.ok());
  CHECK(c->keys.access_key_id == "PK");
  CHECK(c->keys.secret_access_key == "PS");
  auto failing = ProcessCredentialSource(std::string("echo ") + kSecret + "; exit 3", "p");
  auto failed = failing->Fetch();
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().message().find("exit status 3") != std::string::npos);
  CHECK(failed.status().message().find(kSecret) == std::string::npos);
  auto slow = ProcessCredentialSource("sleep 30", "p", 0.2);
  CHECK(slow->Fetch().status().error_number() == EIO);
}

namespace {

// Keys "K1", "K2", ... each valid `lifetime` seconds from the clock's now.
class CountingSource : public CredentialSource {
 public:
  CountingSource(const int64_t* now, int64_t lifetime) : now_(now), lifetime_(lifetime) {}
  Result<ExpiringCredentials> Fetch() override {
    if (fail) return Status(EIO, "STS is down");
    ++fetches;
    return ExpiringCredentials{AwsCredentials{"K" + std::to_string(fetches), kSecret, kToken},
                               *now_ + lifetime_};
  }
  std::string Describe() const override { return "counting"; }
  int fetches = 0;
  bool fail = false;

 private:
  const int64_t* now_;
  const int64_t lifetime_;
};

}  // namespace

TEST_CASE("credentials: temporary keys are renewed before they expire, and kept on failure") {
  CHECK(RefreshTime(1000, 1000 + 3600) == 1000 + 3600 - kRefreshMarginSeconds);
  CHECK(RefreshTime(1000, 1020) == 1010);  // short-lived: halfway
  CHECK(RefreshTime(1000, 900) == 900);
  CHECK(RetryDelay(1000, 2000) == 60);
  CHECK(RetryDelay(1000, 1000) == 5);

  int64_t now = 1000;
  auto owned = std::make_unique<CountingSource>(&now, 3600);
  CountingSource* source = owned.get();
  auto created = CredentialProvider::Create(
      std::move(owned), [&now] { return now; }, false);
  REQUIRE(created.ok());
  auto provider = *created;
  CHECK(provider->Current().access_key_id == "K1");
  CHECK(provider->Describe() == "counting, expire " + FormatExpiration(4600) + " (renewed from " +
                                    FormatExpiration(4300) + ")");
  CHECK(provider->Describe().find(kSecret) == std::string::npos);

  now = 4299;
  CHECK_FALSE(provider->RefreshIfDue());
  CHECK(source->fetches == 1);
  now = 4300;  // five minutes before the expiry
  CHECK(provider->RefreshIfDue());
  CHECK(provider->Current().access_key_id == "K2");
  CHECK(provider->expiration() == 4300 + 3600);
  CHECK(provider->refreshes() == 1);

  // A failed renewal keeps the keys that still work and tries again later.
  source->fail = true;
  now = 4300 + 3600 - 300;
  CHECK(provider->RefreshIfDue());
  CHECK(provider->Current().access_key_id == "K2");
  CHECK_FALSE(provider->RefreshIfDue());  // not yet: RetryDelay
  now += RetryDelay(now, 4300 + 3600);
  source->fail = false;
  CHECK(provider->RefreshIfDue());
  CHECK(provider->Current().access_key_id == "K3");
  CHECK(provider->refreshes() == 2);
}

TEST_CASE("credentials: static keys are never renewed") {
  int64_t now = 1000;
  auto created = CredentialProvider::Create(
      StaticCredentialSource(AwsCredentials{"AK", kSecret, ""}, "the environment"),
      [&now] { return now; }, true);
  REQUIRE(created.ok());
  now = 1 << 30;
  CHECK_FALSE((*created)->RefreshIfDue());
  CHECK((*created)->Current().access_key_id == "AK");
  CHECK((*created)->Describe() == "the environment, do not expire");
}

TEST_CASE("credentials: the provider's thread renews while other threads sign") {
  std::atomic<int64_t> now{1000};
  struct Source : CredentialSource {
    explicit Source(std::atomic<int64_t>* clock) : clock_(clock) {}
    Result<ExpiringCredentials> Fetch() override {
      const int n = ++fetches;
      return ExpiringCredentials{AwsCredentials{"K" + std::to_string(n), kSecret, ""},
                                 clock_->load() + 600};
    }
    std::string Describe() const override { return "threaded"; }
    std::atomic<int> fetches{0};
    std::atomic<int64_t>* clock_;
  };
  auto created = CredentialProvider::Create(
      std::make_unique<Source>(&now), [&now] { return now.load(); }, true);
  REQUIRE(created.ok());
  auto provider = *created;
  CHECK(provider->Current().access_key_id == "K1");  // starts the thread; nothing due
  now = 1000 + 600 - kRefreshMarginSeconds;          // due
  std::vector<std::thread> signers;
  std::atomic<bool> bad{false};
  for (int t = 0; t < 4; ++t) {
    signers.emplace_back([&] {
      // Until the thread has renewed: every answer is K1 or K2, never torn.
      while (provider->refreshes() == 0) {
        const std::string key = provider->Current().access_key_id;
        if (key != "K1" && key != "K2") bad = true;
      }
    });
  }
  for (auto& t : signers) t.join();
  CHECK_FALSE(bad);
  CHECK(provider->Current().access_key_id == "K2");
  provider.reset();  // stops and joins the thread
}
