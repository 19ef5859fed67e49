#include "carrier.h"

#include <algorithm>
#include <cstring>

#include "b2ndfs/format/vlen.h"
#include "b2ndfs/source/provenance.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/util/checked_math.h"
#include "box_reader.h"

namespace b2ndfs::store {

using geometry::Box;

namespace {

// A descr as NumPy prints it ('<f4' is quoted in .npy headers).
std::string Unquoted(const std::string& descr) {
  if (descr.size() >= 2 && descr.front() == '\'' && descr.back() == '\'') {
    return descr.substr(1, descr.size() - 2);
  }
  return descr;
}

}  // namespace

struct EvaluationBuilder {
  static std::unique_ptr<Evaluation> Make(const geometry::ArrayLayout& layout,
                                          ElementwiseProgram program, std::vector<Operand> operands,
                                          std::vector<std::pair<std::string, std::string>> named,
                                          std::optional<struct stat> readers) {
    std::unique_ptr<Evaluation> e(new Evaluation(layout, std::move(program)));
    e->operands_ = std::move(operands);
    e->resolved_ = std::move(named);
    e->readers_ = readers;
    return e;
  }
};

EvaluationAttempt PrepareEvaluation(std::span<const uint8_t> recipe,
                                    const geometry::ArrayLayout& layout,
                                    const std::string& npy_descr, const OperandScope& scope) {
  EvaluationAttempt attempt;
  auto expression = format::RecipeExpressionOf(recipe);
  if (!expression.ok() || !*expression) return attempt;  // meta.json says why, or nothing
  const format::RecipeExpression& saved = **expression;
  auto parsed = format::ParseElementwiseExpression(saved.expression, saved.operands);
  if (!parsed.ok()) return attempt;  // outside the grammar: meta.json says so
  auto fail = [&](const std::string& why) {
    attempt.error = "not evaluated: " + why;
    return std::move(attempt);
  };
  if (!layout.regular()) return fail("the carrier is not an n-dimensional array");
  std::vector<Operand> operands;
  std::vector<DType> dtypes;
  std::vector<std::pair<std::string, std::string>> named;
  for (const std::string& name : parsed->operands) {
    const auto at = std::find(saved.operands.begin(), saved.operands.end(), name);
    const std::string& urlpath = saved.paths[static_cast<size_t>(at - saved.operands.begin())];
    const std::string what =
        "operand '" + name + "'" + (urlpath.empty() ? "" : " (" + urlpath + ")");
    if (urlpath.empty())
      return fail(what + " is not a container of the mount (a remote or store reference)");
    if (urlpath.front() == '/')
      return fail(
          what +
          ": absolute paths are not followed, only paths relative to the carrier's directory");
    Operand operand = scope.opener->Open(scope, urlpath);
    if (!operand.path.empty()) attempt.watched.emplace_back(operand.path, operand.version);
    if (operand.container) {
      for (const OperandVersion& v : operand.container->operand_versions())
        attempt.watched.push_back(v);
    }
    if (!operand.error.empty()) return fail(what + ": " + operand.error);
    const Container& c = *operand.container;
    if (!c.ok()) return fail(what + ": " + c.error());
    if (c.content_kind() != ContentKind::kArray) {
      return fail(what + " is not an array" +
                  (c.evaluation_error().empty() ? "" : " (" + c.evaluation_error() + ")"));
    }
    if (c.layout().shape() != layout.shape()) {
      return fail(what + " has shape " + geometry::ToString(Box::FromShape(c.layout().shape())) +
                  ", not the carrier's " + geometry::ToString(Box::FromShape(layout.shape())) +
                  " (b2ndfs does not broadcast)");
    }
    const auto dtype = DTypeOfDescr(c.npy_descr());
    if (!dtype || SizeOf(*dtype) != c.layout().itemsize()) {
      return fail(what + " has dtype " + Unquoted(c.npy_descr()) +
                  "; b2ndfs evaluates bool, integers and float32/float64, little-endian");
    }
    dtypes.push_back(*dtype);
    named.emplace_back(name, operand.shown);
    operands.push_back(std::move(operand));
  }
  auto program = ElementwiseProgram::Compile(*parsed, dtypes);
  if (!program.ok()) return fail(program.status().message());
  const auto declared = DTypeOfDescr(npy_descr);
  if (!declared || *declared != program->result() || SizeOf(*declared) != layout.itemsize()) {
    return fail(std::string("NumPy computes the expression as ") + DescrOf(program->result()) +
                " but the carrier's dtype is " + Unquoted(npy_descr));
  }
  // What computing one block holds at most: each operand's items and,
  // per step alive at once (at most the nesting, 64), a buffer of 8-byte
  // items. A hostile block shape is refused here, not at the first read.
  constexpr int64_t kMaxBlockEvaluationBytes = int64_t{512} << 20;
  int64_t per_item = 8 * static_cast<int64_t>(std::min<size_t>(program->steps(), 64));
  for (const DType d : dtypes) per_item += SizeOf(d);
  const auto block_items = CheckedProduct(layout.blockshape());
  if (!block_items || *block_items > kMaxBlockEvaluationBytes / per_item) {
    return fail("a block of " + geometry::ToString(Box::FromShape(layout.blockshape())) +
                " items would need more than 512 MiB to evaluate");
  }
  // Who may read the carrier and every operand (README.md, "Permissions");
  // when no owner, group and mode can say it, nobody but root could, and
  // the carrier is not evaluated (its recipe stays readable as it was).
  std::vector<struct stat> inputs;
  if (scope.readers) inputs.push_back(*scope.readers);
  for (const Operand& o : operands) {
    if (o.readers) inputs.push_back(*o.readers);
  }
  std::optional<struct stat> readers;
  if (!inputs.empty()) {
    readers = source::MostRestrictive(inputs);
    if (!readers) {
      return fail(
          "no single owner, group and mode let the same users read the carrier and every "
          "operand (their owners or permissions differ too much); b2ndfs serves computed "
          "bytes only to users who could read each file they come from");
    }
  }
  attempt.evaluation = EvaluationBuilder::Make(layout, std::move(program).value(),
                                               std::move(operands), named, readers);
  return attempt;
}

Result<cache::Value> Evaluation::Make(int64_t chunk, int64_t block) const {
  const int n = layout_.ndim();
  const int64_t itemsize = layout_.itemsize();
  const Box chunk_box = layout_.ChunkBox(chunk);
  const std::vector<int64_t> chunk_coords = layout_.ChunkCoords(chunk);
  Box block_box;
  block_box.start.resize(static_cast<size_t>(n));
  block_box.stop.resize(static_cast<size_t>(n));
  int64_t rest = block;
  for (int a = n - 1; a >= 0; --a) {
    const int64_t per_axis = CeilDiv(layout_.chunkshape()[a], layout_.blockshape()[a]);
    const int64_t coord = rest % per_axis;
    rest /= per_axis;
    block_box.start[a] =
        chunk_coords[a] * layout_.chunkshape()[a] + coord * layout_.blockshape()[a];
    block_box.stop[a] = block_box.start[a] + layout_.blockshape()[a];
  }
  auto value = std::make_shared<cache::Bytes>(
      static_cast<size_t>(layout_.BlockItems(chunk, block) * itemsize));
  const Box region = geometry::Intersect(block_box, chunk_box);
  const int64_t items = region.NumItems();
  if (items == 0 || region.ndim() != n) {
    std::memset(value->data(), 0, value->size());
    return cache::Value(std::move(value));
  }
  std::vector<std::vector<uint8_t>> inputs(operands_.size());
  std::vector<const uint8_t*> pointers(operands_.size());
  // The read that asked for this block holds its pins: the operands' reads
  // are part of it.
  const NestedReadScope nested;
  for (size_t i = 0; i < operands_.size(); ++i) {
    const Container& c = *operands_[i].container;
    inputs[i].resize(static_cast<size_t>(items * c.layout().itemsize()));
    Status read = c.ReadArrayBox(region, inputs[i].data());
    if (!read.ok()) {
      return Status(read.error_number(), "operand " + operands_[i].path + ": " + read.message());
    }
    pointers[i] = inputs[i].data();
  }
  if (region == block_box) {
    program_.Run(pointers, items, value->data());
  } else {
    // An edge block: the evaluated items at their place, zeros as padding.
    std::memset(value->data(), 0, value->size());
    std::vector<uint8_t> made(static_cast<size_t>(items * itemsize));
    program_.Run(pointers, items, made.data());
    geometry::CopyRegion(made.data(), region, value->data(), block_box, region, itemsize);
  }
  return cache::Value(std::move(value));
}

}  // namespace b2ndfs::store
