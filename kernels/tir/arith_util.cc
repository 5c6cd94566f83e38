// Substitution and affine decomposition over arith expressions, built only on arith's public
// builders and canonical form.
#include "kernels/tir/arith_util.h"

#include <utility>

#include "kernels/arith/canonical.h"
#include "kernels/arith/simplify.h"

namespace dynvm::tir {

arith::Expr substitute(const arith::Expr& e, const VarMap& map) {
  if (!e.defined() || map.empty()) return e;
  using arith::ExprKind;
  switch (e.kind()) {
    case ExprKind::kIntImm:
    case ExprKind::kBoolImm:
      return e;
    case ExprKind::kVar: {
      auto it = map.find(e->var_id);
      return it == map.end() ? e : it->second;
    }
    case ExprKind::kNot: {
      arith::Expr a = substitute(e.operand(0), map);
      return a.get() == e.operand(0).get() ? e : arith::make_not(a);
    }
    case ExprKind::kSelect: {
      arith::Expr c = substitute(e.operand(0), map);
      arith::Expr a = substitute(e.operand(1), map);
      arith::Expr b = substitute(e.operand(2), map);
      if (c.get() == e.operand(0).get() && a.get() == e.operand(1).get() &&
          b.get() == e.operand(2).get()) {
        return e;
      }
      return arith::make_select(c, a, b);
    }
    default: {
      arith::Expr a = substitute(e.operand(0), map);
      arith::Expr b = substitute(e.operand(1), map);
      if (a.get() == e.operand(0).get() && b.get() == e.operand(1).get()) return e;
      return arith::make_binary(e.kind(), a, b);
    }
  }
}

void for_each_var(const arith::Expr& e, const std::function<void(const arith::Expr&)>& f) {
  if (!e.defined()) return;
  if (e.kind() == arith::ExprKind::kVar) {
    f(e);
    return;
  }
  for (int i = 0; i < arith::kind_arity(e.kind()); ++i) for_each_var(e.operand(i), f);
}

std::optional<AffineForm> affine_in(const arith::Expr& e, arith::VarId var) {
  if (!e.defined() || e.is_boolean()) return std::nullopt;
  arith::Expr simplified = arith::simplify(e);
  if (!arith::uses_var(simplified, var)) return AffineForm{arith::make_int(0), simplified};
  try {
    arith::Poly poly = arith::linear_form(simplified);
    arith::Poly coeff = arith::Poly::constant(0);
    arith::Poly rest = arith::Poly::constant(poly.constant_term());
    for (const arith::Term& term : poly.terms()) {
      int occurrences = 0;
      arith::Poly others = arith::Poly::constant(term.coeff);
      for (const arith::Expr& atom : term.monomial.atoms) {
        if (atom.kind() == arith::ExprKind::kVar && atom->var_id == var) {
          ++occurrences;
        } else if (arith::uses_var(atom, var)) {
          return std::nullopt;
        } else {
          others = arith::mul(others, arith::Poly::atom(atom));
        }
      }
      if (occurrences > 1) return std::nullopt;
      if (occurrences == 1) {
        coeff = arith::add(coeff, others);
      } else {
        rest = arith::add(rest, others);
      }
    }
    return AffineForm{arith::simplify(arith::to_expr(coeff)),
                      arith::simplify(arith::to_expr(rest))};
  } catch (const arith::PolyOverflow&) {
    return std::nullopt;
  }
}

std::optional<DimBinding> dim_binding(const arith::Expr& dim) {
  if (dim.kind() == arith::ExprKind::kVar) return DimBinding{dim, 1};
  if (dim.kind() != arith::ExprKind::kMul) return std::nullopt;
  for (int v = 0; v < 2; ++v) {
    const arith::Expr& var = dim.operand(v);
    const arith::Expr& c = dim.operand(1 - v);
    if (var.kind() == arith::ExprKind::kVar && c.is_int_imm() && c.int_value() > 0) {
      return DimBinding{var, c.int_value()};
    }
  }
  return std::nullopt;
}

}  // namespace dynvm::tir
