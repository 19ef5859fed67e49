// format/msgpack_util (private to the format module): bounded msgpack-cxx
// unpacking of untrusted bytes, and small typed accessors.
//
// Every unpack sets msgpack::unpack_limit so that no declared array, map, str,
// bin or ext size can exceed the input length (a hostile header can then never
// make msgpack-cxx allocate more than a small multiple of the input), limits
// nesting depth, and turns every exception into a Status.
// Objects reference the input bytes (no copies): keep the input alive while
// the returned handle is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <msgpack.hpp>
#include <optional>
#include <span>
#include <string>

#include "b2ndfs/util/status.h"

namespace b2ndfs::format::internal {

struct Unpacked {
  msgpack::object_handle handle;
  size_t end = 0;  // offset just past the object
  const msgpack::object& get() const { return handle.get(); }
};

// Unpacks the single msgpack object starting at `offset` of `bytes`.
// `what` names the thing in error messages ("b2nd metalayer").
Result<Unpacked> UnpackBounded(std::span<const uint8_t> bytes, size_t offset, size_t max_depth,
                               const std::string& what);

// The value of an integer object if it fits int64.
std::optional<int64_t> AsInt64(const msgpack::object& object);

// "an array", "a string", ... for messages.
std::string TypeName(const msgpack::object& object);

}  // namespace b2ndfs::format::internal
