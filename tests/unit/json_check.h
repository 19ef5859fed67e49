// Helpers shared by the meta_json unit tests (meta_json_test.cc,
// meta_json_document_test.cc): msgpack packing, and the documents the code
// renders parsed by the project's strict JSON reader (util/json.h).
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <msgpack.hpp>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/util/json.h"

namespace b2ndfs::format::testing {

using Bytes = std::vector<uint8_t>;

template <typename Fn>
inline Bytes Pack(Fn&& fn) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  fn(packer);
  return Bytes(buffer.data(), buffer.data() + buffer.size());
}

// ---- documents parsed by util/json.h, with Catch2 assertions for checks ----

struct Value {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool boolean = false;
  std::string number;  // as written
  std::string text;
  std::vector<Value> items;
  std::vector<std::string> keys;  // object keys, in order (values in items)

  const Value& operator[](const std::string& key) const {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == key) return items[i];
    }
    FAIL("no key " << key);
    return *this;
  }
  bool Has(const std::string& key) const {
    for (const auto& k : keys) {
      if (k == key) return true;
    }
    return false;
  }
  int64_t Int() const {
    REQUIRE(kind == Kind::kNumber);
    return std::stoll(number);
  }
  std::vector<int64_t> Ints() const {
    REQUIRE(kind == Kind::kArray);
    std::vector<int64_t> out;
    for (const auto& v : items) out.push_back(v.Int());
    return out;
  }
};

// The tree util/json.h parses, as a Value with the assertions above.
static_assert(static_cast<int>(json::Value::Kind::kObject) ==
              static_cast<int>(Value::Kind::kObject));
inline Value FromJson(const json::Value& in) {
  Value v;
  v.kind = static_cast<Value::Kind>(in.kind);
  v.boolean = in.boolean;
  v.number = in.number;
  v.text = in.text;
  v.keys = in.keys;
  for (const json::Value& item : in.items) v.items.push_back(FromJson(item));
  return v;
}

inline std::optional<Value> ParseJson(const std::string& text) {
  auto doc = json::Parse(text);
  if (!doc.ok()) return std::nullopt;
  return FromJson(*doc);
}

}  // namespace b2ndfs::format::testing
