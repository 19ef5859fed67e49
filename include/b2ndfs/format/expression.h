// format/expression: the grammar of lazy expressions b2ndfs would evaluate
// (README.md, "Variable-length data, carriers and caches"), checked on a
// carrier's recipe: meta.json says whether a saved expression is in the
// grammar, and if not, why; ParseElementwiseExpression gives its syntax tree
// to the store's evaluator (store/elementwise.h), which decides which of it
// it computes exactly as NumPy does.
//
// The grammar is Python's expression syntax (python-blosc2 hands the text to
// numexpr or NumPy) restricted to elementwise work:
//   expr     := or ( ('<' | '<=' | '>' | '>=' | '==' | '!=') or )*
//   or       := xor ( '|' xor )*        xor := and ( '^' and )*
//   and      := arith ( '&' arith )*
//   arith    := term ( ('+' | '-') term )*
//   term     := unary ( ('*' | '/' | '//' | '%') unary )*
//   unary    := ('-' | '+' | '~') unary | power
//   power    := atom ( '**' unary )?
//   atom     := NUMBER | NAME | FUNCTION '(' expr (',' expr)* ')' | '(' expr ')'
// NAME must be one of the recipe's operands; FUNCTION one of NumPy's common
// elementwise functions (kElementwiseFunctions) with its number of
// arguments; NUMBER a decimal integer or float (with exponent), or True or
// False. Anything else (attributes, indexing, reductions such as sum, calls
// of other names, strings, keywords) is refused with the position and what
// was found. Limits: 4096 characters, 64 levels of nesting, 1024 nodes.
// Errors: Status(EINVAL) whose message names the position (0-based).
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::format {

struct ExpressionCheck {
  // The operands the expression uses, in order of first use.
  std::vector<std::string> operands;
  int nodes = 0;
};

Result<ExpressionCheck> CheckElementwiseExpression(const std::string& text,
                                                   const std::vector<std::string>& operands);

// The syntax tree: nodes[root] is the whole expression; a node's args index
// nodes (always before it).
struct ExpressionNode {
  enum class Kind { kInt, kFloat, kBool, kOperand, kUnary, kBinary, kCall };
  Kind kind = Kind::kInt;
  std::string op;  // "+", "<=", "**", "~" ..., a function's name, a literal's text
  std::vector<int> args;
  int64_t int_value = 0;  // kInt, kBool (0 or 1)
  double float_value = 0;
  bool too_big = false;  // a literal beyond int64 (kInt) or double (kFloat)
  bool chained = false;  // a comparison chained to the one before (a < b < c)
  int operand = -1;      // kOperand: index into ParsedExpression::operands
  size_t pos = 0;
};
struct ParsedExpression {
  std::vector<ExpressionNode> nodes;
  int root = -1;
  std::vector<std::string> operands;  // as ExpressionCheck::operands
  ExpressionCheck check;
};
Result<ParsedExpression> ParseElementwiseExpression(const std::string& text,
                                                    const std::vector<std::string>& operands);

}  // namespace b2ndfs::format
