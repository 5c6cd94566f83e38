// Index-expression utilities that TIR passes need and kernels/arith does not offer:
// substitution of variables, walking the variables of an expression, and splitting an
// expression into `coeff * var + rest` (what vectorization and loop partitioning reason with).
#pragma once

#include <functional>
#include <optional>
#include <unordered_map>

#include "kernels/arith/expr.h"

namespace dynvm::tir {

using VarMap = std::unordered_map<arith::VarId, arith::Expr>;

// e with every variable in `map` replaced, in one pass (replacements are not re-substituted).
// Unchanged sub-trees are shared, not copied.
arith::Expr substitute(const arith::Expr& e, const VarMap& map);

// Calls f on each kVar node of e (with repeats), left to right.
void for_each_var(const arith::Expr& e, const std::function<void(const arith::Expr&)>& f);

// e == coeff * var + rest for every value of var, with neither part mentioning var; both
// simplified. nullopt when e is not affine in var (var inside floordiv, min, a product of var
// with itself, ...).
struct AffineForm {
  arith::Expr coeff;
  arith::Expr rest;
};
std::optional<AffineForm> affine_in(const arith::Expr& e, arith::VarId var);

// How a kernel parameter's dim can bind a symbolic var: `var` (scale 1) or `var * c` /
// `c * var` with a constant c > 0 (scale c; the specializer's residue variants substitute
// n -> c * q, and the kernel entry binds q = dim floordiv c). nullopt for anything else.
struct DimBinding {
  arith::Expr var;
  int64_t scale = 1;
};
std::optional<DimBinding> dim_binding(const arith::Expr& dim);

}  // namespace dynvm::tir
