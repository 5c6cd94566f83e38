// Simplification to the canonical form (canonical.h): integer expressions become a sum of
// monomials over atoms, atoms (floordiv, floormod, min, max, select) are simplified inside
// and folded when the Analyzer's bounds, divisibility facts or proofs allow; conditions
// become a canonical comparison, a constant, or a sorted &&/|| of those. The result always
// evaluates to the same value as the input wherever the input evaluates without error.
// The rules, each with a test: kernels/arith/README.md.
#pragma once

#include "kernels/arith/analyzer.h"
#include "kernels/arith/expr.h"

namespace dynvm::arith {

Expr simplify(const Expr& e, const Analyzer& analyzer);
// Without any knowledge of variable ranges.
Expr simplify(const Expr& e);

}  // namespace dynvm::arith
