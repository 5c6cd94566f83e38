// Simplification of conditions, and the proofs that the whole simplifier relies on.
//
// A comparison becomes `d <= 0` or `d == 0` / `d != 0` over the canonical difference d,
// is decided when a proof allows, and is otherwise printed back in one canonical shape:
// `P < Q`, `P <= Q`, `P == Q` or `P != Q` with positive coefficients on both sides and the
// common factor of the terms divided out (so `x*2 < 7` becomes `x < 4`). `!` is pushed inward
// (there is always an opposite comparison), && and || are flattened, deduplicated, stripped of
// implied terms and sorted.
//
// Proving d <= 0 tries, in order: the interval of d; substituting a variable's symbolic
// bound (i <= n - 1) for its linear occurrences; and rewriting c*(X floordiv c) as
// X - (X floormod c). Each step recurses a bounded number of times.
#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "kernels/arith/simplifier.h"
#include "vm/error.h"

namespace dynvm::arith {
namespace {

constexpr int kMaxProofDepth = 4;

// The opposite condition, one level deep (the caller simplifies the result).
Expr negate(const Expr& e) {
  const Expr* a = kind_arity(e.kind()) >= 1 ? &e.operand(0) : nullptr;
  const Expr* b = kind_arity(e.kind()) >= 2 ? &e.operand(1) : nullptr;
  switch (e.kind()) {
    case ExprKind::kBoolImm:
      return make_bool(e->value == 0);
    case ExprKind::kEq:
      return ne(*a, *b);
    case ExprKind::kNe:
      return eq(*a, *b);
    case ExprKind::kLt:
      return ge(*a, *b);
    case ExprKind::kLe:
      return gt(*a, *b);
    case ExprKind::kGt:
      return le(*a, *b);
    case ExprKind::kGe:
      return lt(*a, *b);
    case ExprKind::kAnd:
      return logical_or(logical_not(*a), logical_not(*b));
    case ExprKind::kOr:
      return logical_and(logical_not(*a), logical_not(*b));
    case ExprKind::kNot:
      return *a;
    default:
      DYNVM_INTERNAL_CHECK(false, "negate of a non-condition ", kind_name(e.kind()));
      return e;
  }
}

// Splits d into its positive-coefficient terms and the negated negative ones:
// d == positive - negative + d.constant_term().
void split_signs(const Poly& d, Poly* positive, Poly* negative) {
  std::vector<Term> pos, negs;
  for (const Term& t : d.terms()) {
    if (t.coeff > 0) {
      pos.push_back(t);
    } else {
      negs.push_back(Term{t.monomial, fit_or_throw(checked_neg(t.coeff))});
    }
  }
  *positive = Poly::from_terms(0, std::move(pos));
  *negative = Poly::from_terms(0, std::move(negs));
}

// d with its term coefficients (all multiples of g) divided by g, and the given constant.
Poly divide_terms(const Poly& d, int64_t g, int64_t constant) {
  std::vector<Term> terms;
  for (const Term& t : d.terms()) terms.push_back(Term{t.monomial, t.coeff / g});
  return Poly::from_terms(constant, std::move(terms));
}

class DepthGuard {
 public:
  explicit DepthGuard(int* depth) : depth_(depth) { ++*depth_; }
  ~DepthGuard() { --*depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  int* depth_;
};

}  // namespace

Expr Simplifier::simplify_condition(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kBoolImm:
      return e;
    case ExprKind::kNot:
      return simplify_condition(negate(e.operand(0)));
    case ExprKind::kAnd:
    case ExprKind::kOr:
      return logic(e);
    default:
      DYNVM_INTERNAL_CHECK(is_comparison_kind(e.kind()), "not a condition: ", kind_name(e.kind()));
      return compare(e.kind(), to_poly(e.operand(0)), to_poly(e.operand(1)));
  }
}

Expr Simplifier::compare(ExprKind kind, const Poly& a, const Poly& b) {
  try {
    switch (kind) {
      case ExprKind::kLt:
        return compare_le0(add_constant(sub(a, b), 1));  // a - b + 1 <= 0
      case ExprKind::kLe:
        return compare_le0(sub(a, b));
      case ExprKind::kGt:
        return compare_le0(add_constant(sub(b, a), 1));
      case ExprKind::kGe:
        return compare_le0(sub(b, a));
      default:
        return compare_eq0(sub(a, b), kind);
    }
  } catch (PolyOverflow&) {
    return make_binary(kind, to_expr(a), to_expr(b));
  }
}

Expr Simplifier::compare_le0(const Poly& d) {
  if (prove_nonpositive(d)) return make_bool(true);
  if (prove_le(Poly::constant(1), d)) return make_bool(false);
  // g*u + c <= 0  <=>  u + ceil(c / g) <= 0.
  Poly u = d;
  if (int64_t g = term_gcd(d); g > 1) {
    int64_t c = -fit_or_throw(checked_floordiv(fit_or_throw(checked_neg(d.constant_term())), g));
    u = divide_terms(d, g, c);
  }
  // P - N + c <= 0 is printed with the constant on one side only, preferring the spelling
  // without one: `i < n` (c == 1), `a <= b` (c == 0), `0 < n` (no P, c == 1), else
  // `P < N + (1 - c)` or `c <= N`.
  Poly positive, negative;
  split_signs(u, &positive, &negative);
  int64_t c = u.constant_term();
  if (!positive.is_constant()) {
    if (c == 0) return le(to_expr(positive), to_expr(negative));
    return lt(to_expr(positive), to_expr(add_constant(negative, fit_or_throw(checked_sub(1, c)))));
  }
  if (c == 1) return lt(make_int(0), to_expr(negative));
  return le(make_int(c), to_expr(negative));
}

Expr Simplifier::compare_eq0(const Poly& d, ExprKind kind) {
  bool is_eq = kind == ExprKind::kEq;
  if (prove_nonzero(d)) return make_bool(!is_eq);
  if (prove_nonpositive(d) && prove_nonpositive(neg(d))) return make_bool(is_eq);
  // g*u + c == 0 has no solution unless g divides c; then it is u + c/g == 0.
  int64_t g = term_gcd(d);
  if (d.constant_term() % g != 0) return make_bool(!is_eq);
  Poly u = divide_terms(d, g, d.constant_term() / g);
  if (u.terms().front().coeff < 0) u = neg(u);  // one sign for `a == b` and `b == a`
  Poly positive, negative;
  split_signs(u, &positive, &negative);
  return make_binary(kind, to_expr(positive),
                     to_expr(add_constant(negative, fit_or_throw(checked_neg(u.constant_term())))));
}

Expr Simplifier::logic(const Expr& e) {
  ExprKind kind = e.kind();
  bool is_and = kind == ExprKind::kAnd;
  std::vector<Expr> items;
  std::function<void(const Expr&, bool)> gather = [&](const Expr& x, bool simplified) {
    if (x.kind() == kind) {
      gather(x.operand(0), simplified);
      gather(x.operand(1), simplified);
    } else if (!simplified) {
      gather(simplify_condition(x), true);
    } else {
      items.push_back(x);
    }
  };
  gather(e, false);
  // && keeps the strongest conditions (one that implies another makes it redundant);
  // || keeps the weakest.
  std::vector<Expr> kept;
  for (const Expr& item : items) {
    if (item.kind() == ExprKind::kBoolImm) {
      if ((item->value != 0) != is_and) return item;  // false && ..., true || ...
      continue;
    }
    auto redundant = [&](const Expr& a, const Expr& b) {
      return is_and ? implies(a, b) : implies(b, a);
    };
    if (std::any_of(kept.begin(), kept.end(), [&](const Expr& k) { return redundant(k, item); })) {
      continue;
    }
    std::erase_if(kept, [&](const Expr& k) { return redundant(item, k); });
    kept.push_back(item);
  }
  // p && !p is false, p || !p is true.
  for (const Expr& item : kept) {
    Expr opposite = simplify_condition(negate(item));
    for (const Expr& other : kept) {
      if (structural_equal(other, opposite)) return make_bool(!is_and);
    }
  }
  if (kept.empty()) return make_bool(is_and);
  std::sort(kept.begin(), kept.end(),
            [](const Expr& a, const Expr& b) { return structural_compare(a, b) < 0; });
  Expr chain = kept[0];
  for (size_t i = 1; i < kept.size(); ++i) chain = make_binary(kind, chain, kept[i]);
  return chain;
}

bool Simplifier::implies(const Expr& a, const Expr& b) {
  if (structural_equal(a, b)) return true;
  // Canonical inequalities are `A < B` or `A <= B`, i.e. d <= 0 with d = A - B (+ 1 for <).
  auto difference = [](const Expr& cond) -> std::optional<Poly> {
    if (cond.kind() != ExprKind::kLt && cond.kind() != ExprKind::kLe) return std::nullopt;
    Poly d = sub(linear_form_or_atom(cond.operand(0)), linear_form_or_atom(cond.operand(1)));
    return cond.kind() == ExprKind::kLt ? add_constant(d, 1) : d;
  };
  try {
    auto da = difference(a), db = difference(b);
    // da <= 0 implies db <= 0 when db <= da.
    return da && db && prove_le(*db, *da);
  } catch (PolyOverflow&) {
    return false;
  }
}

bool Simplifier::prove_le(const Poly& a, const Poly& b) {
  try {
    return prove_nonpositive(sub(a, b));
  } catch (PolyOverflow&) {
    return false;
  }
}

bool Simplifier::prove_lt(const Poly& a, const Poly& b) {
  try {
    return prove_nonpositive(add_constant(sub(a, b), 1));
  } catch (PolyOverflow&) {
    return false;
  }
}

bool Simplifier::prove_nonzero(const Poly& d) {
  if (d.is_constant()) return d.constant_term() != 0;
  if (prove_lt(d, Poly::constant(0)) || prove_lt(Poly::constant(0), d)) return true;
  // d == base (mod coeff) with base != 0 can never be 0, e.g. 2*x + 1.
  ModularSet m = analyzer_.modular_set_as_written(to_expr(d));
  return m.coeff > 0 && m.base != 0;
}

bool Simplifier::prove_nonpositive(const Poly& d) {
  if (d.is_constant()) return d.constant_term() <= 0;
  if (bounds(d).max <= 0) return true;
  if (proof_depth_ >= kMaxProofDepth) return false;
  DepthGuard guard(&proof_depth_);
  return prove_nonpositive_by_rewriting(d);
}

bool Simplifier::prove_nonpositive_by_rewriting(const Poly& d) {
  try {
    // d <= d' where each linear c*v is replaced by c*max(v) (c > 0) or c*min(v) (c < 0):
    // proving d' <= 0 proves d <= 0.
    Poly bounded = d;
    bool substituted = false;
    for (const Term& t : d.terms()) {
      if (t.monomial.atoms.size() != 1 || t.monomial.atoms[0].kind() != ExprKind::kVar) continue;
      const Expr& v = t.monomial.atoms[0];
      const VarRange* r = analyzer_.range(v->var_id);
      if (r == nullptr) continue;
      const Expr& bound = t.coeff > 0 ? r->max_expr : r->min_expr;
      if (!bound.defined()) continue;
      bounded = add(bounded, scale(sub(to_poly(bound), Poly::atom(v)), t.coeff));
      substituted = true;
    }
    if (substituted && prove_nonpositive(bounded)) return true;

    // c*k*(X floordiv c) == k*(X - X floormod c): exposes the remainder's bounds, e.g.
    // ((n + 15) floordiv 16)*16 >= n. d is first scaled by the least m that makes every
    // such term's coefficient a multiple of its divisor; as d is an integer, m*d <= m - 1
    // proves d <= 0, e.g. ((h + 7) floordiv 8)*2 >= (h + 3) floordiv 4 (m = 4).
    auto div_atom = [](const Term& t) -> const Expr* {
      if (t.monomial.atoms.size() != 1) return nullptr;
      const Expr& atom = t.monomial.atoms[0];
      if (atom.kind() != ExprKind::kFloorDiv || !atom.operand(1).is_int_imm() ||
          atom.operand(1).int_value() <= 0) {
        return nullptr;
      }
      return &atom;
    };
    constexpr int64_t kMaxScale = 1024;
    int64_t m = 1;
    for (const Term& t : d.terms()) {
      const Expr* atom = div_atom(t);
      if (atom == nullptr) continue;
      const int64_t c = (*atom).operand(1).int_value();
      const int64_t need = c / fit_or_throw(checked_gcd(t.coeff, c));
      m = m / fit_or_throw(checked_gcd(m, need)) * need;
      if (m > kMaxScale) return false;
    }
    Poly scaled = scale(d, m);
    Poly rewritten = scaled;
    bool changed = false;
    for (const Term& t : scaled.terms()) {
      const Expr* atom = div_atom(t);
      if (atom == nullptr) continue;
      const int64_t c = (*atom).operand(1).int_value();
      if (t.coeff % c != 0) continue;
      Poly x = linear_form_or_atom((*atom).operand(0));
      Poly exact = scale(sub(x, floormod_const(x, c)), t.coeff / c);
      rewritten = add(sub(rewritten, scale(Poly::atom(*atom), t.coeff)), exact);
      changed = true;
    }
    if (changed && prove_nonpositive(add_constant(rewritten, 1 - m))) return true;
  } catch (PolyOverflow&) {
  }
  return false;
}

}  // namespace dynvm::arith
