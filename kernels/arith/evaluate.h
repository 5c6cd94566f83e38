// Evaluates an expression for concrete variable values, with dynvm's floor semantics
// (-7 floordiv 2 == -4, -7 floormod 2 == 1). Conditions evaluate to 1 or 0. Every operand
// is evaluated (select and && || do not short-circuit, like LLVM's select), so a division
// by zero anywhere in the tree is reported. Used to test the simplifier against the truth.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "kernels/arith/expr.h"

namespace dynvm::arith {

using VarValues = std::unordered_map<VarId, int64_t>;

// UserError on division by zero, int64 overflow, or a variable without a value.
int64_t evaluate(const Expr& e, const VarValues& values);

}  // namespace dynvm::arith
