// fuzz_json: the strict JSON reader (util/json.h), fed the raw input.
//
// Beyond "does not crash", it checks what the header promises: failures are
// EIO with a message that says where (a byte offset inside the text); a
// parsed value spans the whole text but its surrounding white space, every
// value's span lies inside its parent's and parses alone to the same kind,
// numbers of Int64() agree with Double(), and strings parse back when
// re-quoted.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "b2ndfs/util/json.h"
#include "fuzz_common.h"

namespace {

using b2ndfs::json::Value;

void Check(std::string_view text, const Value& v, size_t begin, size_t end, size_t depth) {
  FUZZ_CHECK(v.begin >= begin && v.end <= end && v.begin < v.end, "a span outside its parent");
  if (depth < 8) {  // re-parsing every level would be quadratic in depth
    auto alone = b2ndfs::json::Parse(text.substr(v.begin, v.end - v.begin));
    FUZZ_CHECK(alone.ok() && alone->kind == v.kind, "a value's span does not parse alone");
  }
  if (v.is_number()) {
    FUZZ_CHECK(v.Double().has_value(), "a number with no double");
    if (auto i = v.Int64()) {
      FUZZ_CHECK(static_cast<double>(*i) == *v.Double(), "Int64 and Double disagree");
    }
  }
  if (v.is_string()) {
    auto again = b2ndfs::json::Parse(b2ndfs::json::Quote(v.text));
    FUZZ_CHECK(again.ok() && again->text == v.text, "a decoded string does not round-trip");
  }
  FUZZ_CHECK(v.kind == Value::Kind::kObject ? v.keys.size() == v.items.size() : v.keys.empty(),
             "keys and values do not pair up");
  for (const Value& item : v.items) Check(text, item, v.begin + 1, v.end - 1, depth + 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = b2ndfs::json::Parse(text);
  if (!doc.ok()) {
    FUZZ_CHECK(doc.status().error_number() == EIO || doc.status().error_number() == ENOMEM,
               "error is not EIO: " + doc.status().message());
    FUZZ_CHECK(doc.status().error_number() == ENOMEM ||
                   doc.status().message().rfind("malformed JSON at byte ", 0) == 0,
               "an error that does not say where: " + doc.status().message());
    return 0;
  }
  const size_t first = text.find_first_not_of(" \t\r\n");
  const size_t last = text.find_last_not_of(" \t\r\n");
  FUZZ_CHECK(doc->begin == first && doc->end == last + 1, "the value does not span the text");
  Check(text, *doc, 0, text.size(), 0);
  return 0;
}
