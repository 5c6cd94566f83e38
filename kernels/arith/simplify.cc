// Simplification of integer expressions into the canonical polynomial form, with the rules
// for the atoms: floordiv/floormod by constants (multiples leave the division, common
// factors cancel, a dividend known to lie in one period folds, nested divisions merge),
// min/max (flattened, operands that are provably dominated dropped, the rest sorted) and
// select (a provable condition picks its branch). Conditions and proofs live in
// simplify_condition.cc.
#include "kernels/arith/simplify.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/arith/simplifier.h"
#include "vm/error.h"

namespace dynvm::arith {
namespace {

// Every coefficient and the constant must be multiples of g.
Poly divide_exact(const Poly& p, int64_t g) {
  std::vector<Term> terms;
  for (const Term& t : p.terms()) terms.push_back(Term{t.monomial, t.coeff / g});
  return Poly::from_terms(p.constant_term() / g, std::move(terms));
}

// gcd of the dividend's coefficients, its constant and the divisor.
int64_t common_factor(const Poly& a, int64_t c) {
  int64_t g = fit_or_throw(checked_gcd(term_gcd(a), a.constant_term()));
  return fit_or_throw(checked_gcd(g, c));
}

// The atom if the monomial is the single atom `X op c` for a positive constant c.
Expr div_mod_atom(const Monomial& m, ExprKind kind) {
  if (m.atoms.size() != 1) return Expr();
  const Expr& atom = m.atoms[0];
  if (atom.kind() != kind || !atom.operand(1).is_int_imm() || atom.operand(1).int_value() <= 0) {
    return Expr();
  }
  return atom;
}

// Every term of q is a term of p (same monomial, same coefficient).
bool holds_terms(const Poly& p, const Poly& q) {
  for (const Term& t : q.terms()) {
    auto it = std::find_if(p.terms().begin(), p.terms().end(), [&](const Term& u) {
      return u.coeff == t.coeff && compare_monomials(u.monomial, t.monomial) == 0;
    });
    if (it == p.terms().end()) return false;
  }
  return true;
}

// The same for a polynomial that is exactly 1 * (X op c).
Expr div_mod_atom(const Poly& p, ExprKind kind) {
  if (p.constant_term() != 0 || p.terms().size() != 1 || p.terms()[0].coeff != 1) return Expr();
  return div_mod_atom(p.terms()[0].monomial, kind);
}

// Splits coefficients into a multiple of c and a remainder of the same sign (truncation, so
// small negative coefficients stay as they are); the constant's remainder goes into [0, c).
// Returns {quotient, remainder} with a == c*quotient + remainder.
std::pair<Poly, Poly> split_by(const Poly& a, int64_t c) {
  std::vector<Term> quotient, remainder;
  for (const Term& t : a.terms()) {
    if (t.coeff / c != 0) quotient.push_back(Term{t.monomial, t.coeff / c});
    if (t.coeff % c != 0) remainder.push_back(Term{t.monomial, t.coeff % c});
  }
  int64_t cq = *checked_floordiv(a.constant_term(), c);
  int64_t cr = *checked_floormod(a.constant_term(), c);
  return {Poly::from_terms(cq, std::move(quotient)), Poly::from_terms(cr, std::move(remainder))};
}

// If every value in b lies in one period [k*c, k*c + c) of a positive c, that k.
std::optional<int64_t> single_period(const Bounds& b, int64_t c) {
  if (b.min == kNegInf || b.max == kPosInf) return std::nullopt;
  int64_t k = *checked_floordiv(b.min, c);
  if (k != *checked_floordiv(b.max, c)) return std::nullopt;
  return k;
}

}  // namespace

Poly linear_form_or_atom(const Expr& e) {
  try {
    return linear_form(e);
  } catch (PolyOverflow&) {
    return Poly::atom(e);
  }
}

Poly keep_node(ExprKind kind, const Poly& a, const Poly& b) {
  return Poly::atom(make_binary(kind, to_expr(a), to_expr(b)));
}

Expr simplify(const Expr& e, const Analyzer& analyzer) { return Simplifier(analyzer).simplify(e); }

Expr simplify(const Expr& e) { return simplify(e, Analyzer()); }

Expr Simplifier::simplify(const Expr& e) {
  DYNVM_INTERNAL_CHECK(e.defined(), "simplify of an undefined expression");
  try {
    return e.is_boolean() ? simplify_condition(e) : to_expr(to_poly(e));
  } catch (PolyOverflow&) {
    // Every rule catches overflow at the node it concerns; reaching here is a dynvm bug.
    DYNVM_INTERNAL_CHECK(false, "unhandled polynomial overflow while simplifying");
    return e;
  }
}

Poly Simplifier::to_poly(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod:
    case ExprKind::kMin:
    case ExprKind::kMax:
    case ExprKind::kSelect: {
      // The analyzer's ranges do not change during one simplification: a node's Poly is
      // the same wherever the node is shared.
      auto it = memo_.find(e.get());
      if (it != memo_.end()) return it->second.second;
      Poly p = node_poly(e);
      memo_.emplace(e.get(), std::make_pair(e, p));
      return p;
    }
    default:
      return node_poly(e);
  }
}

Poly Simplifier::node_poly(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm:
      return Poly::constant(e.int_value());
    case ExprKind::kVar: {
      const VarRange* r = analyzer_.range(e->var_id);
      if (r && r->min == r->max) return Poly::constant(r->min);
      return Poly::atom(e);
    }
    case ExprKind::kAdd:
    case ExprKind::kSub:
    case ExprKind::kMul:
      return add_or_keep(e.kind(), to_poly(e.operand(0)), to_poly(e.operand(1)));
    case ExprKind::kFloorDiv:
      return floordiv_poly(to_poly(e.operand(0)), to_poly(e.operand(1)));
    case ExprKind::kFloorMod:
      return floormod_poly(to_poly(e.operand(0)), to_poly(e.operand(1)));
    case ExprKind::kMin:
    case ExprKind::kMax:
      return min_max_poly(e);
    case ExprKind::kSelect:
      return select_poly(e);
    default:
      DYNVM_INTERNAL_CHECK(false, "to_poly of a condition: ", kind_name(e.kind()));
      return Poly();
  }
}

Poly Simplifier::add_or_keep(ExprKind kind, const Poly& a, const Poly& b) {
  try {
    switch (kind) {
      case ExprKind::kAdd:
        return merge_div_mod(add(a, b));
      case ExprKind::kSub:
        return merge_div_mod(sub(a, b));
      default:
        return merge_div_mod(mul(a, b));
    }
  } catch (PolyOverflow&) {
    return keep_node(kind, a, b);  // folding would overflow int64: keep it as written
  }
}

Poly Simplifier::merge_div_mod(Poly p) {
  // X == d*(X floordiv d) + (X floormod d), the identity that undoes a split or fused loop
  // index: (f floordiv 8)*8 + f floormod 8 -> f; with a symbolic d the flattening of
  // (row, column) by a symbolic width: w*(f floordiv w) + f floormod w -> f; and either one
  // scaled by the same factor M (a row-major stride): M*d*(X floordiv d) + M*(X floormod d).
  try {
    for (bool changed = true; changed;) {
      changed = false;
      for (const Term& mod_term : p.terms()) {
        const std::vector<Expr>& atoms = mod_term.monomial.atoms;
        for (size_t a = 0; a < atoms.size(); ++a) {
          const Expr& mod = atoms[a];
          if (mod.kind() != ExprKind::kFloorMod) continue;
          const Expr& d = mod.operand(1);
          if (d.is_int_imm() && d.int_value() <= 0) continue;
          // The term without the floormod: c * M.
          Poly factor = Poly::constant(mod_term.coeff);
          for (size_t b = 0; b < atoms.size(); ++b) {
            if (b != a) factor = mul(factor, Poly::atom(atoms[b]));
          }
          // c*M*d*(X floordiv d), which p must hold term for term. The quotient simplified as
          // p's own atoms are: ((y floordiv 32) floordiv 24) is y floordiv 768, so that a
          // fused index of three axes merges back, (y floordiv 768)*768 + ((y floordiv 32)
          // floormod 24)*32 + y floormod 32 -> y (a matmul's accumulator tile over fused
          // rows was bound to a whole image instead: 36 ms against 0.1).
          Poly div =
              mul(mul(floordiv_poly(linear_form_or_atom(mod.operand(0)), linear_form_or_atom(d)),
                      linear_form_or_atom(d)),
                  factor);
          if (div.constant_term() != 0 || !holds_terms(p, div)) continue;
          Poly whole = linear_form_or_atom(mod.operand(0));
          Poly replaced = sub(sub(p, mul(Poly::atom(mod), factor)), div);
          changed = true;
          p = add(replaced, mul(whole, factor));  // mod_term and atoms dangle from here
          break;
        }
        if (changed) break;
      }
    }
  } catch (PolyOverflow&) {
  }
  return p;
}

Poly Simplifier::floordiv_poly(const Poly& a, const Poly& b) {
  if (!b.is_constant()) {
    if (a.is_constant() && a.constant_term() == 0) return Poly::constant(0);
    bool positive = prove_le(Poly::constant(1), b);
    bool nonzero = positive || prove_le(b, Poly::constant(-1));
    if (nonzero && poly_equal(a, b)) return Poly::constant(1);
    // 0 <= a < b, e.g. i floordiv n with i in [0, n - 1].
    if (positive && prove_le(Poly::constant(0), a) && prove_lt(a, b)) {
      return Poly::constant(0);
    }
    return keep_node(ExprKind::kFloorDiv, a, b);
  }
  int64_t c = b.constant_term();
  if (c == 0) return keep_node(ExprKind::kFloorDiv, a, b);  // evaluation reports it
  try {
    // floor(a / c) == floor(-a / -c): work with a positive divisor.
    if (c < 0) return floordiv_const(neg(a), fit_or_throw(checked_neg(c)));
    return floordiv_const(a, c);
  } catch (PolyOverflow&) {
    return keep_node(ExprKind::kFloorDiv, a, b);
  }
}

Poly Simplifier::floordiv_const(Poly a, int64_t c) {
  if (a.is_constant()) return Poly::constant(*checked_floordiv(a.constant_term(), c));
  if (c == 1) return a;
  // floor(g*u / (g*v)) == floor(u / v) for g > 0.
  if (int64_t g = common_factor(a, c); g > 1) {
    a = divide_exact(a, g);
    c /= g;
    if (c == 1) return a;
  }
  // floor((c*q + r) / c) == q + floor(r / c) for integer q: (x*8 + 3) floordiv 8 -> x.
  auto [quotient, remainder] = split_by(a, c);
  if (auto k = single_period(bounds(remainder), c)) return add_constant(quotient, *k);
  // ((X floordiv c1) + k) floordiv c == (X + k*c1) floordiv (c1*c) for positive c1, c.
  Poly rest = add_constant(remainder, -remainder.constant_term());
  if (Expr inner = div_mod_atom(rest, ExprKind::kFloorDiv); inner.defined()) {
    int64_t c1 = inner.operand(1).int_value();
    Poly x = add_constant(linear_form_or_atom(inner.operand(0)),
                          fit_or_throw(checked_mul(remainder.constant_term(), c1)));
    return add(quotient, floordiv_const(x, fit_or_throw(checked_mul(c1, c))));
  }
  return add(quotient, Poly::atom(floordiv(to_expr(remainder), make_int(c))));
}

Poly Simplifier::floormod_poly(const Poly& a, const Poly& b) {
  if (!b.is_constant()) {
    if (a.is_constant() && a.constant_term() == 0) return Poly::constant(0);
    bool positive = prove_le(Poly::constant(1), b);
    bool nonzero = positive || prove_le(b, Poly::constant(-1));
    if (nonzero && poly_equal(a, b)) return Poly::constant(0);
    if (positive && prove_le(Poly::constant(0), a) && prove_lt(a, b)) {
      return a;  // 0 <= a < b
    }
    return keep_node(ExprKind::kFloorMod, a, b);
  }
  int64_t c = b.constant_term();
  if (c == 0) return keep_node(ExprKind::kFloorMod, a, b);
  try {
    // a floormod c == -((-a) floormod (-c)).
    if (c < 0) return neg(floormod_const(neg(a), fit_or_throw(checked_neg(c))));
    return floormod_const(a, c);
  } catch (PolyOverflow&) {
    return keep_node(ExprKind::kFloorMod, a, b);
  }
}

Poly Simplifier::floormod_const(Poly a, int64_t c) {
  if (a.is_constant()) return Poly::constant(*checked_floormod(a.constant_term(), c));
  if (c == 1) return Poly::constant(0);
  // (g*u) floormod (g*v) == g * (u floormod v) for g > 0.
  if (int64_t g = common_factor(a, c); g > 1) {
    return scale(floormod_const(divide_exact(a, g), c / g), g);
  }
  // Multiples of c do not change the residue: (n*16) floormod 16 -> 0.
  Poly remainder = split_by(a, c).second;
  if (remainder.is_constant()) return remainder;
  if (auto k = single_period(bounds(remainder), c)) {
    return add_constant(remainder, fit_or_throw(checked_mul(-*k, c)));
  }
  // X floormod c1 == X (mod c) when c divides c1, so inside a floormod by c such a term can
  // be replaced by X: (x floormod 16 + 1) floormod 4 -> (x + 1) floormod 4, and
  // (n - n floormod 8) floormod 8 -> 0.
  Poly reduced = remainder;
  bool replaced = false;
  for (const Term& t : remainder.terms()) {
    Expr inner = div_mod_atom(t.monomial, ExprKind::kFloorMod);
    if (!inner.defined() || inner.operand(1).int_value() % c != 0) continue;
    reduced = add(sub(reduced, scale(Poly::atom(inner), t.coeff)),
                  scale(linear_form_or_atom(inner.operand(0)), t.coeff));
    replaced = true;
  }
  if (replaced) return floormod_const(reduced, c);
  // A remainder known to be base modulo a multiple of c has residue base mod c.
  ModularSet m = analyzer_.modular_set_as_written(to_expr(remainder));
  if (m.coeff > 0 && m.coeff % c == 0) return Poly::constant(*checked_floormod(m.base, c));
  return Poly::atom(floormod(to_expr(remainder), make_int(c)));
}

Poly Simplifier::min_max_poly(const Expr& e) {
  ExprKind kind = e.kind();
  bool is_min = kind == ExprKind::kMin;
  // min(min(a, b), c) is one n-ary min: flatten, so that order and nesting do not matter.
  std::vector<Poly> operands;
  std::function<void(const Poly&)> flatten = [&](const Poly& p) {
    Expr atom = p.single_atom();
    if (atom.defined() && atom.kind() == kind) {
      flatten(linear_form_or_atom(atom.operand(0)));
      flatten(linear_form_or_atom(atom.operand(1)));
    } else {
      operands.push_back(p);
    }
  };
  flatten(to_poly(e.operand(0)));
  flatten(to_poly(e.operand(1)));
  // Keep only operands that no other operand provably dominates (for min: is <= them).
  auto dominates = [&](const Poly& a, const Poly& b) {
    return is_min ? prove_le(a, b) : prove_le(b, a);
  };
  std::vector<Poly> kept;
  for (const Poly& candidate : operands) {
    if (std::any_of(kept.begin(), kept.end(),
                    [&](const Poly& k) { return dominates(k, candidate); })) {
      continue;
    }
    std::erase_if(kept, [&](const Poly& k) { return dominates(candidate, k); });
    kept.push_back(candidate);
  }
  if (kept.size() == 1) return kept[0];
  std::vector<Expr> exprs;
  for (const Poly& p : kept) exprs.push_back(to_expr(p));
  // Sorted for a canonical form; a constant goes last because `min(i, 16)` reads best.
  std::sort(exprs.begin(), exprs.end(), [](const Expr& a, const Expr& b) {
    if (a.is_int_imm() != b.is_int_imm()) return b.is_int_imm();
    return structural_compare(a, b) < 0;
  });
  Expr chain = exprs[0];
  for (size_t i = 1; i < exprs.size(); ++i) chain = make_binary(kind, chain, exprs[i]);
  return Poly::atom(chain);
}

Poly Simplifier::select_poly(const Expr& e) {
  Expr cond = simplify_condition(e.operand(0));
  Poly t = to_poly(e.operand(1));
  Poly f = to_poly(e.operand(2));
  if (cond.kind() == ExprKind::kBoolImm) return cond->value ? t : f;
  if (poly_equal(t, f)) return t;
  return Poly::atom(select(cond, to_expr(t), to_expr(f)));
}

}  // namespace dynvm::arith
