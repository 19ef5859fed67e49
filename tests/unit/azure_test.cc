// The pure parts of az:// sources: SharedKey's StringToSign and signature
// (values computed independently with Python's hmac from the spec's
// StringToSign), SAS tokens, where credentials come from, az:// and
// https://ACCOUNT.blob.core.windows.net URLs and endpoints, and List Blobs
// answers (Azurite's, the documented shape, and malformed or hostile ones).
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <random>

#include "azure_auth.h"
#include "b2ndfs/remote/azure_tree.h"
#include "b2ndfs/remote/azure_xml.h"
#include "options.h"
#include "temp_dir.h"

using namespace b2ndfs::remote;

namespace {

// Azurite's (and the Storage Emulator's) published development account.
const char* kDevAccount = "devstoreaccount1";
const char* kDevKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const char* kDate = "Fri, 27 Nov 2026 19:07:33 GMT";

AzureCredentials DevKey(const std::string& account = kDevAccount) {
  AzureCredentials c;
  c.account = account;
  c.key = DecodeBase64(kDevKey).value();
  return c;
}

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// An Azurite 3.37 answer (properties shortened) to List Blobs with
// prefix=p/ and delimiter=/.
const char* kAzuriteListing =
    R"(<?xml version="1.0" encoding="UTF-8" standalone="yes"?><EnumerationResults ServiceEndpoint="http://127.0.0.1:36353/devstoreaccount1" ContainerName="data"><Prefix>p/</Prefix><Marker/><MaxResults>5000</MaxResults><Delimiter>/</Delimiter><Blobs><BlobPrefix><Name>p/a/</Name></BlobPrefix><Blob><Name>p/t.txt</Name><Properties><Creation-Time>Fri, 27 Nov 2026 19:14:00 GMT</Creation-Time><Last-Modified>Fri, 27 Nov 2026 19:14:00 GMT</Last-Modified><Etag>0x1E6007E788B75B0</Etag><Content-Length>4</Content-Length><Content-Type>application/octet-stream</Content-Type><BlobType>BlockBlob</BlobType></Properties></Blob></Blobs><NextMarker/></EnumerationResults>)";

}  // namespace

TEST_CASE("SharedKey signs a ranged, conditional GET as the spec's StringToSign says") {
  AzureRequest r;
  r.method = "GET";
  r.url = "http://127.0.0.1:10000/devstoreaccount1/data/p/a%20b.b2nd";
  r.range = "bytes=0-16383";
  r.if_match = "\"0x8D0000000000001\"";
  r.date = kDate;
  // VERB, six empty Content-*/Date lines, If-Modified-Since, If-Match,
  // If-None-Match, If-Unmodified-Since, Range; x-ms-* sorted; the resource
  // is /ACCOUNT + the encoded path as sent (path-style repeats the account).
  CHECK(AzureStringToSign(r, kDevAccount) ==
        "GET\n\n\n\n\n\n\n\n\"0x8D0000000000001\"\n\n\nbytes=0-16383\n"
        "x-ms-date:Fri, 27 Nov 2026 19:07:33 GMT\nx-ms-version:2021-08-06\n"
        "/devstoreaccount1/devstoreaccount1/data/p/a%20b.b2nd");
  const auto headers = AzureSignedHeaders(r, DevKey());
  REQUIRE(headers.size() == 3);
  CHECK(headers[0] == std::string("x-ms-date: ") + kDate);
  CHECK(headers[1] == "x-ms-version: 2021-08-06");
  // python3: base64(hmac.new(b64decode(key), string_to_sign, sha256))
  CHECK(headers[2] ==
        "Authorization: SharedKey devstoreaccount1:x9J5kbMbm6hW5uLee/zYC2tpE3tL8I6FcYwaqol1SDY=");
}

TEST_CASE("SharedKey signs List Blobs with its query decoded and sorted") {
  AzureRequest r;
  r.method = "GET";
  r.url =
      AzureListUrl("https://myaccount.blob.core.windows.net/mycontainer", "dir one/", "2!80!MDAw");
  CHECK(r.url ==
        "https://myaccount.blob.core.windows.net/mycontainer?restype=container&comp=list"
        "&delimiter=%2F&marker=2%2180%21MDAw&prefix=dir%20one%2F");
  r.date = kDate;
  CHECK(AzureStringToSign(r, "myaccount") ==
        "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Fri, 27 Nov 2026 19:07:33 GMT\n"
        "x-ms-version:2021-08-06\n/myaccount/mycontainer\ncomp:list\ndelimiter:/\n"
        "marker:2!80!MDAw\nprefix:dir one/\nrestype:container");
  const auto headers = AzureSignedHeaders(r, DevKey("myaccount"));
  CHECK(headers.back() ==
        "Authorization: SharedKey myaccount:hhfUukqM20iPrPRODu6cLlMYoy9dDStT+5E9h0TqyJg=");
  // The first page has no marker, the root no prefix.
  CHECK(AzureListUrl("https://a.blob.core.windows.net/c", "", "") ==
        "https://a.blob.core.windows.net/c?restype=container&comp=list&delimiter=%2F");
}

TEST_CASE("A SAS token rides in the query, and nothing signs") {
  AzureCredentials sas;
  sas.account = "acct";
  sas.sas = "sv=2019-12-12&sp=rl&sig=abc%2Bd%3D";
  AzureRequest r{"GET", "https://acct.blob.core.windows.net/c/x", "", "", "", kDate};
  const auto headers = AzureSignedHeaders(r, sas);
  CHECK(headers.size() == 2);  // x-ms-date, x-ms-version
  CHECK(AzureSasUrl(r.url, sas) == r.url + "?sv=2019-12-12&sp=rl&sig=abc%2Bd%3D");
  CHECK(AzureSasUrl(r.url + "?restype=container", sas) ==
        r.url + "?restype=container&sv=2019-12-12&sp=rl&sig=abc%2Bd%3D");
  AzureCredentials anonymous;
  CHECK(AzureSasUrl(r.url, anonymous) == r.url);
  CHECK(AzureSignedHeaders(r, anonymous).size() == 2);
}

TEST_CASE("Base64 round trips and refuses what is not base64") {
  for (const std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    CHECK(DecodeBase64(EncodeBase64(s)).value() == s);
  }
  CHECK(EncodeBase64("foobar") == "Zm9vYmFy");
  CHECK(DecodeBase64(kDevKey).value().size() == 64);
  for (const std::string bad : {"Zm9", "Zm9v YmFy", "Zm=vYmFy", "Zm9vYmF*", "====", "Z==="}) {
    CHECK_FALSE(DecodeBase64(bad).ok());
  }
}

TEST_CASE("Credentials: a file, AZURE_STORAGE_KEY, a SAS token, or no_sign") {
  AzureSettings settings;
  settings.account = "acct";
  SECTION("the key from the environment, for the source's account") {
    auto c = ResolveAzureCredentials(settings, Env({{"AZURE_STORAGE_KEY", kDevKey}}));
    REQUIRE(c.ok());
    CHECK(c->key == DecodeBase64(kDevKey).value());
    CHECK(c->origin == "AZURE_STORAGE_KEY");
    auto other = ResolveAzureCredentials(
        settings, Env({{"AZURE_STORAGE_KEY", kDevKey}, {"AZURE_STORAGE_ACCOUNT", "other"}}));
    REQUIRE_FALSE(other.ok());
    CHECK(other.status().message().find("other") != std::string::npos);
    CHECK(other.status().message().find(kDevKey) == std::string::npos);
    auto bad = ResolveAzureCredentials(settings, Env({{"AZURE_STORAGE_KEY", "s3cr3t!!"}}));
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find("s3cr3t") == std::string::npos);
  }
  SECTION("a SAS token from the environment, its '?' dropped") {
    auto c = ResolveAzureCredentials(settings,
                                     Env({{"AZURE_STORAGE_SAS_TOKEN", "?sv=1&sp=rl&sig=x%2B"}}));
    REQUIRE(c.ok());
    CHECK(c->sas == "sv=1&sp=rl&sig=x%2B");
    CHECK(c->key.empty());
    for (const std::string bad : {"sv=1&sp=rl", "sv=1&sig=a b", "sig=x\nHost: evil", "sig=x#f"}) {
      auto refused = ResolveAzureCredentials(settings, Env({{"AZURE_STORAGE_SAS_TOKEN", bad}}));
      REQUIRE_FALSE(refused.ok());
      CHECK(refused.status().message().find(bad) == std::string::npos);
    }
  }
  SECTION("nothing: EACCES saying what to set; no_sign: anonymous") {
    auto none = ResolveAzureCredentials(settings, Env({}));
    REQUIRE_FALSE(none.ok());
    CHECK(none.status().error_number() == EACCES);
    CHECK(none.status().message().find("AZURE_STORAGE_KEY") != std::string::npos);
    settings.no_sign = true;
    auto anonymous = ResolveAzureCredentials(settings, Env({{"AZURE_STORAGE_KEY", kDevKey}}));
    REQUIRE(anonymous.ok());
    CHECK(anonymous->anonymous());
  }
  SECTION("credentials=FILE comes first") {
    b2ndfs::testing::TempDir dir;
    const std::string file = (dir.path / "az").string();
    auto write = [&](const std::string& text) { std::ofstream(file) << text; };
    settings.credentials_file = file;
    write("# the test account\naccount_name = acct\naccount_key=" + std::string(kDevKey) + "\n");
    auto c = ResolveAzureCredentials(settings, Env({{"AZURE_STORAGE_SAS_TOKEN", "sig=x"}}));
    REQUIRE(c.ok());
    CHECK_FALSE(c->key.empty());
    CHECK(c->origin == "credentials=" + file);
    write("sas_token=sv=1&sig=abc\n");
    c = ResolveAzureCredentials(settings, Env({}));
    REQUIRE(c.ok());
    CHECK(c->sas == "sv=1&sig=abc");
    write("account_name=other\nsas_token=sig=abc\n");
    CHECK_FALSE(ResolveAzureCredentials(settings, Env({})).ok());
    write("account_key=" + std::string(kDevKey) + "\nsas_token=sig=abc\n");
    CHECK_FALSE(ResolveAzureCredentials(settings, Env({})).ok());
    write("AccountKey " + std::string(kDevKey) + "\n");
    auto bad_line = ResolveAzureCredentials(settings, Env({}));
    REQUIRE_FALSE(bad_line.ok());
    CHECK(bad_line.status().message().find("line 1") != std::string::npos);
    CHECK(bad_line.status().message().find(kDevKey) == std::string::npos);
  }
}

TEST_CASE("az:// and https://ACCOUNT.blob.core.windows.net URLs") {
  auto az = ParseAzureUrl("az://Acct1/data/arrays/set");
  REQUIRE(az.ok());
  CHECK(az->account == "acct1");
  CHECK(az->container == "data");
  CHECK(az->prefix == "arrays/set");
  CHECK(az->service.empty());
  CHECK(AzureContainerUrl(*az, "").value() == "https://acct1.blob.core.windows.net/data");

  auto https = ParseAzureUrl("HTTPS://MyAcct.Blob.Core.Windows.Net/data/dir/");
  REQUIRE(https.ok());
  CHECK(https->account == "myacct");
  CHECK(https->prefix == "dir/");
  CHECK(AzureContainerUrl(*https, "").value() == "https://myacct.blob.core.windows.net/data");
  auto china = ParseAzureUrl("https://acct.blob.core.chinacloudapi.cn/c01");
  REQUIRE(china.ok());
  CHECK(AzureContainerUrl(*china, "").value() == "https://acct.blob.core.chinacloudapi.cn/c01");

  CHECK(IsAzureUrl("az://a/b"));
  CHECK(IsAzureUrl("https://acct.blob.core.windows.net/c"));
  CHECK(IsAzureUrl("http://acct.blob.core.usgovcloudapi.net/c"));
  CHECK_FALSE(IsAzureUrl("https://blob.core.windows.net/c"));
  CHECK_FALSE(IsAzureUrl("https://a.b.blob.core.windows.net/c"));
  CHECK_FALSE(IsAzureUrl("https://example.com/acct.blob.core.windows.net/c"));
  CHECK_FALSE(IsAzureUrl("s3://bucket/x"));
  CHECK_FALSE(IsAzureUrl("/data/az://x"));

  // Refused, without echoing a pasted SAS token.
  auto sas = ParseAzureUrl("https://acct.blob.core.windows.net/c01?sv=1&sig=SECRET");
  REQUIRE_FALSE(sas.ok());
  CHECK(sas.status().message().find("SECRET") == std::string::npos);
  CHECK(sas.status().message().find("AZURE_STORAGE_SAS_TOKEN") != std::string::npos);
  for (const std::string bad :
       {"az://acct", "az://acct/", "az://acct/Data", "az://acct/a_b", "az://acct/-ab",
        "az://acct/a--b", "az://a/cont", "az://acct_1/c01", "az://acct/c01#x"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseAzureUrl(bad).ok());
  }
  CHECK(ParseAzureUrl("az://acct/$root").ok());
}

TEST_CASE("endpoint= is the account's blob service, path-style unless it names the account") {
  const AzureUrl url = ParseAzureUrl("az://devstoreaccount1/data").value();
  // Azurite, bare or as a connection string's BlobEndpoint names it.
  CHECK(AzureContainerUrl(url, "http://127.0.0.1:10000").value() ==
        "http://127.0.0.1:10000/devstoreaccount1/data");
  CHECK(AzureContainerUrl(url, "http://127.0.0.1:10000/devstoreaccount1/").value() ==
        "http://127.0.0.1:10000/devstoreaccount1/data");
  // Azure Stack: the account is the host's first label.
  CHECK(AzureContainerUrl(url, "https://devstoreaccount1.blob.local.azurestack.external").value() ==
        "https://devstoreaccount1.blob.local.azurestack.external/data");
  CHECK(AzureContainerUrl(url, "https://devstoreaccount12.example").value() ==
        "https://devstoreaccount12.example/devstoreaccount1/data");
  for (const std::string bad : {"ftp://host", "127.0.0.1:10000", "http://h/?sig=x", "http://"}) {
    CHECK_FALSE(AzureContainerUrl(url, bad).ok());
  }
}

TEST_CASE("List Blobs: Azurite's answer and the documented shape") {
  auto page = ParseListBlobs(kAzuriteListing);
  REQUIRE(page.ok());
  REQUIRE(page->blobs.size() == 1);
  CHECK(page->blobs[0].name == "p/t.txt");
  CHECK(page->blobs[0].size == 4);
  CHECK(page->blobs[0].etag == "\"0x1E6007E788B75B0\"");  // as the ETag header has it
  CHECK(page->blobs[0].mtime == 1795806840);              // 2026-11-27 19:14:00 UTC
  CHECK(page->prefixes == std::vector<std::string>{"p/a/"});
  CHECK(page->next_marker.empty());

  // Names percent-encoded by the service, a quoted ETag, a next page.
  auto encoded = ParseListBlobs(
      "<EnumerationResults><Blobs><Blob><Name Encoded=\"true\">a%EF%BF%BEb</Name>"
      "<Properties><Content-Length>0</Content-Length><Etag>\"0x1\"</Etag></Properties></Blob>"
      "<BlobPrefix><Name Encoded='true'>d%2Fx/</Name></BlobPrefix>"
      "<Blob><Name>c&amp;d</Name><Properties><Content-Length>7</Content-Length></Properties>"
      "</Blob></Blobs><NextMarker>2!84!abc</NextMarker></EnumerationResults>");
  REQUIRE(encoded.ok());
  REQUIRE(encoded->blobs.size() == 2);
  CHECK(encoded->blobs[0].name ==
        "a\xEF\xBF\xBE"
        "b");
  CHECK(encoded->blobs[0].etag == "\"0x1\"");
  CHECK(encoded->blobs[1].name == "c&d");
  CHECK(encoded->blobs[1].etag.empty());
  CHECK(encoded->prefixes == std::vector<std::string>{"d/x/"});
  CHECK(encoded->next_marker == "2!84!abc");
}

TEST_CASE("List Blobs: malformed and hostile answers are EIO without quoting them") {
  const std::string big_marker(5000, 'm');
  for (const std::string& bad : {
           std::string(""),
           std::string("<ListBucketResult/>"),
           std::string("<!DOCTYPE x [<!ENTITY e \"SECRET\">]><EnumerationResults/>"),
           std::string("<EnumerationResults><Blobs><Blob><Name>x</Name></Blob></Blobs>"
                       "</EnumerationResults>"),
           std::string("<EnumerationResults><Blobs><Blob><Name>x</Name><Properties>"
                       "<Content-Length>-1</Content-Length></Properties></Blob></Blobs>"
                       "</EnumerationResults>"),
           std::string("<EnumerationResults><Blobs><Blob><Name>x</Name><Properties>"
                       "<Content-Length>99999999999999999999</Content-Length></Properties>"
                       "</Blob></Blobs></EnumerationResults>"),
           std::string("<EnumerationResults><Blobs><BlobPrefix/></Blobs></EnumerationResults>"),
           "<EnumerationResults><NextMarker>" + big_marker + "</NextMarker></EnumerationResults>",
           std::string(10000, '<'),
           std::string("<EnumerationResults><Blobs>SECRET"),
       }) {
    auto page = ParseListBlobs(bad);
    REQUIRE_FALSE(page.ok());
    CHECK(page.status().error_number() == EIO);
    CHECK(page.status().message().find("SECRET") == std::string::npos);
    CHECK(page.status().message().size() <= 200);
  }
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  CHECK_FALSE(ParseListBlobs("<EnumerationResults>" + deep).ok());
  // Random damage to a good answer: an answer or EIO, never a crash.
  std::mt19937 random(28);
  for (int i = 0; i < 2000; ++i) {
    std::string doc = kAzuriteListing;
    for (int k = 0; k < 4; ++k) doc[random() % doc.size()] = static_cast<char>(random() % 256);
    auto page = ParseListBlobs(doc);
    if (!page.ok()) CHECK(page.status().error_number() == EIO);
  }
}

namespace {

b2ndfs::Result<b2ndfs::app::CommandLine> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "b2ndfs");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return b2ndfs::app::ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("The command line takes az:// with endpoint=, credentials= and no_sign") {
  CHECK(b2ndfs::app::IsRemoteSource("az://acct/c01"));
  CHECK(Parse({"-o", "endpoint=http://127.0.0.1:10000,no_sign,timeout=3", "az://acct/c01", "/m"})
            .ok());
  CHECK(Parse({"-o", "credentials=/etc/az.keys", "az://acct/c01/p", "/m"}).ok());
  CHECK(Parse({"-o", "endpoint=http://h", "https://acct.blob.core.windows.net/c01", "/m"}).ok());
  CHECK_FALSE(Parse({"-o", "region=eu", "az://acct/c01", "/m"}).ok());
  CHECK_FALSE(Parse({"-o", "profile=p", "az://acct/c01", "/m"}).ok());
  CHECK_FALSE(Parse({"-o", "no_sign,credentials=/k", "az://acct/c01", "/m"}).ok());
  // A web server's https:// URL still takes no endpoint=.
  CHECK_FALSE(Parse({"-o", "endpoint=http://h", "https://example.org/c01", "/m"}).ok());
}
