// util/json: the project's only JSON reader (RFC 8259, strict), and its
// one string quoting (Quote) for the documents it writes. Whoever
// reads JSON parses it here: directory indexes (remote/autoindex), what
// credentials services answer (remote/aws_credential_parse), members of
// meta.json's text (views/zarr_meta), and the tests that check rendered
// documents.
//
// Parse() builds a small document tree. Strict: one value and white space
// only (no trailing text, comments, trailing commas, single quotes, NaN or
// leading zeros); strings valid UTF-8 with no raw control characters, the
// escapes of the RFC only, \u escapes joined into UTF-8 (a surrogate pair
// into one code point; a lone surrogate is an error); numbers of the RFC's
// grammar whose value fits a double (1e999 is an error); nesting at most
// Limits::max_depth arrays and objects deep.
// Each value remembers where it stood in the text ([begin, end) byte
// offsets), so a caller can cut a member's text out verbatim.
// Numbers keep the text they were written as (`number`); Int64() and
// Double() convert it.
// Errors: Status EIO, "malformed JSON at byte N: why". A message never
// quotes the text (it may hold secrets).
// Thread-safety: pure functions; a Value is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::json {

struct Value {
  enum class Kind : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string number;             // as written (kNumber)
  std::string text;               // decoded (kString)
  std::vector<Value> items;       // an array's items, or an object's values
  std::vector<std::string> keys;  // an object's member names, in order
  size_t begin = 0;               // where the value starts in the text
  size_t end = 0;                 // and one past where it ends

  bool is_null() const { return kind == Kind::kNull; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_number() const { return kind == Kind::kNumber; }
  bool is_object() const { return kind == Kind::kObject; }
  bool is_array() const { return kind == Kind::kArray; }
  // The value of the first member named `key`; nullptr when there is none
  // (or this is not an object).
  const Value* Find(std::string_view key) const;
  // The number as an int64 when it is an integer written without a
  // fraction or exponent and in range; else nullopt.
  std::optional<int64_t> Int64() const;
  // The number as a double; nullopt for anything but a number.
  std::optional<double> Double() const;
};

struct Limits {
  size_t max_depth = 256;  // arrays and objects inside one another
};

Result<Value> Parse(std::string_view text, Limits limits = {});

// The one JSON writer piece every module shares: `text` as a JSON string
// literal (quotes, backslashes, control characters and DEL escaped; bytes
// that are not UTF-8 written as U+FFFD, so the result is always valid JSON).
void AppendQuoted(std::string_view text, std::string* out);
std::string Quote(std::string_view text);

}  // namespace b2ndfs::json
