// format/meta_json: the meta.json document of SPEC.md, and msgpack -> JSON.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/ndmeta.h"

namespace b2ndfs::format {

// Everything meta.json says; filled by the store, rendered here.
struct MetaJsonInput {
  std::string format;  // "b2nd", "caterva" or "schunk"
  int version = 0;
  std::vector<int64_t> shape, chunkshape, blockshape;
  std::optional<std::string> dtype;
  std::optional<int> dtype_format;
  int64_t itemsize = 0;
  int64_t nbytes = 0;  // logical bytes of the array (itemsize * prod(shape))
  int64_t cbytes = 0;
  int64_t nchunks = 0;
  const FrameInfo* frame = nullptr;      // codec, clevel, filters, metalayers
  const NdMeta* ndmeta = nullptr;        // decoded shape metalayer, if any
  struct FileKind {
    std::string name;                  // "data", "data.npy", "chunk", "slice/0", ...
    std::vector<int64_t> shape;
    int64_t size = 0;
  };
  std::vector<FileKind> files;
};

std::string RenderMetaJson(const MetaJsonInput& input);
std::string RenderErrorJson(const std::string& message);  // {"error": "..."}

// msgpack bytes -> JSON text; nullopt when the bytes are not one complete,
// well-formed msgpack object (the caller then base64-encodes them).
std::optional<std::string> MsgpackToJson(std::span<const uint8_t> bytes);
std::string Base64Encode(std::span<const uint8_t> bytes);
std::string JsonQuote(const std::string& text);  // a JSON string literal, escaped

}  // namespace b2ndfs::format
