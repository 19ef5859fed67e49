// fuzz_vlen: python-blosc2's tags and the byte work of items/ and batches/
// (format/vlen.h), all fed the raw input.
//
// Beyond "does not crash", it checks what the header promises: a decoded tag
// is one of the documented kinds (a batch serializer msgpack or arrow); a
// batch merged from msgpack blocks is one msgpack list whose JSON is valid;
// an Arrow stream merged is one stream (merging it again gives it back); a
// proxy bitmap gives one flag per chunk; an expression in the elementwise
// grammar uses only the operands given; errors are EIO (or ENOMEM; EINVAL
// for expressions).
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/format/expression.h"
#include "b2ndfs/format/meta_json.h"
#include "b2ndfs/format/vlen.h"
#include "elementwise.h"
#include "fuzz_common.h"

namespace b2ndfs::fuzz {
namespace {

void CheckError(const Status& status, const std::string& what) {
  FUZZ_CHECK(status.error_number() == EIO || status.error_number() == ENOMEM,
             what + " error is not EIO: " + status.message());
  FUZZ_CHECK(!status.message().empty(), what + " error without a message");
}

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace
}  // namespace b2ndfs::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace b2ndfs;        // NOLINT
  using namespace b2ndfs::fuzz;  // NOLINT
  const std::span<const uint8_t> input(data, size);
  const std::vector<uint8_t> content(data, data + size);

  for (const char* name : {"batcharray", "vlarray", "listarray", "b2o", "proxy-source"}) {
    auto tag = format::DecodeContentTag({{name, content}});
    if (!tag.ok()) {
      CheckError(tag.status(), name);
      continue;
    }
    if (tag->kind == format::ContentKind::kBatches) {
      FUZZ_CHECK(tag->serializer == "msgpack" || tag->serializer == "arrow",
                 "serializer " + tag->serializer);
    }
    if (tag->kind == format::ContentKind::kCarrier) {
      FUZZ_CHECK(!tag->carrier_kind.empty() && tag->recipe_vlmeta == "b2o", "carrier tag");
    }
  }

  auto merged = format::MergeMsgpackBlocks(input);
  if (merged.ok()) {
    FUZZ_CHECK(merged->size() <= size + 5, "a merged batch grew by more than a header");
    auto json = format::MsgpackToJson(Bytes(*merged));
    if (json) {
      std::string error;
      FUZZ_CHECK(IsValidJson(*json, &error), "batch JSON is invalid: " + error);
      FUZZ_CHECK(!json->empty() && json->front() == '[', "a batch is not a list: " + *json);
    }
  } else {
    CheckError(merged.status(), "MergeMsgpackBlocks");
  }

  auto stream = format::MergeArrowStreams(input);
  if (stream.ok()) {
    FUZZ_CHECK(stream->size() <= size + 8, "a merged Arrow stream grew");
    auto again = format::MergeArrowStreams(Bytes(*stream));
    FUZZ_CHECK(again.ok() && *again == *stream, "a merged Arrow stream is not one stream");
  } else {
    CheckError(stream.status(), "MergeArrowStreams");
  }

  // The input as a saved expression over operands a, b, o0 (format/expression.h),
  // and as a recipe.
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto check = format::CheckElementwiseExpression(text, {"a", "b", "o0"});
  if (check.ok()) {
    FUZZ_CHECK(check->nodes > 0 && check->nodes <= 1024, "expression nodes");
    FUZZ_CHECK(check->operands.size() <= 3, "expression operands");
  } else {
    FUZZ_CHECK(check.status().error_number() == EINVAL, "expression error is not EINVAL");
  }
  // Compiled for float32, int32 and bool operands, and run on three items:
  // whatever it accepts computes without a fault.
  auto parsed = format::ParseElementwiseExpression(text, {"a", "b", "o0"});
  if (parsed.ok()) {
    const store::DType kinds[] = {store::DType::kF32, store::DType::kI32, store::DType::kBool};
    std::vector<store::DType> dtypes;
    for (size_t i = 0; i < parsed->operands.size(); ++i) dtypes.push_back(kinds[i % 3]);
    auto program = store::ElementwiseProgram::Compile(*parsed, dtypes);
    if (program.ok()) {
      alignas(8) uint8_t items[3][24] = {};
      const uint8_t* inputs[3] = {items[0], items[1], items[2]};
      alignas(8) uint8_t out[24];
      program->Run(std::span<const uint8_t* const>(inputs, parsed->operands.size()), 3, out);
    } else {
      FUZZ_CHECK(program.status().error_number() == EINVAL, "compile error is not EINVAL");
    }
  }
  auto recipe = format::RecipeExpressionOf(input);
  if (!recipe.ok()) CheckError(recipe.status(), "RecipeExpressionOf");

  if (size > 0) {
    const int64_t bpc = 1 + data[0] % 3;
    const int64_t nchunks = static_cast<int64_t>(size - 1) * 8 / bpc;
    auto present = format::FetchedChunks(input.subspan(1), nchunks, bpc);
    if (present.ok()) {
      FUZZ_CHECK(static_cast<int64_t>(present->size()) == nchunks, "one flag per chunk");
    } else {
      CheckError(present.status(), "FetchedChunks");
    }
  }
  return 0;
}
