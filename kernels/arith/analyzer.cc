// The Analyzer's context (variable ranges) and the questions that combine its analyses:
// bounds and modular sets of an expression both as written and as simplified, and proofs.
#include "kernels/arith/analyzer.h"

#include <algorithm>

#include "kernels/arith/printer.h"
#include "kernels/arith/simplify.h"
#include "vm/error.h"

namespace dynvm::arith {

void Analyzer::bind(const Var& v, int64_t min, int64_t max) {
  if (min > max) user_error("empty range [", min, ", ", max, "] for variable ", v.name());
  if (min == kPosInf || max == kNegInf) {
    user_error("range of variable ", v.name(), " is only an infinity");
  }
  ranges_[v.id()] = VarRange{min, max, Expr(), Expr()};
}

void Analyzer::bind(const Var& v, const Expr& min, const Expr& max) {
  DYNVM_INTERNAL_CHECK(min.defined() && max.defined() && !min.is_boolean() && !max.is_boolean(),
                       "a range needs two integer bounds");
  if (uses_var(min, v.id()) || uses_var(max, v.id())) {
    user_error("the range of variable ", v.name(), " refers to itself: [", to_string(min), ", ",
               to_string(max), "]");
  }
  int64_t lo = const_bounds(min).min;
  int64_t hi = const_bounds(max).max;
  if (lo > hi) {
    user_error("empty range [", to_string(min), ", ", to_string(max), "] for variable ", v.name());
  }
  VarRange r{lo, hi, Expr(), Expr()};
  // Constant bounds need no symbolic form; keeping them out saves the proofs work.
  if (!min.is_int_imm()) r.min_expr = min;
  if (!max.is_int_imm()) r.max_expr = max;
  ranges_[v.id()] = r;
}

void Analyzer::unbind(const Var& v) { ranges_.erase(v.id()); }

const VarRange* Analyzer::range(VarId id) const {
  auto it = ranges_.find(id);
  return it == ranges_.end() ? nullptr : &it->second;
}

Bounds Analyzer::const_bounds(const Expr& e) const {
  Bounds written = const_bounds_as_written(e);
  if (written.is_constant()) return written;
  Bounds simplified = const_bounds_as_written(simplify(e));
  // Both contain every value e takes, so their intersection does too.
  return {std::max(written.min, simplified.min), std::min(written.max, simplified.max)};
}

ModularSet Analyzer::modular_set(const Expr& e) const {
  ModularSet written = modular_set_as_written(e);
  if (written.coeff == 0) return written;
  Expr s = simplify(e);
  Bounds b = const_bounds_as_written(s);
  if (b.is_constant()) return ModularSet::exactly(b.min);
  ModularSet simplified = modular_set_as_written(s);
  // Both hold; a larger coefficient says more (0, "exactly", says the most).
  if (simplified.coeff == 0 || simplified.coeff > written.coeff) return simplified;
  return written;
}

Expr Analyzer::simplify(const Expr& e) const { return arith::simplify(e, *this); }

bool Analyzer::provably_equal(const Expr& a, const Expr& b) const {
  DYNVM_INTERNAL_CHECK(!a.is_boolean() && !b.is_boolean(), "provably_equal of conditions");
  if (structural_equal(a, b)) return true;
  Expr difference = simplify(a - b);
  if (difference.is_int_imm()) return difference.int_value() == 0;
  if (const_bounds_as_written(difference).is_constant()) {
    return const_bounds_as_written(difference).min == 0;
  }
  return can_prove(eq(a, b));
}

bool Analyzer::can_prove(const Expr& cond) const {
  DYNVM_INTERNAL_CHECK(cond.is_boolean(), "can_prove of an integer expression");
  Expr s = simplify(cond);
  return s.kind() == ExprKind::kBoolImm && s->value == 1;
}

bool Analyzer::provably_divisible(const Expr& e, int64_t factor) const {
  DYNVM_INTERNAL_CHECK(factor > 0, "divisibility by a non-positive factor ", factor);
  ModularSet m = modular_set(e);
  if (m.coeff == 0) return *checked_floormod(m.base, factor) == 0;
  if (m.coeff % factor == 0 && m.base % factor == 0) return true;
  // The simplifier may still see it, e.g. through a floormod that folds to 0.
  Expr residue = simplify(floormod(e, make_int(factor)));
  return residue.is_int_imm() && residue.int_value() == 0;
}

bool provably_equal(const Expr& a, const Expr& b) { return Analyzer().provably_equal(a, b); }

bool provably_divisible(const Expr& e, int64_t factor) {
  return Analyzer().provably_divisible(e, factor);
}

}  // namespace dynvm::arith
