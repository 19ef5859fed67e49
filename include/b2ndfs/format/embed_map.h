// format/embed_map: the key map of a python-blosc2 EmbedStore (a `.b2e`
// file, or the `embed.b2e` of a .b2z/.b2d store), decoded from untrusted
// msgpack.
//
// python-blosc2's embed_store.py (EmbedStore._save_metadata) stores it as
// the vlmetalayer "estore_metadata": the msgpack map
//   {"embed_map": {KEY: {"offset": int, "length": int}
//                       | {"urlbase": str, "path": str}, ...},
//    "current_offset": int}
// where each leaf is the whole serialized frame at bytes [offset, offset +
// length) of the store's decompressed stream (EmbedStore.__setitem__), and
// a remote C2Array is kept as a reference (urlbase + path). This module only
// decodes and checks the map itself; the caller checks the ranges against
// the stream.
// Errors: Status(EIO) naming what is wrong.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::format {

constexpr int64_t kMaxEmbedKeys = 1 << 20;
constexpr size_t kMaxEmbedKeyLength = 4096;

struct EmbedEntry {
  std::string key;  // "/a/b"
  int64_t offset = 0;
  int64_t length = 0;
  // A remote reference instead of bytes (offset and length are then 0).
  bool reference = false;
  std::string urlbase;
  std::string path;
  // Non-empty: this entry is malformed, and why (the others still count).
  std::string problem;
};

struct EmbedMap {
  std::vector<EmbedEntry> entries;  // in the map's order
  int64_t current_offset = 0;       // -1 when absent
};

// Decodes the (already decompressed) content of "estore_metadata".
Result<EmbedMap> DecodeEmbedMap(std::span<const uint8_t> msgpack_bytes);

}  // namespace b2ndfs::format
