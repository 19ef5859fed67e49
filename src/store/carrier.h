// store/carrier (private to store): a carrier's saved expression, evaluated
// block by block (README.md, "Variable-length data, carriers and caches").
//
// PrepareEvaluation() decides, at open, whether the carrier is served as an
// array: its recipe's expression compiles (elementwise.h), every operand it
// uses opens (OperandOpener) as an array of exactly the carrier's shape, and
// the expression's NumPy dtype is the carrier's. Then the Evaluation makes
// any block of the carrier's layout by reading the same box of each operand
// (through the operand's own reads and cache) and computing it; the block
// cache keeps what it made like a decompressed block.
// Lifetime: owned by the carrier's Container (with its operands); refers to
// the Container's layout.
// Thread-safety: Make() from any thread.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/store/operands.h"
#include "block_loader.h"
#include "elementwise.h"

namespace b2ndfs::store {

class Evaluation : public BlockMaker {
 public:
  Result<cache::Value> Make(int64_t chunk, int64_t block) const override;

  // meta.json's "evaluation" members: each used operand's name and path.
  const std::vector<std::pair<std::string, std::string>>& resolved() const { return resolved_; }
  // Who may read the computed bytes (operands.h, "Readers"); nullopt when
  // neither the carrier's nor any operand's readers were known.
  const std::optional<struct stat>& readers() const { return readers_; }

 private:
  friend struct EvaluationBuilder;
  Evaluation(const geometry::ArrayLayout& layout, ElementwiseProgram program)
      : layout_(layout), program_(std::move(program)) {}
  const geometry::ArrayLayout& layout_;
  const ElementwiseProgram program_;
  std::vector<Operand> operands_;  // by the expression's operand index
  std::vector<std::pair<std::string, std::string>> resolved_;
  std::optional<struct stat> readers_;
};

// What came of trying: the evaluation, or why not (`error`, empty when the
// recipe has no expression or the grammar refused it: meta.json says so from
// the recipe); `watched`: every operand path tried, at the version read.
struct EvaluationAttempt {
  std::unique_ptr<const Evaluation> evaluation;
  std::string error;
  std::vector<OperandVersion> watched;
};

EvaluationAttempt PrepareEvaluation(std::span<const uint8_t> recipe,
                                    const geometry::ArrayLayout& layout,
                                    const std::string& npy_descr, const OperandScope& scope);

}  // namespace b2ndfs::store
