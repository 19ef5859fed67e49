// SigV4 against AWS's published examples, byte for byte: the S3 API
// reference's GetObject with Range ("Authenticating Requests: Using the
// Authorization Header", examplebucket/test.txt, 20130524) and the SigV4 test
// suite's get-vanilla-query-order-key-case (query parameters sorted).
#include "b2ndfs/remote/sigv4.h"

#include <catch2/catch.hpp>

using namespace b2ndfs::remote;

namespace {
const std::string kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
}

TEST_CASE("SHA-256 of nothing") { CHECK(Sha256Hex("") == kEmptySha256); }

TEST_CASE("S3 GetObject example with Range") {
  SigV4Request r;
  r.method = "GET";
  r.path = "/test.txt";
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"Range", "bytes=0-9"},
               {"x-amz-content-sha256", kEmptySha256},
               {"x-amz-date", "20130524T000000Z"}};
  r.payload_hash = kEmptySha256;
  const AwsCredentials c{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  const SigV4Signature s = SignV4(r, c, "us-east-1", "s3", "20130524T000000Z");
  CHECK(s.canonical_request ==
        "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
        "x-amz-content-sha256:" +
            kEmptySha256 +
            "\nx-amz-date:20130524T000000Z\n\n"
            "host;range;x-amz-content-sha256;x-amz-date\n" +
            kEmptySha256);
  CHECK(s.string_to_sign ==
        "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
        "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  CHECK(s.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  CHECK(s.authorization ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  // Any change to what is signed changes the signature.
  r.headers[1].second = "bytes=0-10";
  CHECK(SignV4(r, c, "us-east-1", "s3", "20130524T000000Z").signature != s.signature);
}

TEST_CASE("SigV4 test suite: get-vanilla-query-order-key-case") {
  SigV4Request r;
  r.method = "GET";
  r.path = "/";
  r.query = {{"Param2", "value2"}, {"Param1", "value1"}};
  r.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  r.payload_hash = kEmptySha256;
  const AwsCredentials c{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
  const SigV4Signature s = SignV4(r, c, "us-east-1", "service", "20150830T123600Z");
  CHECK(s.signature == "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
  CHECK(s.signed_headers == "host;x-amz-date");
}

TEST_CASE("AwsUriEncode") {
  CHECK(AwsUriEncode("a b/c~d*e", false) == "a%20b/c~d%2Ae");
  CHECK(AwsUriEncode("a/b", true) == "a%2Fb");
}
