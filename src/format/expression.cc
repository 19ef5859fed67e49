#include "b2ndfs/format/expression.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace b2ndfs::format {
namespace {

constexpr size_t kMaxLength = 4096;
constexpr int kMaxDepth = 64;
constexpr int kMaxNodes = 1024;

struct Function {
  std::string_view name;
  int arity;
};
// NumPy's common elementwise functions (numexpr's set, plus NumPy's names
// for some of them).
constexpr Function kElementwiseFunctions[] = {
    {"sin", 1},     {"cos", 1},      {"tan", 1},      {"arcsin", 1},   {"arccos", 1},
    {"arctan", 1},  {"arctan2", 2},  {"sinh", 1},     {"cosh", 1},     {"tanh", 1},
    {"arcsinh", 1}, {"arccosh", 1},  {"arctanh", 1},  {"exp", 1},      {"expm1", 1},
    {"log", 1},     {"log10", 1},    {"log1p", 1},    {"log2", 1},     {"sqrt", 1},
    {"abs", 1},     {"absolute", 1}, {"negative", 1}, {"sign", 1},     {"floor", 1},
    {"ceil", 1},    {"trunc", 1},    {"round", 1},    {"rint", 1},     {"square", 1},
    {"power", 2},   {"minimum", 2},  {"maximum", 2},  {"fmod", 2},     {"hypot", 2},
    {"where", 3},   {"isnan", 1},    {"isinf", 1},    {"isfinite", 1}, {"real", 1},
    {"imag", 1},    {"conj", 1},     {"contains", 2},
};

class Parser {
 public:
  Parser(const std::string& text, const std::vector<std::string>& operands)
      : text_(text), operands_(operands) {}

  Result<ExpressionCheck> Run() {
    if (text_.size() > kMaxLength) {
      return Error(0,
                   "the expression is longer than " + std::to_string(kMaxLength) + " characters");
    }
    B2NDFS_RETURN_IF_ERROR(Expr(0));
    Skip();
    if (pos_ != text_.size()) return Unexpected();
    if (check_.nodes == 0) return Error(0, "the expression is empty");
    return check_;
  }

 private:
  Status Error(size_t at, const std::string& what) const {
    return Status(EINVAL, "at " + std::to_string(at) + ": " + what);
  }
  Status Unexpected() const {
    if (pos_ >= text_.size()) return Error(pos_, "the expression ends early");
    return Error(pos_, "unexpected '" + std::string(1, text_[pos_]) + "'");
  }
  void Skip() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  // Consumes `op` (not the first characters of a longer operator in `longer`).
  bool Accept(std::string_view op, std::string_view longer = {}) {
    Skip();
    if (text_.compare(pos_, op.size(), op) != 0) return false;
    if (!longer.empty() && text_.compare(pos_, longer.size(), longer) == 0) return false;
    pos_ += op.size();
    return true;
  }
  Status Node() {
    if (++check_.nodes > kMaxNodes) {
      return Error(pos_, "the expression has more than " + std::to_string(kMaxNodes) + " terms");
    }
    return Status::Ok();
  }

  Status Expr(int depth) {
    if (depth > kMaxDepth) {
      return Error(pos_, "the expression nests deeper than " + std::to_string(kMaxDepth));
    }
    B2NDFS_RETURN_IF_ERROR(Or(depth));
    while (Accept("<=") || Accept(">=") || Accept("==") || Accept("!=") || Accept("<", "<<") ||
           Accept(">", ">>")) {
      B2NDFS_RETURN_IF_ERROR(Node());
      B2NDFS_RETURN_IF_ERROR(Or(depth));
    }
    return Status::Ok();
  }
  Status Or(int depth) {
    B2NDFS_RETURN_IF_ERROR(Xor(depth));
    while (Accept("|")) B2NDFS_RETURN_IF_ERROR(Xor(depth));
    return Status::Ok();
  }
  Status Xor(int depth) {
    B2NDFS_RETURN_IF_ERROR(And(depth));
    while (Accept("^")) B2NDFS_RETURN_IF_ERROR(And(depth));
    return Status::Ok();
  }
  Status And(int depth) {
    B2NDFS_RETURN_IF_ERROR(Arith(depth));
    while (Accept("&")) B2NDFS_RETURN_IF_ERROR(Arith(depth));
    return Status::Ok();
  }
  Status Arith(int depth) {
    B2NDFS_RETURN_IF_ERROR(Term(depth));
    while (Accept("+") || Accept("-")) {
      B2NDFS_RETURN_IF_ERROR(Node());
      B2NDFS_RETURN_IF_ERROR(Term(depth));
    }
    return Status::Ok();
  }
  Status Term(int depth) {
    B2NDFS_RETURN_IF_ERROR(Unary(depth));
    while (Accept("//") || Accept("*", "**") || Accept("/") || Accept("%")) {
      B2NDFS_RETURN_IF_ERROR(Node());
      B2NDFS_RETURN_IF_ERROR(Unary(depth));
    }
    return Status::Ok();
  }
  Status Unary(int depth) {
    if (depth > kMaxDepth) {
      return Error(pos_, "the expression nests deeper than " + std::to_string(kMaxDepth));
    }
    if (Accept("-") || Accept("+") || Accept("~")) {
      B2NDFS_RETURN_IF_ERROR(Node());
      return Unary(depth + 1);
    }
    B2NDFS_RETURN_IF_ERROR(Atom(depth));
    if (Accept("**")) {
      B2NDFS_RETURN_IF_ERROR(Node());
      return Unary(depth + 1);
    }
    return Status::Ok();
  }
  Status Atom(int depth) {
    Skip();
    B2NDFS_RETURN_IF_ERROR(Node());
    if (pos_ >= text_.size()) return Unexpected();
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      B2NDFS_RETURN_IF_ERROR(Expr(depth + 1));
      if (!Accept(")")) return Unexpected();
      return Status::Ok();
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return Number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return Name(depth);
    return Unexpected();
  }
  Status Number() {
    const size_t start = pos_;
    bool digits = false;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
      digits = true;
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
        digits = true;
      }
    }
    if (!digits) return Error(start, "a number has no digits");
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        return Error(start, "a number's exponent has no digits");
      }
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) ||
                                text_[pos_] == '_' || text_[pos_] == '.')) {
      return Unexpected();
    }
    return Status::Ok();
  }
  Status Name(int depth) {
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    const std::string name = text_.substr(start, pos_ - start);
    if (name == "True" || name == "False") return Status::Ok();
    if (Accept("(")) {
      const Function* f = nullptr;
      for (const Function& candidate : kElementwiseFunctions) {
        if (candidate.name == name) f = &candidate;
      }
      if (f == nullptr) {
        return Error(start, "'" + name +
                                "' is not one of NumPy's elementwise functions b2ndfs "
                                "evaluates");
      }
      int args = 0;
      do {
        B2NDFS_RETURN_IF_ERROR(Expr(depth + 1));
        ++args;
      } while (Accept(","));
      if (!Accept(")")) return Unexpected();
      if (args != f->arity) {
        return Error(start, "'" + name + "' takes " + std::to_string(f->arity) +
                                " argument(s), not " + std::to_string(args));
      }
      return Status::Ok();
    }
    Skip();
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == '[')) {
      return Error(pos_, "attributes and indexing are not elementwise");
    }
    if (std::find(operands_.begin(), operands_.end(), name) == operands_.end()) {
      return Error(start, "'" + name + "' is not an operand of the recipe");
    }
    if (std::find(check_.operands.begin(), check_.operands.end(), name) == check_.operands.end()) {
      check_.operands.push_back(name);
    }
    return Status::Ok();
  }

  const std::string& text_;
  const std::vector<std::string>& operands_;
  size_t pos_ = 0;
  ExpressionCheck check_;
};

}  // namespace

Result<ExpressionCheck> CheckElementwiseExpression(const std::string& text,
                                                   const std::vector<std::string>& operands) {
  return Parser(text, operands).Run();
}

}  // namespace b2ndfs::format
