// fuzz_azure_xml: the Azure List Blobs answer b2ndfs reads
// (remote/azure_xml.h), fed the raw input, which is what a hostile or broken
// server could send.
//
// Beyond "does not crash", it checks what the header promises: failures are
// EIO with a short message that does not quote the document, a parsed page
// keeps its promises (sizes are non-negative, ETags are quoted), and parsing
// is deterministic.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>

#include "b2ndfs/remote/azure_xml.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace b2ndfs;          // NOLINT
  using namespace b2ndfs::remote;  // NOLINT
  const std::string text(reinterpret_cast<const char*>(data), size);

  auto page = ParseListBlobs(text);
  if (page.ok()) {
    for (const AzureBlob& b : page->blobs) {
      FUZZ_CHECK(b.size >= 0, "negative <Content-Length> " + std::to_string(b.size));
      FUZZ_CHECK(b.etag.empty() || b.etag.front() == '"', "an ETag without its quotes");
    }
    FUZZ_CHECK(page->next_marker.size() <= 4096, "a <NextMarker> over 4096 bytes");
    auto again = ParseListBlobs(text);
    FUZZ_CHECK(again.ok() && again->blobs == page->blobs && again->prefixes == page->prefixes &&
                   again->next_marker == page->next_marker,
               "parsing is not deterministic");
  } else {
    FUZZ_CHECK(page.status().error_number() == EIO,
               "List Blobs error is not EIO: " + page.status().message());
    FUZZ_CHECK(page.status().message().size() <= 200,
               "long error message: " + page.status().message().substr(0, 300));
  }
  return 0;
}
