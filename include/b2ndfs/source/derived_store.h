// source/derived_store: values computed from one version of one source (the
// blocks of a computed pyramid level, store/pyramid.h), kept where the next
// mount finds them, so that it does not compute them again (README.md,
// "OME-Zarr pyramids", Costs).
//
// Who offers one: a ByteSource whose values are worth keeping across mounts
// (ByteSource::derived_store(): a remote object when the mount has a
// disk_cache=, remote/disk_cache.h); local sources offer none (nullptr): a
// pass over a local file costs less than the bookkeeping.
// Scope: a DerivedStore is bound to ONE object at ONE version (for a remote
// object, its URL and ETag): a value put for one version is never got for
// another, and the object's next version drops the old one's values.
// Keys: the caller's stable description of what was computed (its format
// version, its parameters and its place: any bytes); values: opaque bytes.
// Trust: Get() copies only a value stored under the same key, of exactly
// the size asked, whose integrity the store has verified; anything else
// (never stored, evicted, of another version, tampered, torn, cut short) is
// a miss, and the caller computes the value. Put() is best effort: a value
// that cannot be kept is counted by the store, never an error of the read.
// Lifetime: valid while the ByteSource that offers it lives.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace b2ndfs::source {

class DerivedStore {
 public:
  virtual ~DerivedStore() = default;
  // Whether a value is held under `key` (an index lookup: neither read nor
  // verified, so a Get() may still miss).
  virtual bool Contains(std::string_view key) const = 0;
  // Copies the value held under `key` into `out` when it has out.size()
  // bytes and verifies; false (a miss) otherwise, `out` then unspecified.
  virtual bool Get(std::string_view key, std::span<uint8_t> out) const = 0;
  // Keeps `bytes` under `key` (replacing what was there), if it can.
  virtual void Put(std::string_view key, std::span<const uint8_t> bytes) const = 0;
};

}  // namespace b2ndfs::source
