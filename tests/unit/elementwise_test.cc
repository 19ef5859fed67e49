// store/elementwise: NumPy's dtypes for saved expressions (the cases where
// NumPy 1 and 2 agree, checked against numpy 1.24 by hand) and its bytes.
#include "elementwise.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

namespace {

using b2ndfs::format::ParseElementwiseExpression;
using b2ndfs::store::DType;
using b2ndfs::store::DTypeOfDescr;
using b2ndfs::store::ElementwiseProgram;

b2ndfs::Result<ElementwiseProgram> Compile(const std::string& text, std::vector<DType> dtypes) {
  auto parsed = ParseElementwiseExpression(text, {"a", "b", "c"});
  REQUIRE(parsed.ok());
  // dtypes by name a, b, c; the program's operands are in order of first use.
  std::vector<DType> used;
  for (const std::string& name : parsed->operands) used.push_back(dtypes[name[0] - 'a']);
  return ElementwiseProgram::Compile(*parsed, used);
}

DType ResultOf(const std::string& text, std::vector<DType> dtypes) {
  auto p = Compile(text, std::move(dtypes));
  INFO(text << ": " << (p.ok() ? "" : p.status().message()));
  REQUIRE(p.ok());
  return p->result();
}

std::string Refusal(const std::string& text, std::vector<DType> dtypes) {
  auto p = Compile(text, std::move(dtypes));
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().error_number() == EINVAL);
  return p.status().message();
}

TEST_CASE("descrs") {
  CHECK(DTypeOfDescr("'<f4'") == DType::kF32);
  CHECK(DTypeOfDescr("|b1") == DType::kBool);
  CHECK(DTypeOfDescr("=i8") == DType::kI64);
  CHECK_FALSE(DTypeOfDescr(">f4").has_value());
  CHECK_FALSE(DTypeOfDescr("<c8").has_value());
}

TEST_CASE("NumPy's result dtypes") {
  using D = DType;
  CHECK(ResultOf("a + b", {D::kF32, D::kI32}) == D::kF64);
  CHECK(ResultOf("a + b", {D::kF32, D::kI16}) == D::kF32);
  CHECK(ResultOf("a + b", {D::kU8, D::kI8}) == D::kI16);
  CHECK(ResultOf("a + b", {D::kU32, D::kI32}) == D::kI64);
  CHECK(ResultOf("a + b", {D::kBool, D::kU16}) == D::kU16);
  CHECK(ResultOf("a / b", {D::kI32, D::kI32}) == D::kF64);
  CHECK(ResultOf("a / b", {D::kI8, D::kI8}) == D::kF64);
  CHECK(ResultOf("a / 2", {D::kF32}) == D::kF32);
  CHECK(ResultOf("a * 2", {D::kI8}) == D::kI8);
  CHECK(ResultOf("a + 2.5", {D::kI32}) == D::kF64);
  CHECK(ResultOf("a * 2.5", {D::kF32}) == D::kF32);
  CHECK(ResultOf("a + 1", {D::kBool}) == D::kI64);
  CHECK(ResultOf("a > b", {D::kF32, D::kI64}) == D::kBool);
  CHECK(ResultOf("sqrt(a)", {D::kI16}) == D::kF32);
  CHECK(ResultOf("sqrt(a)", {D::kI32}) == D::kF64);
  CHECK(ResultOf("~a", {D::kBool}) == D::kBool);
  CHECK(ResultOf("where(a, b, 0)", {D::kBool, D::kU8}) == D::kU8);
  CHECK(ResultOf("where(a > 0, 1, 0)", {D::kF32}) == D::kI64);
  CHECK(ResultOf("minimum(a, b) & c", {D::kI8, D::kU8, D::kBool}) == D::kI16);
}

TEST_CASE("what NumPy would compute otherwise is refused") {
  using D = DType;
  CHECK_THAT(Refusal("a + b", {D::kI64, D::kU64}), Catch::Contains("uint64"));
  CHECK_THAT(Refusal("a + 300", {D::kI8}), Catch::Contains("does not fit"));
  CHECK_THAT(Refusal("a + -1", {D::kU8}), Catch::Contains("does not fit"));
  CHECK_THAT(Refusal("a * 1e39", {D::kF32}), Catch::Contains("float32"));
  CHECK_THAT(Refusal("sqrt(a)", {D::kU8}), Catch::Contains("float16"));
  CHECK_THAT(Refusal("-a", {D::kBool}), Catch::Contains("booleans"));
  CHECK_THAT(Refusal("a + b", {D::kBool, D::kBool}), Catch::Contains("booleans"));
  CHECK_THAT(Refusal("a & b", {D::kF32, D::kI8}), Catch::Contains("floats"));
  CHECK_THAT(Refusal("sin(a)", {D::kF32}), Catch::Contains("'sin' is not computed"));
  CHECK_THAT(Refusal("a // 2", {D::kI32}), Catch::Contains("'//'"));
  CHECK_THAT(Refusal("a < b < a", {D::kI32, D::kI32}), Catch::Contains("chained"));
  CHECK_THAT(Refusal("2 + 3", {}), Catch::Contains("constants only"));
  CHECK_THAT(Refusal("a + 99999999999999999999", {D::kI64}), Catch::Contains("too large"));
}

template <typename T>
std::vector<uint8_t> Bytes(std::initializer_list<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

TEST_CASE("NumPy's bytes: wrap-around, NaN, where") {
  {
    auto p = Compile("a + 1", {DType::kI8});
    REQUIRE(p.ok());
    const auto a = Bytes<int8_t>({127, -128, 5});
    const uint8_t* in[] = {a.data()};
    int8_t out[3];
    p->Run(in, 3, reinterpret_cast<uint8_t*>(out));
    CHECK(out[0] == -128);
    CHECK(out[1] == -127);
    CHECK(out[2] == 6);
  }
  {
    auto p = Compile("abs(a) * -1", {DType::kI8});
    REQUIRE(p.ok());
    const auto a = Bytes<int8_t>({-128, -3, 4});
    const uint8_t* in[] = {a.data()};
    int8_t out[3];
    p->Run(in, 3, reinterpret_cast<uint8_t*>(out));
    CHECK(out[0] == -128);  // abs(-128) wraps to -128, as in NumPy
    CHECK(out[1] == -3);
    CHECK(out[2] == -4);
  }
  {
    auto p = Compile("where(c, minimum(a, b), b / 2)", {DType::kF64, DType::kF32, DType::kBool});
    REQUIRE(p.ok());
    REQUIRE(p->result() == DType::kF64);
    const auto a = Bytes<double>({NAN, 1.0, 3.0});
    const auto b = Bytes<float>({0.5f, 2.0f, 7.0f});
    const auto c = Bytes<uint8_t>({1, 1, 0});
    // Operands in order of first use: c, a, b.
    const uint8_t* in[] = {c.data(), a.data(), b.data()};
    double out[3];
    p->Run(in, 3, reinterpret_cast<uint8_t*>(out));
    CHECK(std::isnan(out[0]));
    CHECK(out[1] == 1.0);
    CHECK(out[2] == 3.5);
  }
  {
    auto p = Compile("a / b", {DType::kI32, DType::kI32});
    REQUIRE(p.ok());
    const auto a = Bytes<int32_t>({1, -1, 0});
    const auto b = Bytes<int32_t>({3, 0, 0});
    const uint8_t* in[] = {a.data(), b.data()};
    double out[3];
    p->Run(in, 3, reinterpret_cast<uint8_t*>(out));
    CHECK(out[0] == 1.0 / 3.0);
    CHECK(std::isinf(out[1]));
    CHECK(out[1] < 0);
    CHECK(std::isnan(out[2]));
  }
}

}  // namespace
