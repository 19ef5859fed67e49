// store/elementwise (private to store): a carrier's saved expression
// (format/expression.h), compiled for the dtypes of its operands and computed
// over runs of their items exactly as NumPy computes it (README.md,
// "Variable-length data, carriers and caches").
//
// Only what gives NumPy's bytes bit for bit, under NumPy 1's and NumPy 2's
// casting rules alike, is compiled: dtypes bool, int8..int64, uint8..uint64,
// float32, float64 (little-endian); + - * (integers wrap), / (true division:
// float64 for integers), comparisons, & | ^ ~ on booleans and integers, unary
// - and +, abs/absolute, negative, square, sqrt (not for int8, uint8 and bool,
// which NumPy computes in float16), minimum, maximum, where; Python int,
// float and bool constants (an int must fit the dtype it meets). The rest of
// the grammar (// % **, sin, exp, log ... whose libm results may differ from
// NumPy's by an ulp) is refused with the reason. The result dtype is NumPy's
// type promotion of the operands' dtypes.
// Errors: Compile() returns EINVAL saying what is not computed and why.
// Thread-safety: a compiled program is immutable; Run() from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/format/expression.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::store {

enum class DType : uint8_t { kBool, kI8, kI16, kI32, kI64, kU8, kU16, kU32, kU64, kF32, kF64 };

// From a NumPy descr ("<f4", "|b1", "'<i8'" as .npy headers quote it, ...);
// nullopt for others.
std::optional<DType> DTypeOfDescr(const std::string& descr);
const char* DescrOf(DType dtype);
int64_t SizeOf(DType dtype);

class ElementwiseProgram {
 public:
  // `operand_dtypes[i]` is the dtype of expression.operands[i].
  static Result<ElementwiseProgram> Compile(const format::ParsedExpression& expression,
                                            const std::vector<DType>& operand_dtypes);
  DType result() const { return result_; }
  size_t steps() const { return steps_.size(); }
  // `n` items of result() into `out`; inputs[i] holds n items of operand i.
  void Run(std::span<const uint8_t* const> inputs, int64_t n, uint8_t* out) const;

  // One node: an operand, a constant, or an operation on earlier steps.
  struct Step {
    enum class Op {
      kOperand,
      kConstant,
      kAdd,
      kSub,
      kMul,
      kDiv,
      kLt,
      kLe,
      kGt,
      kGe,
      kEq,
      kNe,
      kAnd,
      kOr,
      kXor,
      kNot,
      kNeg,
      kPos,
      kAbs,
      kSquare,
      kSqrt,
      kMin,
      kMax,
      kWhere
    };
    Op op = Op::kOperand;
    std::vector<int> args;        // earlier steps
    DType compute = DType::kF64;  // the arguments are cast to this first
    DType result = DType::kF64;
    bool scalar = false;  // a constant (one item, broadcast)
    int operand = -1;
    // kConstant: the Python value.
    enum class Py { kInt, kFloat, kBool } py = Py::kInt;
    int64_t int_value = 0;
    double float_value = 0;
  };

 private:
  std::vector<Step> steps_;
  DType result_ = DType::kF64;
};

}  // namespace b2ndfs::store
