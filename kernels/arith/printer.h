// Text form of expressions, for people, test expectations and (later) the IR text format:
// infix with the fewest parentheses that keep the tree exact, `floordiv`/`floormod` as words,
// `n*16`, `(w - 1) floordiv 8 + 1`, `min(a, b)`, `select(i < n, x, 0)`, `a < b && !(c == d)`.
// parse_expr (parser.h) reads this text back into a structurally equal expression.
#pragma once

#include <ostream>
#include <string>

#include "kernels/arith/expr.h"

namespace dynvm::arith {

std::string to_string(const Expr& e);
std::ostream& operator<<(std::ostream& os, const Expr& e);

}  // namespace dynvm::arith
