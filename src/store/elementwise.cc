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

Result<ElementwiseProgram> ElementwiseProgram::Compile(const format::ParsedExpression& e,
                                                       const std::vector<DType>& operand_dtypes) {
  ElementwiseProgram p;
  p.steps_.resize(e.nodes.size());
  for (size_t i = 0; i < e.nodes.size(); ++i) {
    const format::ExpressionNode& n = e.nodes[i];
    Step& s = p.steps_[i];
    s.args = n.args;
    auto arg = [&](size_t k) -> const Step& { return p.steps_[static_cast<size_t>(n.args[k])]; };
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
        continue;
      case Kind::kOperand:
        if (n.operand < 0 || static_cast<size_t>(n.operand) >= operand_dtypes.size()) {
          return Refuse(n, "no dtype for operand '" + n.op + "'");
        }
        s.op = Op::kOperand;
        s.operand = n.operand;
        s.result = s.compute = operand_dtypes[static_cast<size_t>(n.operand)];
        continue;
      case Kind::kUnary:
      case Kind::kCall:
      case Kind::kBinary:
        break;
    }
    std::string name = n.op;
    if (n.kind == Kind::kUnary && name == "-") name = "negative";
    if (n.kind == Kind::kUnary && name == "+") name = "positive";
    if (n.kind == Kind::kUnary && name == "~") name = "invert";
    if (name == "absolute") name = "abs";
    // A sign on a constant is part of the constant, as in Python.
    if ((name == "negative" || name == "positive") && arg(0).scalar &&
        arg(0).py != Step::Py::kBool) {
      s = arg(0);
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
      continue;
    }
    bool all_scalar = true;
    for (size_t k = 0; k < n.args.size(); ++k) all_scalar = all_scalar && arg(k).scalar;
    if (all_scalar && name != "where") {
      return Refuse(n, "an operation on constants only is not computed");
    }
    if (n.chained) return Refuse(n, "chained comparisons are not elementwise");
    static const std::pair<const char*, Op> kBinary[] = {
        {"+", Op::kAdd}, {"-", Op::kSub},       {"*", Op::kMul},       {"/", Op::kDiv},
        {"<", Op::kLt},  {"<=", Op::kLe},       {">", Op::kGt},        {">=", Op::kGe},
        {"==", Op::kEq}, {"!=", Op::kNe},       {"&", Op::kAnd},       {"|", Op::kOr},
        {"^", Op::kXor}, {"minimum", Op::kMin}, {"maximum", Op::kMax},
    };
    bool binary = false;
    for (const auto& [text, op] : kBinary) {
      if (name == text && n.args.size() == 2) {
        s.op = op;
        binary = true;
      }
    }
    if (binary) {
      B2NDFS_ASSIGN_OR_RETURN(s.compute, Common(arg(0), arg(1)));
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
      continue;
    }
    if (name == "where") {
      s.op = Op::kWhere;
      if (arg(1).scalar && arg(2).scalar) {
        auto t = Promote(ScalarDefault(arg(1)), ScalarDefault(arg(2)));
        s.compute = t.value_or(DType::kF64);
      } else {
        B2NDFS_ASSIGN_OR_RETURN(s.compute, Common(arg(1), arg(2)));
      }
      s.result = s.compute;
      if (all_scalar) return Refuse(n, "an operation on constants only is not computed");
      continue;
    }
    if (n.args.size() != 1) {
      return Refuse(n, "'" + name + "' is not computed by b2ndfs");
    }
    const Step& x = arg(0);
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

namespace {

// Calls fn with a value of the C++ type of `t` (bool as uint8_t, 0 or 1).
template <typename Fn>
void WithType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kBool:
    case DType::kU8:
      return fn(uint8_t{});
    case DType::kI8:
      return fn(int8_t{});
    case DType::kI16:
      return fn(int16_t{});
    case DType::kI32:
      return fn(int32_t{});
    case DType::kI64:
      return fn(int64_t{});
    case DType::kU16:
      return fn(uint16_t{});
    case DType::kU32:
      return fn(uint32_t{});
    case DType::kU64:
      return fn(uint64_t{});
    case DType::kF32:
      return fn(float{});
    case DType::kF64:
      return fn(double{});
  }
}

// Items of one step: `n` of them, or one broadcast (stride 0).
struct Items {
  const uint8_t* data = nullptr;
  int64_t stride = 1;
  DType dtype = DType::kF64;
  std::vector<uint8_t> own;
};

Items Cast(const Items& in, int64_t n, DType to) {
  if (in.dtype == to) return Items{in.data, in.stride, in.dtype, {}};
  Items out;
  out.dtype = to;
  out.stride = in.stride;
  const int64_t count = in.stride == 0 ? 1 : n;
  out.own.resize(static_cast<size_t>(count * SizeOf(to)));
  WithType(in.dtype, [&](auto from_tag) {
    using From = decltype(from_tag);
    WithType(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* src = reinterpret_cast<const From*>(in.data);
      To* dst = reinterpret_cast<To*>(out.own.data());
      for (int64_t i = 0; i < count; ++i) {
        if (to == DType::kBool) {
          dst[i] = static_cast<To>(src[i] != 0);
        } else {
          dst[i] = static_cast<To>(src[i]);
        }
      }
    });
  });
  out.data = out.own.data();
  return out;
}

Items Constant(const Step& s) {
  Items out;
  out.dtype = s.result;
  out.stride = 0;
  out.own.resize(static_cast<size_t>(SizeOf(s.result)));
  WithType(s.result, [&](auto tag) {
    using T = decltype(tag);
    T v;
    if (s.result == DType::kBool) {
      v = static_cast<T>(s.py == Step::Py::kFloat ? s.float_value != 0 : s.int_value != 0);
    } else if (s.py == Step::Py::kFloat) {
      v = static_cast<T>(s.float_value);
    } else {
      v = static_cast<T>(s.int_value);
    }
    std::memcpy(out.own.data(), &v, sizeof v);
  });
  out.data = out.own.data();
  return out;
}

template <typename T>
T Wrap(T a, T b, Op op) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    const U x = static_cast<U>(a), y = static_cast<U>(b);
    const U r = op == Op::kAdd ? U(x + y) : op == Op::kSub ? U(x - y) : U(x * y);
    return static_cast<T>(r);
  } else {
    return op == Op::kAdd ? a + b : op == Op::kSub ? a - b : a * b;
  }
}

template <typename T>
void Binary(Op op, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n, uint8_t* out) {
  T* o = reinterpret_cast<T*>(out);
  switch (op) {
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
      for (int64_t i = 0; i < n; ++i) o[i] = Wrap(a[i * sa], b[i * sb], op);
      return;
    case Op::kDiv:
      if constexpr (std::is_floating_point_v<T>) {
        for (int64_t i = 0; i < n; ++i) o[i] = a[i * sa] / b[i * sb];
      }
      return;
    case Op::kAnd:
    case Op::kOr:
    case Op::kXor:
      if constexpr (std::is_integral_v<T>) {
        for (int64_t i = 0; i < n; ++i) {
          const T x = a[i * sa], y = b[i * sb];
          o[i] = static_cast<T>(op == Op::kAnd ? (x & y) : op == Op::kOr ? (x | y) : (x ^ y));
        }
      }
      return;
    case Op::kMin:
    case Op::kMax:
      // NumPy's loops: NaN propagates (the first one met); otherwise the
      // lesser (greater), the first on ties.
      for (int64_t i = 0; i < n; ++i) {
        const T x = a[i * sa], y = b[i * sb];
        bool first;
        if constexpr (std::is_floating_point_v<T>) {
          first = std::isnan(x) || (op == Op::kMin ? x <= y : x >= y);
        } else {
          first = op == Op::kMin ? x <= y : x >= y;
        }
        o[i] = first ? x : y;
      }
      return;
    default:
      break;
  }
  uint8_t* r = out;
  for (int64_t i = 0; i < n; ++i) {
    const T x = a[i * sa], y = b[i * sb];
    bool v = false;
    switch (op) {
      case Op::kLt:
        v = x < y;
        break;
      case Op::kLe:
        v = x <= y;
        break;
      case Op::kGt:
        v = x > y;
        break;
      case Op::kGe:
        v = x >= y;
        break;
      case Op::kEq:
        v = x == y;
        break;
      case Op::kNe:
        v = x != y;
        break;
      default:
        break;
    }
    r[i] = v ? 1 : 0;
  }
}

template <typename T>
void Unary(Op op, bool boolean, const T* x, int64_t sx, int64_t n, uint8_t* out) {
  T* o = reinterpret_cast<T*>(out);
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i * sx];
    switch (op) {
      case Op::kNeg:
        if constexpr (std::is_integral_v<T>) {
          o[i] = Wrap(T{0}, v, Op::kSub);
        } else {
          o[i] = -v;
        }
        break;
      case Op::kPos:
        o[i] = v;
        break;
      case Op::kNot:
        if constexpr (std::is_integral_v<T>) o[i] = boolean ? T(v ^ 1) : T(~v);
        break;
      case Op::kAbs:
        if constexpr (std::is_floating_point_v<T>) {
          o[i] = std::fabs(v);
        } else if constexpr (std::is_signed_v<T>) {
          o[i] = v < 0 ? Wrap(T{0}, v, Op::kSub) : v;
        } else {
          o[i] = v;
        }
        break;
      case Op::kSquare:
        o[i] = Wrap(v, v, Op::kMul);
        break;
      case Op::kSqrt:
        if constexpr (std::is_floating_point_v<T>) o[i] = std::sqrt(v);
        break;
      default:
        break;
    }
  }
}

}  // namespace

void ElementwiseProgram::Run(std::span<const uint8_t* const> inputs, int64_t n,
                             uint8_t* out) const {
  std::vector<Items> values(steps_.size());
  const size_t last = steps_.size() - 1;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    Items& v = values[i];
    if (s.op == Op::kOperand) {
      v = Items{inputs[static_cast<size_t>(s.operand)], 1, s.result, {}};
      continue;
    }
    if (s.op == Op::kConstant) {
      v = Constant(s);
      continue;
    }
    // Every argument cast to the step's dtype (where's condition to bool).
    std::vector<Items> args;
    for (size_t k = 0; k < s.args.size(); ++k) {
      const Items& a = values[static_cast<size_t>(s.args[k])];
      const DType to = s.op == Op::kWhere && k == 0 ? DType::kBool : s.compute;
      args.push_back(Cast(a, n, to));
    }
    v.dtype = s.result;
    v.stride = 1;
    uint8_t* dst = out;
    if (i != last) {
      v.own.resize(static_cast<size_t>(n * SizeOf(s.result)));
      dst = v.own.data();
    }
    WithType(s.compute, [&](auto tag) {
      using T = decltype(tag);
      auto at = [&](size_t k) { return reinterpret_cast<const T*>(args[k].data); };
      if (s.op == Op::kWhere) {
        const uint8_t* c = args[0].data;
        const T* x = at(1);
        const T* y = at(2);
        T* o = reinterpret_cast<T*>(dst);
        for (int64_t j = 0; j < n; ++j) {
          o[j] = c[j * args[0].stride] ? x[j * args[1].stride] : y[j * args[2].stride];
        }
      } else if (args.size() == 2) {
        Binary<T>(s.op, at(0), args[0].stride, at(1), args[1].stride, n, dst);
      } else {
        Unary<T>(s.op, s.compute == DType::kBool, at(0), args[0].stride, n, dst);
      }
    });
    if (i != last) v.data = v.own.data();
    // A tree: each step is an argument once; its items are not needed again
    // (`args` may point into them until here).
    args.clear();
    for (int a : s.args) values[static_cast<size_t>(a)] = {};
  }
  if (last < values.size() && steps_[last].op == Op::kOperand) {
    std::memcpy(out, values[last].data, static_cast<size_t>(n * SizeOf(steps_[last].result)));
  }
}

}  // namespace b2ndfs::store
