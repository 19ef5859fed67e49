// Private to format: JSON text pieces shared by meta.json's writer and the
// msgpack -> JSON conversion (msgpack_json.cc): base64, numbers and the
// conversion itself; quoting and UTF-8 checks are util's (json.h, text.h).
// Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "b2ndfs/util/json.h"
#include "b2ndfs/util/text.h"

namespace b2ndfs::format::internal {

constexpr size_t kMaxMsgpackDepth = 64;
constexpr size_t kMaxJsonText = size_t{16} << 20;

using json::AppendQuoted;
using text::IsValidUtf8;
// RFC 4648 base64 with padding.
void AppendBase64(std::span<const uint8_t> bytes, std::string* out);
// Shortest text that reads back as the same double (or float).
void AppendDouble(double value, bool single_precision, std::string* out);
void NewLine(int indent, std::string* out);

enum class Layout { kCompact, kPretty };
// One msgpack object filling `bytes`, written as JSON (the lossless mapping of
// meta_json.h), at most `limit` bytes; nullopt otherwise.
std::optional<std::string> MsgpackText(std::span<const uint8_t> bytes, Layout layout, int indent,
                                       size_t limit);

}  // namespace b2ndfs::format::internal
