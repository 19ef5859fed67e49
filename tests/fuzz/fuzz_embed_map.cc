// fuzz_embed_map: an EmbedStore's key map and frame (format/embed_map.h,
// stores/embed_frame.h). The input is decoded as the msgpack of
// "estore_metadata", and opened as a whole embed store frame (a .b2e file),
// whose leaves' byte ranges are then read from its decompressed stream.
//
// Beyond "does not crash", it checks: failures are EIO (ENOMEM for memory);
// every entry without a problem is a byte range that does not overflow; a
// remote reference has no range; reads of ranges inside the stream succeed
// or fail with EIO, twice alike; ranges outside it are refused; the frame's
// vlmeta JSON is valid JSON.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "b2ndfs/format/embed_map.h"
#include "b2ndfs/stores/embed_frame.h"
#include "fuzz_common.h"

namespace {

void CheckMap(const b2ndfs::format::EmbedMap& map) {
  for (const auto& e : map.entries) {
    if (!e.problem.empty()) continue;
    if (e.reference) {
      FUZZ_CHECK(e.offset == 0 && e.length == 0, "a reference with a range");
      continue;
    }
    FUZZ_CHECK(e.offset >= 0 && e.length >= 0 && e.offset <= INT64_MAX - e.length,
               "an entry that is not a byte range");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace b2ndfs;  // NOLINT
  auto map = format::DecodeEmbedMap({data, size});
  if (map.ok()) {
    CheckMap(*map);
  } else {
    FUZZ_CHECK(map.status().error_number() == EIO, "map error is not EIO");
  }

  const int64_t frame_size = static_cast<int64_t>(size);
  stores::FrameReadAt read = [&](int64_t offset, int64_t length) -> Result<std::vector<uint8_t>> {
    if (offset < 0 || length < 0 || offset > frame_size || length > frame_size - offset) {
      return Status(EIO, "read past the end");
    }
    return std::vector<uint8_t>(data + offset, data + offset + length);
  };
  auto frame = stores::EmbedFrame::Open(read, frame_size);
  if (!frame.ok()) {
    const int e = frame.status().error_number();
    FUZZ_CHECK(e == EIO || e == ENOMEM, "frame error is not EIO: " + frame.status().message());
    return 0;
  }
  CheckMap((*frame)->map());
  std::string error;
  FUZZ_CHECK(fuzz::IsValidJson((*frame)->vlmeta_json(), &error), "vlmeta JSON: " + error);
  const int64_t stream = (*frame)->stream_size();
  int reads = 0;
  for (const auto& e : (*frame)->map().entries) {
    if (!e.problem.empty() || e.reference || reads++ >= 4) continue;
    const bool inside = e.offset <= stream && e.length <= stream - e.offset;
    const size_t length = static_cast<size_t>(std::min<int64_t>(e.length, 1 << 20));
    std::vector<uint8_t> a(length), b(length);
    Status first = (*frame)->ReadStream(read, e.offset, length, a.data());
    if (!inside) {
      FUZZ_CHECK(e.length > (1 << 20) || !first.ok(), "a range outside the stream was read");
      continue;
    }
    Status second = (*frame)->ReadStream(read, e.offset, length, b.data());
    FUZZ_CHECK(first.ok() == second.ok(), "two reads of one range disagree");
    if (first.ok()) {
      FUZZ_CHECK(a == b, "two reads of one range give different bytes");
    } else {
      FUZZ_CHECK(first.error_number() == EIO || first.error_number() == ENOMEM,
                 "read error is not EIO: " + first.message());
    }
  }
  return 0;
}
