// NumPy's casting and arithmetic, restricted to where both NumPy 1 (value-
// based casting of Python scalars) and NumPy 2 (NEP 50, weak scalars) give
// the same dtype and the same bytes.
#include "elementwise.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace b2ndfs::store {
namespace {

using Step = ElementwiseProgram::Step;
using Op = Step::Op;
using Kind = format::ExpressionNode::Kind;

struct DTypeInfo {
  DType dtype;
  const char* descr;
  char kind;  // 'b', 'i', 'u', 'f'
  int size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::kBool, "|b1", 'b', 1}, {DType::kI8, "|i1", 'i', 1},  {DType::kI16, "<i2", 'i', 2},
    {DType::kI32, "<i4", 'i', 4},  {DType::kI64, "<i8", 'i', 8}, {DType::kU8, "|u1", 'u', 1},
    {DType::kU16, "<u2", 'u', 2},  {DType::kU32, "<u4", 'u', 4}, {DType::kU64, "<u8", 'u', 8},
    {DType::kF32, "<f4", 'f', 4},  {DType::kF64, "<f8", 'f', 8},
};
const DTypeInfo& Info(DType t) { return kDTypes[static_cast<int>(t)]; }
char KindOf(DType t) { return Info(t).kind; }

DType IntOf(char kind, int size) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.kind == kind && d.size == size) return d.dtype;
  }
  return DType::kF64;
}

// NumPy's promotion of two array dtypes; nullopt where it leaves integers
// for float64 (int64 with uint64), which this evaluator refuses.
std::optional<DType> Promote(DType a, DType b) {
  if (a == b) return a;
  const char ka = KindOf(a), kb = KindOf(b);
  const int sa = Info(a).size, sb = Info(b).size;
  if (ka == 'b') return b;
  if (kb == 'b') return a;
  if (ka == 'f' || kb == 'f') {
    if (ka == 'f' && kb == 'f') return sa > sb ? a : b;
    const int fsize = ka == 'f' ? sa : sb;
    const int isize = ka == 'f' ? sb : sa;
    // float32 holds integers of up to 16 bits exactly.
    return fsize == 4 && isize <= 2 ? DType::kF32 : DType::kF64;
  }
  if (ka == kb) return sa > sb ? a : b;
  const int ssize = ka == 'i' ? sa : sb;
  const int usize = ka == 'u' ? sa : sb;
  if (usize < ssize) return IntOf('i', ssize);
  if (usize == 8) return std::nullopt;
  return IntOf('i', 2 * usize);
}

// A Python constant met by an array of `a`: the dtype NumPy computes in.
Result<DType> WithScalar(DType a, const Step& s) {
  const char k = KindOf(a);
  switch (s.py) {
    case Step::Py::kBool:
      return a;
    case Step::Py::kInt: {
      const int64_t v = s.int_value;
      if (k == 'b') return DType::kI64;
      if (k == 'f') {
        if (v > (int64_t{1} << 53) || v < -(int64_t{1} << 53)) {
          return Status(EINVAL, "the constant " + std::to_string(v) + " is not exact in float64");
        }
        return a;
      }
      const int bits = 8 * Info(a).size;
      bool fits;
      if (k == 'i') {
        fits = bits == 64 || (v >= -(int64_t{1} << (bits - 1)) && v < (int64_t{1} << (bits - 1)));
      } else {
        fits = v >= 0 && (bits == 64 || v < (int64_t{1} << bits));
      }
      if (!fits) {
        return Status(EINVAL, "the constant " + std::to_string(v) + " does not fit " +
                                  Info(a).descr + " (NumPy 1 and 2 disagree there)");
      }
      return a;
    }
    case Step::Py::kFloat:
      if (k != 'f') return DType::kF64;
      if (a == DType::kF32 && std::isfinite(s.float_value) && std::fabs(s.float_value) > FLT_MAX) {
        return Status(EINVAL, "a constant beyond float32's range (NumPy 1 and 2 disagree there)");
      }
      return a;
  }
  return a;
}

DType ScalarDefault(const Step& s) {
  return s.py == Step::Py::kBool  ? DType::kBool
         : s.py == Step::Py::kInt ? DType::kI64
                                  : DType::kF64;
}

// The dtype two steps are computed in.
Result<DType> Common(const Step& a, const Step& b) {
  if (!a.scalar && !b.scalar) {
    auto t = Promote(a.result, b.result);
    if (!t) return Status(EINVAL, "int64 with uint64 (NumPy makes float64 of them)");
    return *t;
  }
  if (a.scalar && b.scalar) {
    auto t = Promote(ScalarDefault(a), ScalarDefault(b));
    return t.value_or(DType::kF64);
  }
  return a.scalar ? WithScalar(b.result, a) : WithScalar(a.result, b);
}

Status Refuse(const format::ExpressionNode& n, const std::string& why) {
  return Status(EINVAL, "at " + std::to_string(n.pos) + ": " + why);
}

}  // namespace

std::optional<DType> DTypeOfDescr(const std::string& quoted) {
  // Container::npy_descr() is as the .npy header writes it: quoted.
  std::string descr = quoted;
  if (descr.size() >= 2 && descr.front() == '\'' && descr.back() == '\'') {
    descr = descr.substr(1, descr.size() - 2);
  }
  for (const DTypeInfo& d : kDTypes) {
    if (descr == d.descr) return d.dtype;
  }
  // NumPy writes '=' or '<' for native little-endian, '|' for one byte.
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '=' || descr[0] == '|')) {
    for (const DTypeInfo& d : kDTypes) {
      if (descr.substr(1) == std::string(d.descr).substr(1)) return d.dtype;
    }
  }
  return std::nullopt;
}
const char* DescrOf(DType dtype) { return Info(dtype).descr; }
int64_t SizeOf(DType dtype) { return Info(dtype).size; }

namespace {

// Constants and operands: true when `n` is one (and `s` says it).
Result<bool> CompileLeaf(const format::ExpressionNode& n, const std::vector<DType>& operand_dtypes,
                         Step& s) {
  switch (n.kind) {
    case Kind::kInt:
    case Kind::kFloat:
    case Kind::kBool:
      if (n.too_big) return Refuse(n, "the number " + n.op + " is too large");
      s.op = Op::kConstant;
      s.scalar = true;
      s.py = n.kind == Kind::kInt    ? Step::Py::kInt
             : n.kind == Kind::kBool ? Step::Py::kBool
                                     : Step::Py::kFloat;
      s.int_value = n.int_value;
      s.float_value = n.float_value;
      s.result = ScalarDefault(s);
      return true;
    case Kind::kOperand:
      if (n.operand < 0 || static_cast<size_t>(n.operand) >= operand_dtypes.size()) {
        return Refuse(n, "no dtype for operand '" + n.op + "'");
      }
      s.op = Op::kOperand;
      s.operand = n.operand;
      s.result = s.compute = operand_dtypes[static_cast<size_t>(n.operand)];
      return true;
    case Kind::kUnary:
    case Kind::kCall:
    case Kind::kBinary:
      break;
  }
  return false;
}

// The NumPy name of an operation ("negative" for unary '-', "abs" for
// "absolute", ...).
std::string OperationName(const format::ExpressionNode& n) {
  std::string name = n.op;
  if (n.kind == Kind::kUnary && name == "-") name = "negative";
  if (n.kind == Kind::kUnary && name == "+") name = "positive";
  if (n.kind == Kind::kUnary && name == "~") name = "invert";
  if (name == "absolute") name = "abs";
  return name;
}

// A sign (`name` "negative" or "positive") on a constant is part of the
// constant, as in Python: true when `s` is that constant.
Result<bool> FoldSign(const format::ExpressionNode& n, const std::string& name, const Step& x,
                      Step& s) {
  if (!x.scalar || x.py == Step::Py::kBool) return false;
  s = x;
  s.args.clear();
  if (name == "negative") {
    if (s.py == Step::Py::kInt) {
      if (s.int_value == std::numeric_limits<int64_t>::min()) {
        return Refuse(n, "the number is too large");
      }
      s.int_value = -s.int_value;
    } else {
      s.float_value = -s.float_value;
    }
  }
  return true;
}

// The binary operators and two-argument functions: true when `name` is one.
bool BinaryOp(const std::string& name, size_t nargs, Op* out) {
  static const std::pair<const char*, Op> kBinary[] = {
      {"+", Op::kAdd}, {"-", Op::kSub},       {"*", Op::kMul},       {"/", Op::kDiv},
      {"<", Op::kLt},  {"<=", Op::kLe},       {">", Op::kGt},        {">=", Op::kGe},
      {"==", Op::kEq}, {"!=", Op::kNe},       {"&", Op::kAnd},       {"|", Op::kOr},
      {"^", Op::kXor}, {"minimum", Op::kMin}, {"maximum", Op::kMax},
  };
  bool binary = false;
  for (const auto& [text, op] : kBinary) {
    if (name == text && nargs == 2) {
      *out = op;
      binary = true;
    }
  }
  return binary;
}

// s.op is binary: the dtypes it computes in and gives.
Status CompileBinary(const format::ExpressionNode& n, const std::string& name, const Step& a,
                     const Step& b, Step& s) {
  B2NDFS_ASSIGN_OR_RETURN(s.compute, Common(a, b));
  const char k = KindOf(s.compute);
  s.result = s.compute;
  switch (s.op) {
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
      if (k == 'b') return Refuse(n, "'" + name + "' of booleans is not computed");
      break;
    case Op::kDiv:
      if (k != 'f') s.compute = s.result = DType::kF64;
      break;
    case Op::kAnd:
    case Op::kOr:
    case Op::kXor:
      if (k == 'f') return Refuse(n, "'" + name + "' is not defined for floats");
      break;
    case Op::kMin:
    case Op::kMax:
      break;
    default:
      s.result = DType::kBool;  // comparisons
  }
  return Status::Ok();
}

// where(condition, a, b).
Status CompileWhere(const format::ExpressionNode& n, const Step& a, const Step& b, bool all_scalar,
                    Step& s) {
  s.op = Op::kWhere;
  if (a.scalar && b.scalar) {
    auto t = Promote(ScalarDefault(a), ScalarDefault(b));
    s.compute = t.value_or(DType::kF64);
  } else {
    B2NDFS_ASSIGN_OR_RETURN(s.compute, Common(a, b));
  }
  s.result = s.compute;
  if (all_scalar) return Refuse(n, "an operation on constants only is not computed");
  return Status::Ok();
}

// One-argument functions and unary operators.
Status CompileUnary(const format::ExpressionNode& n, const std::string& name, const Step& x,
                    Step& s) {
  const DType t = x.result;
  const char k = KindOf(t);
  s.compute = s.result = t;
  if (name == "negative" || name == "positive") {
    if (k == 'b') return Refuse(n, "'" + name + "' of booleans is not computed");
    s.op = name == "negative" ? Op::kNeg : Op::kPos;
  } else if (name == "invert") {
    if (k == 'f') return Refuse(n, "'~' is not defined for floats");
    s.op = Op::kNot;
  } else if (name == "abs") {
    s.op = Op::kAbs;
  } else if (name == "square") {
    if (k == 'b') return Refuse(n, "'square' of booleans is not computed");
    s.op = Op::kSquare;
  } else if (name == "sqrt") {
    s.op = Op::kSqrt;
    if (k != 'f') {
      const int size = Info(t).size;
      if (size == 1) {
        return Refuse(n, "NumPy computes sqrt of " + std::string(Info(t).descr) +
                             " in float16, which b2ndfs does not");
      }
      s.compute = s.result = size == 2 ? DType::kF32 : DType::kF64;
    }
  } else {
    return Refuse(n, "'" + name +
                         "' is not computed by b2ndfs (only arithmetic, comparisons, & | ^ ~, "
                         "abs, sqrt, square, minimum, maximum and where give NumPy's bytes "
                         "exactly)");
  }
  return Status::Ok();
}

// Node n, an operation on earlier steps (`steps`), into `s`.
Status CompileOperation(const format::ExpressionNode& n, const std::vector<Step>& steps, Step& s) {
  auto arg = [&](size_t k) -> const Step& { return steps[static_cast<size_t>(n.args[k])]; };
  const std::string name = OperationName(n);
  if (name == "negative" || name == "positive") {
    B2NDFS_ASSIGN_OR_RETURN(const bool folded, FoldSign(n, name, arg(0), s));
    if (folded) return Status::Ok();
  }
  bool all_scalar = true;
  for (size_t k = 0; k < n.args.size(); ++k) all_scalar = all_scalar && arg(k).scalar;
  if (all_scalar && name != "where") {
    return Refuse(n, "an operation on constants only is not computed");
  }
  if (n.chained) return Refuse(n, "chained comparisons are not elementwise");
  if (BinaryOp(name, n.args.size(), &s.op)) return CompileBinary(n, name, arg(0), arg(1), s);
  if (name == "where") return CompileWhere(n, arg(1), arg(2), all_scalar, s);
  if (n.args.size() != 1) {
    return Refuse(n, "'" + name + "' is not computed by b2ndfs");
  }
  return CompileUnary(n, name, arg(0), s);
}

}  // namespace

Result<ElementwiseProgram> ElementwiseProgram::Compile(const format::ParsedExpression& e,
                                                       const std::vector<DType>& operand_dtypes) {
  ElementwiseProgram p;
  p.steps_.resize(e.nodes.size());
  for (size_t i = 0; i < e.nodes.size(); ++i) {
    const format::ExpressionNode& n = e.nodes[i];
    Step& s = p.steps_[i];
    s.args = n.args;
    B2NDFS_ASSIGN_OR_RETURN(const bool leaf, CompileLeaf(n, operand_dtypes, s));
    if (!leaf) B2NDFS_RETURN_IF_ERROR(CompileOperation(n, p.steps_, s));
  }
  if (e.root < 0 || static_cast<size_t>(e.root) >= p.steps_.size()) {
    return Status(EINVAL, "the expression is empty");
  }
  if (static_cast<size_t>(e.root) != p.steps_.size() - 1) {
    return Status(EINVAL, "internal error: the expression's root is not its last node");
  }
  if (p.steps_.back().scalar) return Status(EINVAL, "the expression uses no operand");
  p.result_ = p.steps_.back().result;
  return p;
}

}  // namespace b2ndfs::store
