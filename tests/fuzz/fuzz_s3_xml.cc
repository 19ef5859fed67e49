// fuzz_s3_xml: the S3 answers b2ndfs reads (remote/s3_xml.h): a
// ListObjectsV2 document, the <Code> of an error document, and the
// LastModified timestamps, all fed the raw input, which is what a hostile or
// broken server could send.
//
// Beyond "does not crash", it checks what the header promises: failures are
// EIO with a message that does not quote the document, a parsed page keeps
// its promises (sizes are non-negative, a truncated page has a continuation
// token), parsing is deterministic, and an error code is a plain word.
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>

#include "b2ndfs/remote/s3_xml.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace b2ndfs;          // NOLINT
  using namespace b2ndfs::remote;  // NOLINT
  const std::string text(reinterpret_cast<const char*>(data), size);

  auto page = ParseListObjectsV2(text);
  if (page.ok()) {
    for (const S3Object& o : page->contents) {
      FUZZ_CHECK(o.size >= 0, "negative <Size> " + std::to_string(o.size));
    }
    FUZZ_CHECK(!page->truncated || !page->next_token.empty(),
               "a truncated page without a continuation token");
    auto again = ParseListObjectsV2(text);
    FUZZ_CHECK(again.ok() && again->contents == page->contents &&
                   again->common_prefixes == page->common_prefixes &&
                   again->truncated == page->truncated && again->next_token == page->next_token,
               "parsing is not deterministic");
  } else {
    FUZZ_CHECK(page.status().error_number() == EIO,
               "ListObjectsV2 error is not EIO: " + page.status().message());
    // Messages go to the log: a short description, never the document.
    FUZZ_CHECK(page.status().message().size() <= 200,
               "long error message: " + page.status().message().substr(0, 300));
  }

  const std::string code = S3ErrorCode(text);
  FUZZ_CHECK(code.size() <= 64, "error code over 64 characters");
  for (char c : code) {
    FUZZ_CHECK(std::isalnum(static_cast<unsigned char>(c)), "error code is not a plain word");
  }

  const std::string region = S3ErrorRegion(text);
  FUZZ_CHECK(region.size() <= 32, "region over 32 characters");
  for (char c : region) {
    FUZZ_CHECK(std::isalnum(static_cast<unsigned char>(c)) || c == '-',
               "region is not a region name");
  }

  // Timestamps: a prefix of the input, as <LastModified> text.
  (void)ParseIso8601(text.substr(0, 64));
  return 0;
}
