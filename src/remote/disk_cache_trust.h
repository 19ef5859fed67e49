// remote/disk_cache_trust (private to remote): why a disk cache directory's
// files may be served as an object's bytes (disk_cache.h).
//
// The directory must be the daemon's own: owned by its user (the effective
// uid), not writable by group or others, a directory and not a symbolic
// link. A key file in it (DIR/key: kKeyBytes random bytes, mode 0600, the
// daemon user's) keys the HMAC-SHA256 tags that every range file carries, so
// a file planted or altered by anyone without the key is never served: its
// tags do not verify, and it is a miss.
// Errors: Status with EACCES (an unsafe directory or key file), ENOTDIR, or
// the errno of a failed system call; messages say what to do.
// Thread-safety: pure functions; ComputeTag may be called from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

constexpr size_t kCacheKeyBytes = 32;
constexpr size_t kCacheTagBytes = 32;
using CacheKey = std::array<uint8_t, kCacheKeyBytes>;
using CacheTag = std::array<uint8_t, kCacheTagBytes>;

// Creates a missing `dir` (mode 0700), then refuses (EACCES, ENOTDIR) one
// that is a symbolic link, not a directory, owned by another user or
// writable by group or others, and a key file in it that LoadCacheKey would
// refuse.
Status CheckCacheDirectory(const std::string& dir);

// The key of `dir` (checked by CheckCacheDirectory), from DIR/key, or a new
// random one written there (mode 0600) if there is none: then *created is
// true, and whatever ranges the directory holds were tagged with another
// key (or none, by an older b2ndfs) and can never verify. Refuses a key
// file that is not a regular file of kCacheKeyBytes bytes owned by this
// user and accessible to it alone.
Result<CacheKey> LoadCacheKey(const std::string& dir, bool* created);

// HMAC-SHA256 under `key` of the concatenation of `pieces`; nullopt if
// OpenSSL cannot compute it (no provider of HMAC or SHA-256).
std::optional<CacheTag> ComputeTag(const CacheKey& key,
                                   std::initializer_list<std::string_view> pieces);

// `tag` equals the kCacheTagBytes at `stored` (in constant time).
bool SameTag(const CacheTag& tag, const uint8_t* stored);

}  // namespace b2ndfs::remote
