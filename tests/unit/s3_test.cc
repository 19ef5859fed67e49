// The pure parts of s3:// sources: ListObjectsV2 answers (AWS's documented
// examples, s3rver's, and malformed or hostile ones), s3:// URLs and bucket
// addressing, the signed headers of a request (AWS's GetObject example byte
// for byte), and credentials from the environment and INI files.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>

#include "b2ndfs/remote/aws_credentials.h"
#include "b2ndfs/remote/s3_tree.h"
#include "b2ndfs/remote/s3_xml.h"

using namespace b2ndfs::remote;

namespace {

// The "Listing keys using the prefix and delimiter" example of the
// ListObjectsV2 reference.
const char* kAwsDelimiterExample = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>example-bucket</Name>
  <Prefix>photos/2006/</Prefix>
  <KeyCount>3</KeyCount>
  <MaxKeys>1000</MaxKeys>
  <Delimiter>/</Delimiter>
  <IsTruncated>false</IsTruncated>
  <Contents>
    <Key>photos/2006/</Key>
    <LastModified>2016-04-30T23:51:29.000Z</LastModified>
    <ETag>"d41d8cd98f00b204e9800998ecf8427e"</ETag>
    <Size>0</Size>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <CommonPrefixes>
    <Prefix>photos/2006/February/</Prefix>
  </CommonPrefixes>
  <CommonPrefixes>
    <Prefix>photos/2006/January/</Prefix>
  </CommonPrefixes>
</ListBucketResult>)";

// The continuation example of the same reference (IsTruncated, a token).
const char* kAwsTruncatedExample = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name>
  <Prefix></Prefix>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <KeyCount>3</KeyCount>
  <MaxKeys>3</MaxKeys>
  <IsTruncated>true</IsTruncated>
  <Contents>
    <Key>happyface.jpg</Key>
    <LastModified>2014-11-21T19:40:05.000Z</LastModified>
    <ETag>"70ee1738b6b21e2c8a43f3a5ab0eee71"</ETag>
    <Size>11</Size>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <Contents>
    <Key>test.jpg</Key>
    <LastModified>2014-11-21T19:40:05.000Z</LastModified>
    <ETag>"70ee1738b6b21e2c8a43f3a5ab0eee71"</ETag>
    <Size>11</Size>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
</ListBucketResult>)";

// What s3rver 3.7 answers (one line, &quot; in ETags, a key with a space).
const char* kS3rver =
    R"(<?xml version="1.0" encoding="UTF-8"?>)"
    "\n"
    R"(<ListBucketResult xmlns="http://doc.s3.amazonaws.com/2006-03-01/"><Name>bkt</Name><Prefix></Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter><IsTruncated>false</IsTruncated><Contents><Key>top sp+.txt</Key><LastModified>2026-11-23T06:20:03.000Z</LastModified><ETag>&quot;777c5b6951ba24faf4c4ee990c79ead2&quot;</ETag><Size>22</Size><StorageClass>STANDARD</StorageClass></Contents><CommonPrefixes><Prefix>dir/</Prefix></CommonPrefixes></ListBucketResult>)";

const std::string kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string WriteFile(const std::string& name, const std::string& text, mode_t mode) {
  const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  const std::string path = dir + "/b2ndfs_s3_test_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
  return path;
}

}  // namespace

TEST_CASE("ListObjectsV2: AWS's delimiter example") {
  auto page = ParseListObjectsV2(kAwsDelimiterExample);
  REQUIRE(page.ok());
  CHECK_FALSE(page->truncated);
  REQUIRE(page->contents.size() == 1);
  CHECK(page->contents[0] ==
        S3Object{"photos/2006/", 0, 1462060289, "\"d41d8cd98f00b204e9800998ecf8427e\""});
  CHECK(page->common_prefixes ==
        std::vector<std::string>{"photos/2006/February/", "photos/2006/January/"});
}

TEST_CASE("ListObjectsV2: AWS's continuation example") {
  auto page = ParseListObjectsV2(kAwsTruncatedExample);
  REQUIRE(page.ok());
  CHECK(page->truncated);
  CHECK(page->next_token == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  REQUIRE(page->contents.size() == 2);
  CHECK(page->contents[1].key == "test.jpg");
  CHECK(page->contents[1].size == 11);
  CHECK(page->common_prefixes.empty());
}

TEST_CASE("ListObjectsV2: s3rver's answer, entities, url encoding") {
  auto page = ParseListObjectsV2(kS3rver);
  REQUIRE(page.ok());
  REQUIRE(page->contents.size() == 1);
  CHECK(page->contents[0].key == "top sp+.txt");
  CHECK(page->contents[0].etag == "\"777c5b6951ba24faf4c4ee990c79ead2\"");
  CHECK(page->common_prefixes == std::vector<std::string>{"dir/"});

  auto encoded = ParseListObjectsV2(
      "<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>a%20b%2Fc</Key>"
      "<Size>1</Size></Contents><CommonPrefixes><Prefix>d%C3%A9/</Prefix></CommonPrefixes>"
      "</ListBucketResult>");
  REQUIRE(encoded.ok());
  CHECK(encoded->contents[0].key == "a b/c");
  CHECK(encoded->common_prefixes[0] == "d\xc3\xa9/");

  auto refs = ParseListObjectsV2(
      "<!-- hi --><ListBucketResult><Contents><Key>&lt;&#65;&#x42;&amp;&apos;<![CDATA[<x>]]></Key>"
      "<Size>0</Size></Contents></ListBucketResult>\n");
  REQUIRE(refs.ok());
  CHECK(refs->contents[0].key == "<AB&'<x>");
}

TEST_CASE("ListObjectsV2: malformed and hostile answers are EIO") {
  const char* bad[] = {
      "",
      "not xml",
      "<ListBucketResult>",
      "<ListBucketResult></ListBucket>",
      "<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>",    // no Size
      "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",  // no Key
      "<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
      "<ListBucketResult><Contents><Key>a</Key><Size>99999999999999999999</Size></Contents>"
      "</ListBucketResult>",
      "<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>",
      "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",  // no token
      "<ListBucketResult><CommonPrefixes></CommonPrefixes></ListBucketResult>",
      "<Error><Code>AccessDenied</Code></Error>",
      "<!DOCTYPE x [<!ENTITY a \"b\">]><ListBucketResult>&a;</ListBucketResult>",
      "<ListBucketResult>&unknown;</ListBucketResult>",
      "<ListBucketResult>&#0;</ListBucketResult>",
      "<ListBucketResult>&#x110000;</ListBucketResult>",
      "<ListBucketResult>&#xD800;</ListBucketResult>",
      "<ListBucketResult>&amp</ListBucketResult>",
      "<ListBucketResult a=b></ListBucketResult>",
      "<ListBucketResult a=\"b></ListBucketResult>",
      "<ListBucketResult></ListBucketResult><Other/>",
      "<ListBucketResult></ListBucketResult>trailing",
      "<ListBucketResult><![CDATA[x</ListBucketResult>",
      "<ListBucketResult><!-- x</ListBucketResult>",
      "<?xml version=\"1.0\"",
  };
  for (const char* text : bad) {
    INFO(text);
    auto page = ParseListObjectsV2(text);
    REQUIRE_FALSE(page.ok());
    CHECK(page.status().error_number() == EIO);
  }
  // Deep nesting stops at the depth limit, without exhausting the stack.
  std::string deep = "<ListBucketResult>";
  for (int i = 0; i < 100000; ++i) deep += "<a>";
  CHECK_FALSE(ParseListObjectsV2(deep).ok());
  // Every truncation of a good answer is refused or parses: never a crash.
  const std::string good = kAwsDelimiterExample;
  for (size_t n = 0; n < good.size(); ++n) {
    auto page = ParseListObjectsV2(good.substr(0, n));
    CHECK_FALSE(page.ok());
  }
}

TEST_CASE("ListObjectsV2: random mutations are parsed or refused with EIO") {
  // Under the sanitizer pass (scripts/test.sh) this also proves no
  // out-of-bounds access on bytes a server made up.
  std::mt19937 random(20261123);
  const std::string seeds[] = {kAwsDelimiterExample, kAwsTruncatedExample, kS3rver};
  const char kTokens[] = "<>/&;#x=\"'![]?-CDATA";
  size_t parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = seeds[i % 3];
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = random() % text.size();
      switch (random() % 4) {
        case 0:
          text[at] = kTokens[random() % (sizeof kTokens - 1)];
          break;
        case 1:
          text.erase(at, 1 + random() % 16);
          break;
        case 2:
          text.insert(at, text.substr(random() % text.size(), 1 + random() % 32));
          break;
        default:
          text[at] = static_cast<char>(random() % 256);
      }
    }
    auto page = ParseListObjectsV2(text);
    if (page.ok()) {
      ++parsed;
      for (const auto& o : page->contents) CHECK(o.size >= 0);
    } else {
      CHECK(page.status().error_number() == EIO);
    }
  }
  // Most single edits inside text still parse: the mutations reach past the
  // first check.
  CHECK(parsed > 1000);
}

TEST_CASE("S3 error documents: the code, and the bucket's region when named") {
  // AWS's answer to a request signed for the wrong region.
  const std::string wrong_region =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AuthorizationHeaderMalformed"
      "</Code><Message>The authorization header is malformed; the region 'us-east-1' is wrong; "
      "expecting 'eu-west-1'</Message><Region>eu-west-1</Region><RequestId>X</RequestId></Error>";
  CHECK(S3ErrorCode(wrong_region) == "AuthorizationHeaderMalformed");
  CHECK(S3ErrorRegion(wrong_region) == "eu-west-1");
  CHECK(S3ErrorRegion("<Error><Code>NoSuchKey</Code></Error>").empty());
  CHECK(S3ErrorRegion("<Region>eu west 1; rm -rf</Region>").empty());  // not a region name
  CHECK(S3ErrorRegion("<Region></Region>").empty());
  CHECK(ValidRegionName("ap-southeast-2") == "ap-southeast-2");
  CHECK(ValidRegionName(std::string(40, 'a')).empty());
}

TEST_CASE("ParseIso8601") {
  CHECK(ParseIso8601("2009-10-12T17:50:30.000Z") == 1255369830);
  CHECK(ParseIso8601("1970-01-01T00:00:00Z") == 0);
  CHECK_FALSE(ParseIso8601("2009-10-12T17:50:30"));
  CHECK_FALSE(ParseIso8601("2009-10-12T17:50:30.Z"));
  CHECK_FALSE(ParseIso8601("yesterday"));
}

TEST_CASE("s3:// URLs") {
  auto u = ParseS3Url("s3://my-bucket/some/prefix/");
  REQUIRE(u.ok());
  CHECK(u->bucket == "my-bucket");
  CHECK(u->prefix == "some/prefix/");
  u = ParseS3Url("s3://bkt");
  REQUIRE(u.ok());
  CHECK(u->prefix.empty());
  CHECK_FALSE(ParseS3Url("s3://").ok());
  CHECK_FALSE(ParseS3Url("s3://ab").ok());
  CHECK_FALSE(ParseS3Url("s3://a b c/").ok());
  CHECK_FALSE(ParseS3Url("s3://bucket/x?versionId=1").ok());
  CHECK_FALSE(ParseS3Url("http://bucket/x").ok());
}

TEST_CASE("bucket addressing: path-style with an endpoint, virtual-hosted on AWS") {
  CHECK(*S3BucketUrl("bkt", "http://127.0.0.1:9000/", "us-east-1") == "http://127.0.0.1:9000/bkt");
  CHECK(*S3BucketUrl("bkt", "https://s3.example.org/base", "x") ==
        "https://s3.example.org/base/bkt");
  CHECK(*S3BucketUrl("my-bucket", "", "eu-west-1") ==
        "https://my-bucket.s3.eu-west-1.amazonaws.com");
  CHECK(*S3BucketUrl("my.dotted.bucket", "", "us-east-1") ==
        "https://s3.us-east-1.amazonaws.com/my.dotted.bucket");
  CHECK(*S3BucketUrl("Old_Bucket", "", "us-east-1") ==
        "https://s3.us-east-1.amazonaws.com/Old_Bucket");
  CHECK_FALSE(S3BucketUrl("bkt", "ftp://host", "us-east-1").ok());
  CHECK_FALSE(S3BucketUrl("bkt", "", "eu-west-1.evil.com/").ok());

  CHECK(S3ListUrl("http://127.0.0.1:9000/bkt", "a b/", "") ==
        "http://127.0.0.1:9000/bkt?delimiter=%2F&list-type=2&prefix=a%20b%2F");
  CHECK(S3ListUrl("https://b.s3.us-east-1.amazonaws.com", "", "1ueG/x=") ==
        "https://b.s3.us-east-1.amazonaws.com/?continuation-token=1ueG%2Fx%3D&delimiter=%2F&"
        "list-type=2&prefix=");
}

TEST_CASE("signed headers: AWS's GetObject example from the URL as sent") {
  const AwsCredentials c{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  const auto headers = S3SignedHeaders("GET", "https://examplebucket.s3.amazonaws.com/test.txt",
                                       "bytes=0-9", c, "us-east-1", "20130524T000000Z");
  CHECK(headers ==
        std::vector<std::string>{
            "Host: examplebucket.s3.amazonaws.com", "x-amz-content-sha256: " + kEmptySha256,
            "x-amz-date: 20130524T000000Z",
            "Authorization: AWS4-HMAC-SHA256 "
            "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"});
  // The secret never appears; a session token is sent and signed.
  const AwsCredentials t{"AKID", "SECRETSECRET", "TOKEN123"};
  const auto signed_token = S3SignedHeaders("HEAD", "http://u:p@127.0.0.1:9000/bkt/a%20b?x=1", "",
                                            t, "us-east-1", "20130524T000000Z");
  bool token = false;
  for (const auto& h : signed_token) {
    CHECK(h.find("SECRETSECRET") == std::string::npos);
    if (h == "x-amz-security-token: TOKEN123") token = true;
    if (h.rfind("Host: ", 0) == 0) CHECK(h == "Host: 127.0.0.1:9000");
    if (h.rfind("Authorization: ", 0) == 0) {
      CHECK(h.find("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") !=
            std::string::npos);
    }
  }
  CHECK(token);
}

TEST_CASE("AWS INI files") {
  auto ini = ParseIni(
      "# comment\n[default]\naws_access_key_id = AK\r\nAWS_Secret_Access_Key=SK\n; c\n\n"
      "[profile other]\nregion = eu-west-1\ns3 =\n  max_concurrent_requests = 20\n");
  REQUIRE(ini.ok());
  CHECK((*ini)["default"]["aws_access_key_id"] == "AK");
  CHECK((*ini)["default"]["aws_secret_access_key"] == "SK");
  CHECK((*ini)["profile other"]["region"] == "eu-west-1");
  CHECK((*ini)["profile other"].count("max_concurrent_requests") == 0);
  // Errors name the line, never its text (it may hold a secret).
  auto bad = ParseIni("[default]\nwJalrXUtnFEMI-secret-without-equals\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("line 2") != std::string::npos);
  CHECK(bad.status().message().find("wJalr") == std::string::npos);
  CHECK_FALSE(ParseIni("key = value\n").ok());
  CHECK_FALSE(ParseIni("[unclosed\n").ok());
}

TEST_CASE("credentials: files, profiles, environment, anonymous; region") {
  const std::string shared =
      WriteFile("credentials",
                "[default]\naws_access_key_id=DEFAULTKEY\naws_secret_access_key=DS\n"
                "[work]\naws_access_key_id=WORKKEY\naws_secret_access_key=WS\n"
                "aws_session_token=WT\n",
                0600);
  const std::string config = WriteFile(
      "config", "[default]\nregion=eu-central-1\n[profile work]\nregion=ap-south-1\n", 0600);
  const std::string open_file =
      WriteFile("open", "[default]\naws_access_key_id=K\naws_secret_access_key=S\n", 0644);
  const std::string nowhere = "/nonexistent/b2ndfs/credentials";
  std::map<std::string, std::string> base = {{"AWS_SHARED_CREDENTIALS_FILE", shared},
                                             {"AWS_CONFIG_FILE", config}};

  // The shared file's default profile, and its region from the config file.
  auto id = ResolveAwsIdentity(AwsSettings{}, Env(base));
  REQUIRE(id.ok());
  CHECK(id->credentials->access_key_id == "DEFAULTKEY");
  CHECK(id->region == "eu-central-1");

  // The environment beats the file's default profile; AWS_REGION beats the config.
  auto env = base;
  env["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  env["AWS_SECRET_ACCESS_KEY"] = "ENVSECRET";
  env["AWS_SESSION_TOKEN"] = "ENVTOKEN";
  env["AWS_REGION"] = "us-west-2";
  id = ResolveAwsIdentity(AwsSettings{}, Env(env));
  REQUIRE(id.ok());
  CHECK(id->credentials->access_key_id == "ENVKEY");
  CHECK(id->credentials->session_token == "ENVTOKEN");
  CHECK(id->region == "us-west-2");
  CHECK(id->origin.find("ENVSECRET") == std::string::npos);

  // An explicit profile= beats the environment; region= beats everything.
  AwsSettings work;
  work.profile = "work";
  id = ResolveAwsIdentity(work, Env(env));
  REQUIRE(id.ok());
  CHECK(id->credentials->access_key_id == "WORKKEY");
  CHECK(id->credentials->session_token == "WT");
  work.region = "sa-east-1";
  CHECK(ResolveAwsIdentity(work, Env(env))->region == "sa-east-1");
  // ... its region from [profile work] when nothing else says.
  work.region.clear();
  CHECK(ResolveAwsIdentity(work, Env(base))->region == "ap-south-1");
  // AWS_PROFILE picks the profile when no keys are in the environment.
  auto by_env = base;
  by_env["AWS_PROFILE"] = "work";
  CHECK(ResolveAwsIdentity(AwsSettings{}, Env(by_env))->credentials->access_key_id == "WORKKEY");

  // credentials=FILE: its own profiles; a file everyone can read is refused.
  AwsSettings file;
  file.credentials_file = shared;
  id = ResolveAwsIdentity(file, Env(env));
  REQUIRE(id.ok());
  CHECK(id->credentials->access_key_id == "DEFAULTKEY");
  file.credentials_file = open_file;
  auto refused = ResolveAwsIdentity(file, Env(base));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().error_number() == EACCES);
  file.credentials_file = nowhere;
  CHECK(ResolveAwsIdentity(file, Env(base)).status().error_number() == ENOENT);

  // Missing pieces.
  AwsSettings missing;
  missing.profile = "nosuch";
  CHECK_FALSE(ResolveAwsIdentity(missing, Env(base)).ok());
  auto half = base;
  half["AWS_ACCESS_KEY_ID"] = "ONLYKEY";
  CHECK_FALSE(ResolveAwsIdentity(AwsSettings{}, Env(half)).ok());
  auto none = ResolveAwsIdentity(
      AwsSettings{}, Env({{"AWS_SHARED_CREDENTIALS_FILE", nowhere}, {"AWS_CONFIG_FILE", nowhere}}));
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("no_sign") != std::string::npos);

  // no_sign: anonymous, us-east-1 by default.
  AwsSettings anonymous;
  anonymous.no_sign = true;
  id = ResolveAwsIdentity(
      anonymous, Env({{"AWS_SHARED_CREDENTIALS_FILE", nowhere}, {"AWS_CONFIG_FILE", nowhere}}));
  REQUIRE(id.ok());
  CHECK_FALSE(id->credentials.has_value());
  CHECK(id->region == "us-east-1");

  for (const auto& p : {shared, config, open_file}) ::unlink(p.c_str());
}
