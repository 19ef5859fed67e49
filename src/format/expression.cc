#include "b2ndfs/format/expression.h"

#include <algorithm>
#include <cctype>
#include <charconv>
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

  Result<ParsedExpression> Run() {
    if (text_.size() > kMaxLength) {
      return Error(0,
                   "the expression is longer than " + std::to_string(kMaxLength) + " characters");
    }
    B2NDFS_ASSIGN_OR_RETURN(parsed_.root, Expr(0));
    Skip();
    if (pos_ != text_.size()) return Unexpected();
    if (check_.nodes == 0) return Error(0, "the expression is empty");
    parsed_.operands = check_.operands;
    parsed_.check = check_;
    return std::move(parsed_);
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
  using Kind = ExpressionNode::Kind;
  int Add(Kind kind, size_t at, std::string op, std::vector<int> args) {
    ExpressionNode n;
    n.kind = kind;
    n.pos = at;
    n.op = std::move(op);
    n.args = std::move(args);
    parsed_.nodes.push_back(std::move(n));
    return static_cast<int>(parsed_.nodes.size()) - 1;
  }
  // The operator Accept() just consumed (one of `ops`, longest first).
  std::string Took(std::initializer_list<std::string_view> ops) const {
    for (std::string_view op : ops) {
      if (pos_ >= op.size() && text_.compare(pos_ - op.size(), op.size(), op) == 0) {
        return std::string(op);
      }
    }
    return "";
  }
  Status Node() {
    if (++check_.nodes > kMaxNodes) {
      return Error(pos_, "the expression has more than " + std::to_string(kMaxNodes) + " terms");
    }
    return Status::Ok();
  }

  Result<int> Expr(int depth) {
    if (depth > kMaxDepth) {
      return Error(pos_, "the expression nests deeper than " + std::to_string(kMaxDepth));
    }
    B2NDFS_ASSIGN_OR_RETURN(int left, Or(depth));
    int comparisons = 0;
    while (Accept("<=") || Accept(">=") || Accept("==") || Accept("!=") || Accept("<", "<<") ||
           Accept(">", ">>")) {
      const size_t at = pos_;
      const std::string op = Took({"<=", ">=", "==", "!=", "<", ">"});
      B2NDFS_RETURN_IF_ERROR(Node());
      B2NDFS_ASSIGN_OR_RETURN(int right, Or(depth));
      left = Add(Kind::kBinary, at, op, {left, right});
      // Python chains comparisons (a < b < c is a < b and b < c): not
      // elementwise on arrays.
      parsed_.nodes[left].chained = ++comparisons > 1;
    }
    return left;
  }
  template <typename Next>
  Result<int> Chain(std::string_view op, Next next) {
    B2NDFS_ASSIGN_OR_RETURN(int left, next());
    while (Accept(op)) {
      const size_t at = pos_;
      B2NDFS_ASSIGN_OR_RETURN(int right, next());
      left = Add(Kind::kBinary, at, std::string(op), {left, right});
    }
    return left;
  }
  Result<int> Or(int depth) {
    return Chain("|", [&] { return Xor(depth); });
  }
  Result<int> Xor(int depth) {
    return Chain("^", [&] { return And(depth); });
  }
  Result<int> And(int depth) {
    return Chain("&", [&] { return Arith(depth); });
  }
  Result<int> Arith(int depth) {
    B2NDFS_ASSIGN_OR_RETURN(int left, Term(depth));
    while (Accept("+") || Accept("-")) {
      const size_t at = pos_;
      const std::string op = Took({"+", "-"});
      B2NDFS_RETURN_IF_ERROR(Node());
      B2NDFS_ASSIGN_OR_RETURN(int right, Term(depth));
      left = Add(Kind::kBinary, at, op, {left, right});
    }
    return left;
  }
  Result<int> Term(int depth) {
    B2NDFS_ASSIGN_OR_RETURN(int left, Unary(depth));
    while (Accept("//") || Accept("*", "**") || Accept("/") || Accept("%")) {
      const size_t at = pos_;
      const std::string op = Took({"//", "*", "/", "%"});
      B2NDFS_RETURN_IF_ERROR(Node());
      B2NDFS_ASSIGN_OR_RETURN(int right, Unary(depth));
      left = Add(Kind::kBinary, at, op, {left, right});
    }
    return left;
  }
  Result<int> Unary(int depth) {
    if (depth > kMaxDepth) {
      return Error(pos_, "the expression nests deeper than " + std::to_string(kMaxDepth));
    }
    if (Accept("-") || Accept("+") || Accept("~")) {
      const size_t at = pos_;
      const std::string op = Took({"-", "+", "~"});
      B2NDFS_RETURN_IF_ERROR(Node());
      B2NDFS_ASSIGN_OR_RETURN(int arg, Unary(depth + 1));
      return Add(Kind::kUnary, at, op, {arg});
    }
    B2NDFS_ASSIGN_OR_RETURN(int base, Atom(depth));
    if (Accept("**")) {
      const size_t at = pos_;
      B2NDFS_RETURN_IF_ERROR(Node());
      B2NDFS_ASSIGN_OR_RETURN(int exponent, Unary(depth + 1));
      return Add(Kind::kBinary, at, "**", {base, exponent});
    }
    return base;
  }
  Result<int> Atom(int depth) {
    Skip();
    B2NDFS_RETURN_IF_ERROR(Node());
    if (pos_ >= text_.size()) return Unexpected();
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      B2NDFS_ASSIGN_OR_RETURN(int inner, Expr(depth + 1));
      if (!Accept(")")) return Unexpected();
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return Number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return Name(depth);
    return Unexpected();
  }
  Result<int> Number() {
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
    const std::string_view digits_text(text_.data() + start, pos_ - start);
    const bool integer = digits_text.find_first_of(".eE") == std::string_view::npos;
    const int node = Add(integer ? Kind::kInt : Kind::kFloat, start, std::string(digits_text), {});
    ExpressionNode& n = parsed_.nodes[node];
    if (integer) {
      const auto r =
          std::from_chars(digits_text.data(), digits_text.data() + digits_text.size(), n.int_value);
      n.too_big = r.ec != std::errc();
    } else {
      // Correctly rounded, as Python's float() (from_chars needs a digit
      // before the point only in its own grammar: ".5" parses).
      const auto r = std::from_chars(digits_text.data(), digits_text.data() + digits_text.size(),
                                     n.float_value);
      n.too_big = r.ec != std::errc();
    }
    return node;
  }
  Result<int> Name(int depth) {
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    const std::string name = text_.substr(start, pos_ - start);
    if (name == "True" || name == "False") {
      const int node = Add(Kind::kBool, start, name, {});
      parsed_.nodes[node].int_value = name == "True" ? 1 : 0;
      return node;
    }
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
      std::vector<int> args;
      do {
        B2NDFS_ASSIGN_OR_RETURN(int arg, Expr(depth + 1));
        args.push_back(arg);
      } while (Accept(","));
      if (!Accept(")")) return Unexpected();
      if (static_cast<int>(args.size()) != f->arity) {
        return Error(start, "'" + name + "' takes " + std::to_string(f->arity) +
                                " argument(s), not " + std::to_string(args.size()));
      }
      return Add(Kind::kCall, start, name, std::move(args));
    }
    Skip();
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == '[')) {
      return Error(pos_, "attributes and indexing are not elementwise");
    }
    if (std::find(operands_.begin(), operands_.end(), name) == operands_.end()) {
      return Error(start, "'" + name + "' is not an operand of the recipe");
    }
    auto used = std::find(check_.operands.begin(), check_.operands.end(), name);
    const int index = static_cast<int>(used - check_.operands.begin());
    if (used == check_.operands.end()) check_.operands.push_back(name);
    const int node = Add(Kind::kOperand, start, name, {});
    parsed_.nodes[node].operand = index;
    return node;
  }

  const std::string& text_;
  const std::vector<std::string>& operands_;
  size_t pos_ = 0;
  ExpressionCheck check_;
  ParsedExpression parsed_;
};

}  // namespace

Result<ExpressionCheck> CheckElementwiseExpression(const std::string& text,
                                                   const std::vector<std::string>& operands) {
  B2NDFS_ASSIGN_OR_RETURN(ParsedExpression parsed, Parser(text, operands).Run());
  return parsed.check;
}

Result<ParsedExpression> ParseElementwiseExpression(const std::string& text,
                                                    const std::vector<std::string>& operands) {
  try {
    return Parser(text, operands).Run();
  } catch (const std::bad_alloc&) {
    return Status(ENOMEM, "out of memory parsing the expression");
  }
}

}  // namespace b2ndfs::format
