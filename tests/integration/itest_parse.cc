// The integration checks' parsers of what a mount shows: JSON (meta.json,
// .zarray, ...) and .npy headers, declared in itest_common.h.
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "b2ndfs/util/json.h"
#include "itest_common.h"

namespace b2ndfs::itest {

// ---------------------------------------------------------------------------
// JSON

const Json* Json::Find(std::string_view key) const {
  if (type != Type::kObject) return nullptr;
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::optional<int64_t> Json::Int() const {
  if (type != Type::kNumber) return std::nullopt;
  if (text.find_first_of(".eE") != std::string::npos) return std::nullopt;
  return std::stoll(text);
}

std::optional<Shape> Json::IntArray() const {
  if (type != Type::kArray) return std::nullopt;
  Shape out;
  for (const Json& item : items) {
    auto v = item.Int();
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

namespace {

// util/json.h's tree as a Json (numbers also as doubles).
Json FromJson(const json::Value& in) {
  Json out;
  out.type = static_cast<Json::Type>(in.kind);
  out.boolean = in.boolean;
  if (in.is_number()) {
    out.number = *in.Double();
    out.text = in.number;
  } else {
    out.text = in.text;
  }
  if (in.is_object()) {
    for (size_t k = 0; k < in.keys.size(); ++k) {
      out.members.emplace_back(in.keys[k], FromJson(in.items[k]));
    }
  } else {
    for (const json::Value& item : in.items) out.items.push_back(FromJson(item));
  }
  return out;
}
static_assert(static_cast<int>(Json::Type::kObject) ==
              static_cast<int>(json::Value::Kind::kObject));

}  // namespace

std::optional<Json> ParseJson(std::string_view text, std::string* error) {
  // As deep as the documents a mount shows may nest (meta.json's vlmeta).
  auto doc = json::Parse(text, {65});
  if (!doc.ok()) {
    *error = doc.status().message();
    return std::nullopt;
  }
  return FromJson(*doc);
}

// ---------------------------------------------------------------------------
// .npy

std::optional<NpyHeader> ParseNpyHeader(const uint8_t* data, size_t size, std::string* error) {
  static const uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(data, kMagic, 6) != 0) {
    *error = "no \\x93NUMPY magic";
    return std::nullopt;
  }
  NpyHeader h;
  h.major = data[6];
  size_t prefix = 0;
  size_t len = 0;
  if (h.major == 1) {
    prefix = 10;
    len = data[8] | (data[9] << 8);
  } else if (h.major == 2 || h.major == 3) {
    prefix = 12;
    if (size < 12) {
      *error = "short v2 header";
      return std::nullopt;
    }
    len = static_cast<size_t>(data[8]) | (static_cast<size_t>(data[9]) << 8) |
          (static_cast<size_t>(data[10]) << 16) | (static_cast<size_t>(data[11]) << 24);
  } else {
    *error = "unknown .npy version " + std::to_string(h.major);
    return std::nullopt;
  }
  h.total_length = prefix + len;
  if (h.total_length > size) {
    *error = "header length " + std::to_string(h.total_length) + " runs past the bytes read";
    return std::nullopt;
  }
  if (h.total_length % 16 != 0) {
    *error = "header not 16-byte aligned (" + std::to_string(h.total_length) + " bytes)";
    return std::nullopt;
  }
  if (data[h.total_length - 1] != '\n') {
    *error = "header does not end with a newline";
    return std::nullopt;
  }
  h.dict.assign(reinterpret_cast<const char*>(data) + prefix, len - 1);
  while (!h.dict.empty() && h.dict.back() == ' ') h.dict.pop_back();
  if (h.dict.find('\n') != std::string::npos) {
    *error = "newline inside the header dict";
    return std::nullopt;
  }
  return h;
}

std::string NpyShapeTuple(const Shape& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

bool CheckNpyDict(const std::string& dict, const Shape& shape, std::string* error) {
  if (dict.empty() || dict.front() != '{' || dict.back() != '}') {
    *error = "header dict is not {...}: " + dict;
    return false;
  }
  if (dict.find("'descr': ") == std::string::npos) {
    *error = "no 'descr' in " + dict;
    return false;
  }
  if (dict.find("'fortran_order': False") == std::string::npos) {
    *error = "no 'fortran_order': False in " + dict;
    return false;
  }
  const std::string want = "'shape': " + NpyShapeTuple(shape);
  if (dict.find(want) == std::string::npos) {
    *error = "no " + want + " in " + dict;
    return false;
  }
  return true;
}

}  // namespace b2ndfs::itest
