// format/expression: the grammar of lazy expressions b2ndfs would evaluate
// (README.md, "Variable-length data, carriers and caches"), checked on a
// carrier's recipe. Evaluation itself is not implemented yet: meta.json says
// whether a saved expression is in the grammar, and if not, why.
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

}  // namespace b2ndfs::format
