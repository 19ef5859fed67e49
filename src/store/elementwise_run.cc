// Computing a compiled expression (ElementwiseProgram::Run): each step over
// runs of items, in the C++ type of its dtype, as NumPy computes it
// (elementwise.h); elementwise.cc compiles.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "elementwise.h"

namespace b2ndfs::store {

using Step = ElementwiseProgram::Step;
using Op = Step::Op;

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
