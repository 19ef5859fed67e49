#include "msgpack_util.h"

#include <limits>
#include <new>
#include <stdexcept>

namespace b2ndfs::format::internal {
namespace {

// Lets objects point into the input instead of copying str/bin/ext payloads.
bool ReferenceAll(msgpack::type::object_type /*type*/, std::size_t /*length*/,
                  void* /*user_data*/) {
  return true;
}

}  // namespace

Result<Unpacked> UnpackBounded(std::span<const uint8_t> bytes, size_t offset, size_t max_depth,
                               const std::string& what) {
  if (offset >= bytes.size()) return InvalidData(what + " is empty");
  const size_t n = bytes.size();
  // Counts of elements (arrays, maps) and byte lengths (str, bin, ext) can
  // never legitimately exceed the number of input bytes: each element takes
  // at least one byte.
  const msgpack::unpack_limit limit(n, n, n, n, n, max_depth);
  try {
    Unpacked result;
    size_t off = offset;
    result.handle = msgpack::unpack(reinterpret_cast<const char*>(bytes.data()), n, off,
                                    &ReferenceAll, nullptr, limit);
    result.end = off;
    return result;
  } catch (const msgpack::insufficient_bytes&) {
    return InvalidData(what + " is truncated (msgpack ends early)");
  } catch (const msgpack::depth_size_overflow&) {
    return InvalidData(what + " nests deeper than " + std::to_string(max_depth) + " levels");
  } catch (const msgpack::size_overflow&) {
    return InvalidData(what + " declares a size larger than its " + std::to_string(n) + " bytes");
  } catch (const msgpack::parse_error& e) {
    return InvalidData(what + " is not valid msgpack (" + e.what() + ")");
  } catch (const msgpack::unpack_error& e) {
    return InvalidData(what + " cannot be decoded (" + e.what() + ")");
  } catch (const msgpack::type_error&) {
    return InvalidData(what + " has an unexpected msgpack type");
  } catch (const std::bad_alloc&) {
    return Status(ENOMEM, "out of memory decoding " + what);
  } catch (const std::exception& e) {
    return InvalidData(what + " cannot be decoded (" + e.what() + ")");
  }
}

std::optional<int64_t> AsInt64(const msgpack::object& object) {
  if (object.type == msgpack::type::POSITIVE_INTEGER) {
    if (object.via.u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<int64_t>(object.via.u64);
  }
  if (object.type == msgpack::type::NEGATIVE_INTEGER) return object.via.i64;
  return std::nullopt;
}

std::string TypeName(const msgpack::object& object) {
  switch (object.type) {
    case msgpack::type::NIL:
      return "nil";
    case msgpack::type::BOOLEAN:
      return "a boolean";
    case msgpack::type::POSITIVE_INTEGER:
    case msgpack::type::NEGATIVE_INTEGER:
      return "an integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64:
      return "a float";
    case msgpack::type::STR:
      return "a string";
    case msgpack::type::BIN:
      return "binary data";
    case msgpack::type::ARRAY:
      return "an array";
    case msgpack::type::MAP:
      return "a map";
    case msgpack::type::EXT:
      return "an extension value";
  }
  return "an unknown msgpack value";
}

}  // namespace b2ndfs::format::internal
