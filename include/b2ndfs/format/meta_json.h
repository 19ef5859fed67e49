// format/meta_json: the meta.json document (README.md, "meta.json"), and
// msgpack -> JSON.
//
// RenderMetaJson writes pretty-printed JSON (2-space indent, arrays of scalars
// on one line) with a fixed key order, ending with a newline:
//   format, version, ndim, shape, chunkshape, blockshape, dtype, dtype_format,
//   itemsize, nbytes, cbytes, cratio, nchunks, codec, clevel, filters,
//   [unsupported], [proxy], metalayers, vlmeta, files;
// and, after format, for containers that are not arrays (format/vlen.h):
//   content ("objects", "batches", "carrier"), [serializer], [recipe],
//   [evaluation] (for a recipe with an expression: {"grammar": "elementwise",
//   "operands": [...], "evaluated": true, "paths": {name: mount path}}, or
//   "evaluated": false and "error": why not; or only {"error": why not} when
//   the expression is outside the grammar).
// recipe is a carrier's vlmeta payload (b2o or _LazyArray) as JSON; proxy is
// {"chunks_present": [...], "chunks_absent": n} for a proxy cache; the
// content of python-blosc2's tag metalayers (batcharray, vlarray, listarray,
// b2o, LazyArray, proxy-source) is shown under metalayers by name.
// cratio = nbytes / cbytes rounded to 3 decimals (null when cbytes is 0, e.g.
// an array made only of special zero chunks). codec, clevel and filters come
// from the frame (null / [] without one); metalayers is {"names": [...]} plus
// the decoded shape metalayer under its name ("b2nd" or "caterva").
// "unsupported" is present only when the store found codecs or filters that
// c-blosc2 would load as plugins (codec::UnsupportedPipeline): its words.
//
// "notes" is present only when something is inconsistent but served
// anyway, in words: an early 6-entry b2nd metalayer (NdMeta::notes), a dtype
// b2ndfs cannot parse or whose item size disagrees with the chunks' (then
// data/chunks/slices serve the chunks' items and data.npy says '|V<n>';
// format::CheckDtype).
//
// msgpack -> JSON mapping (vlmeta, lossless): nil, bool, integers (any
// width, exact decimal text), str (well-formed UTF-8) and arrays as is;
// floats in shortest round-trip form (float32 as float32). What JSON cannot
// hold becomes a one-key object whose key starts with '$':
//   NaN, Infinity, -Infinity  {"$float": "NaN"} (or "Infinity", "-Infinity")
//   bin                       {"$bin": "<base64>"}
//   ext                       {"$ext": <type>, "data": "<base64>"}, plus
//                             "timestamp": "<RFC 3339 UTC>" for the msgpack
//                             timestamp (type -1)
//   str that is not UTF-8     {"$str": "<base64 of its bytes>"}
//   map with a key that is not a string, not UTF-8, repeated, or starts
//   with '$'                  {"$map": [[key, value], ...]} (in order)
// Any other map is a JSON object. base64 is RFC 4648 with padding.
// Credentials are never written: the value of a map key "auth_token" or
// "auth_cookie" (python-blosc2's names for a remote server's credentials),
// and the third element of a proxy-source "urlpath" (a map that also has
// "local_abspath"; proxy.py stores (path, urlbase, auth_token) there),
// become the string "(redacted)"; nil values stay null.
// Nesting is limited to 64 levels and the JSON text to 16 MiB; beyond that the
// value is not converted (nullopt, the caller falls back to base64).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/ndmeta.h"
#include "b2ndfs/util/blosc_names.h"  // CodecName, FilterName (meta.json's names)

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
  // More of "notes", after the metalayer's and the dtype's (e.g. vlmeta
  // attributes the headers ignore: format/voxel_geometry.h).
  std::vector<std::string> notes;
  struct FileKind {
    std::string name;  // "data", "data.npy", "chunk", "slice/0", ...
    std::vector<int64_t> shape;
    int64_t size = 0;
    std::string absent;  // non-empty: not offered, and why
    std::string note;    // non-empty: rendered as "note"
  };
  // "" for an array, else meta.json's "content" (format::ContentName).
  std::string content;
  std::string serializer;  // a BatchArray's
  // A carrier's recipe: its vlmeta payload, decompressed msgpack.
  std::optional<NamedBytes> recipe;
  // An evaluated carrier: its operands' names and paths in the mount;
  // otherwise, for an expression in the grammar, why it is not evaluated.
  std::vector<std::pair<std::string, std::string>> evaluated_operands;
  std::string evaluation_error;
  // A proxy cache: the chunks it holds.
  std::optional<std::vector<int64_t>> chunks_present;
  // Metalayers shown decoded (msgpack), by name.
  std::vector<NamedBytes> tags;
  // Rendered as {name: {"shape", "size"[, "note"]}}, or {name: {"absent": why}}.
  std::vector<FileKind> files;
};

std::string RenderMetaJson(const MetaJsonInput& input);
std::string RenderErrorJson(const std::string& message);  // {"error": "..."}

// msgpack bytes -> compact JSON text (no newline); nullopt when the bytes are
// not exactly one complete, well-formed msgpack object (the caller then
// base64-encodes them), or exceed the limits above.
std::optional<std::string> MsgpackToJson(std::span<const uint8_t> bytes);
std::string Base64Encode(std::span<const uint8_t> bytes);  // RFC 4648, padded

}  // namespace b2ndfs::format
