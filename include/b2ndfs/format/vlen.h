// format/vlen: what python-blosc2 tags a frame as (README.md, "Variable-length
// data, carriers and caches"), and the pure byte work its views need.
//
// A frame is one of:
//   kArray    an array (or plain super-chunk) whose chunks hold its data;
//   kObjects  an ObjectArray (metalayer `vlarray`) or a ListArray stored as
//             one (`listarray` without `batcharray`): one msgpack item per
//             chunk (python-blosc2 objectarray.py, ObjectArray.append);
//   kBatches  a BatchArray (`batcharray`, also under a ListArray): one batch
//             per chunk, each chunk of variable-length blocks holding a
//             msgpack array of items or an Arrow IPC stream
//             (batch_array.py, BatchArray._compress_batch);
//   kCarrier  a recipe, not data: `b2o` (b2objects.py: a saved LazyExpr,
//             LazyUDF or C2Array reference; its payload is vlmeta `b2o`) or
//             the legacy `LazyArray` (lazyexpr.py; vlmeta `_LazyArray`).
// A Proxy cache (`proxy-source`, proxy.py; or `b2o` of kind remote_proxy)
// is a kArray with `proxy` set: only the chunks it fetched hold data.
// A tag that is not what python-blosc2 writes is an error (meta.json says
// which), never a guess.
// Errors: Status(EIO) naming what is wrong. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/format/frame.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::format {

enum class ContentKind { kArray, kObjects, kBatches, kCarrier };

struct ContentTag {
  ContentKind kind = ContentKind::kArray;
  // kBatches: "msgpack" or "arrow" (batcharray's "serializer").
  std::string serializer;
  // kCarrier: "lazyexpr", "lazyudf", "c2array" (b2o's "kind"), or
  // "LazyArray"; the vlmeta entry holding the recipe.
  std::string carrier_kind;
  std::string recipe_vlmeta;
  bool proxy = false;
};

// "array", "objects", "batches", "carrier" (meta.json's "content").
const char* ContentName(ContentKind kind);

// Decides from the frame's metalayers (their msgpack contents validated).
Result<ContentTag> DecodeContentTag(const std::vector<NamedBytes>& metalayers);

// A carrier's saved expression and the names of its operands, from its
// recipe (decompressed vlmeta msgpack: b2o of kind lazyexpr, whose
// "operands" map names to Refs; or _LazyArray, whose "operands" map names to
// paths); nullopt for a recipe without an expression (c2array, lazyudf).
struct RecipeExpression {
  std::string expression;
  std::vector<std::string> operands;
  // paths[i]: operands[i]'s urlpath as saved (relative to the carrier's
  // directory when not absolute: b2objects.py, decode_operand_reference), or
  // empty when it is not a local container (a C2Array, a DictStore key).
  std::vector<std::string> paths;
};
Result<std::optional<RecipeExpression>> RecipeExpressionOf(std::span<const uint8_t> recipe);

// Most items (or blocks) one batch may hold: more is a hostile count.
constexpr int64_t kMaxBatchItems = int64_t{1} << 24;

// A BatchArray chunk of the msgpack serializer, decompressed (c-blosc2
// concatenates its blocks: each one a msgpack array of items), as the one
// msgpack array of all its items, in order: what msgpack would write for the
// batch as a list (the smallest array header, then every item's bytes as
// stored). EIO for anything else (a block not an array, bytes left over,
// truncation, more than kMaxBatchItems items).
Result<std::string> MergeMsgpackBlocks(std::span<const uint8_t> blocks);

// A BatchArray chunk of the Arrow serializer, decompressed (its blocks, each
// an Arrow IPC stream, concatenated), as one IPC stream: one block's stream
// byte for byte; for several, the first schema message, then every block's
// dictionary and record batch messages in order, then the end-of-stream
// marker. EIO when a block is not an IPC stream or its schema differs from
// the first's.
Result<std::string> MergeArrowStreams(std::span<const uint8_t> blocks);

// The bytes of a msgpack bin or str (a vlmeta value written from Python
// bytes), or nullopt.
std::optional<std::vector<uint8_t>> MsgpackBinary(std::span<const uint8_t> bytes);
// A msgpack integer, or nullopt.
std::optional<int64_t> MsgpackInteger(std::span<const uint8_t> bytes);

// Which of `nchunks` chunks a proxy cache holds, from its vlmeta
// "proxy-fetched" bitmap (bit n % 8 of byte n / 8: chunk n, or with
// `bits_per_chunk` > 1 the chunk's blocks, all of which must be set; proxy.py,
// Proxy._seed_runtime). EIO when the bitmap's size is not
// (nchunks * bits_per_chunk + 7) / 8.
Result<std::vector<bool>> FetchedChunks(std::span<const uint8_t> bitmap, int64_t nchunks,
                                        int64_t bits_per_chunk);

}  // namespace b2ndfs::format
