// format/meta_json: the meta.json document of SPEC.md, and msgpack -> JSON.
//
// RenderMetaJson writes pretty-printed JSON (2-space indent, arrays of scalars
// on one line) with a fixed key order, ending with a newline:
//   format, version, ndim, shape, chunkshape, blockshape, dtype, dtype_format,
//   itemsize, nbytes, cbytes, cratio, nchunks, codec, clevel, filters,
//   [unsupported], metalayers, vlmeta, files.
// cratio = nbytes / cbytes rounded to 3 decimals (null when cbytes is 0, e.g.
// an array made only of special zero chunks). codec, clevel and filters come
// from the frame (null / [] without one); metalayers is {"names": [...]} plus
// the decoded shape metalayer under its name ("b2nd" or "caterva").
// "unsupported" is present only when the store found codecs or filters that
// c-blosc2 would load as plugins (codec::UnsupportedPipeline): its words.
//
// msgpack -> JSON mapping: nil, bool, integers as is; floats in shortest
// round-trip form (float32 as float32), NaN and infinities as the strings
// "NaN", "Infinity", "-Infinity" (JSON has no such numbers); str as a JSON
// string (control characters escaped, invalid UTF-8 bytes replaced by U+FFFD);
// bin as a base64 string; ext as {"type": n, "base64": "..."}; map keys that
// are not strings are written as their compact JSON text (1 -> "1").
// Nesting is limited to 64 levels and the JSON text to 16 MiB; beyond that the
// value is not converted (nullopt, the caller falls back to base64).
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
  const FrameInfo* frame = nullptr;  // codec, clevel, filters, metalayers
  const NdMeta* ndmeta = nullptr;    // decoded shape metalayer, if any
  // What the container needs that b2ndfs never loads (a codec or filter
  // plugin), in words; rendered as the top-level "unsupported" string.
  std::optional<std::string> unsupported;
  // Variable-length metalayers, content already DECOMPRESSED (in the frame
  // each is a Blosc2 chunk). Rendered under "vlmeta" by name: as JSON when the
  // content is one msgpack object, else {"base64": "..."}; contents over
  // 16 MiB as {"size": n, "omitted": true}.
  std::vector<NamedBytes> vlmeta;
  struct FileKind {
    std::string name;  // "data", "data.npy", "chunk", "slice/0", ...
    std::vector<int64_t> shape;
    int64_t size = 0;
    std::string absent;  // non-empty: not offered, and why
  };
  // Rendered as {name: {"shape", "size"}}, or {name: {"absent": why}}.
  std::vector<FileKind> files;
};

std::string RenderMetaJson(const MetaJsonInput& input);
std::string RenderErrorJson(const std::string& message);  // {"error": "..."}

// msgpack bytes -> compact JSON text (no newline); nullopt when the bytes are
// not exactly one complete, well-formed msgpack object (the caller then
// base64-encodes them), or exceed the limits above.
std::optional<std::string> MsgpackToJson(std::span<const uint8_t> bytes);
std::string Base64Encode(std::span<const uint8_t> bytes);  // RFC 4648, padded
std::string JsonQuote(const std::string& text);            // a JSON string literal, escaped

// c-blosc2's own codec names. `codec` is FrameInfo::codec (compcode
// numbering); 6 means the id is `udcodec`, named the same way: "blosclz",
// "lz4", "lz4hc", "snappy" (3, Blosc1 only), "zlib", "zstd", the globally
// registered "ndlz", "zfp_acc", "zfp_prec", "zfp_rate" (built in) and
// "openhtj2k", "grok", "openzl", "j2k", "htj2k" (plugins, 36..40),
// "user:<id>" for the user-registered range 160..255, else "id:<id>".
std::string CodecName(int codec, uint8_t udcodec);
// "none", "shuffle", "bitshuffle", "delta", "trunc_prec", the globally
// registered "ndcell", "ndmean", "bytedelta_buggy", "bytedelta", "int_trunc",
// "user:<id>" (160..255), else "id:<id>".
std::string FilterName(uint8_t id);

}  // namespace b2ndfs::format
