// Constant-bounds (interval) analysis: one bottom-up pass computing an interval for every
// node from the variables' ranges. Every rule over-approximates, so a value an expression
// actually takes is always inside its interval; infinities are kNegInf / kPosInf and all
// endpoint arithmetic saturates (int_math.h). A value that overflows int64 saturates to an
// infinity, which is sound because evaluating such an expression fails anyway.
#include <algorithm>

#include "kernels/arith/analyzer.h"
#include "vm/error.h"

namespace dynvm::arith {
namespace {

// A lower bound of +inf (or upper bound of -inf) can only come from a finite endpoint that
// landed exactly on an infinity's encoding; later rules would treat it as infinite (keep it
// through a division, say) and lose soundness. Loosening it by one keeps it finite.
Bounds finite_ends(Bounds b) {
  if (b.min == kPosInf) b.min = kPosInf - 1;
  if (b.max == kNegInf) b.max = kNegInf + 1;
  return b;
}

// Every helper below returns through finite_ends, so no rule ever sees such an endpoint.
Bounds add_bounds(const Bounds& a, const Bounds& b) {
  return finite_ends({bound_add_lo(a.min, b.min), bound_add_hi(a.max, b.max)});
}

Bounds neg_bounds(const Bounds& a) { return finite_ends({bound_neg(a.max), bound_neg(a.min)}); }

Bounds mul_bounds(const Bounds& a, const Bounds& b) {
  int64_t c[4] = {bound_mul(a.min, b.min), bound_mul(a.min, b.max), bound_mul(a.max, b.min),
                  bound_mul(a.max, b.max)};
  return finite_ends({*std::min_element(c, c + 4), *std::max_element(c, c + 4)});
}

// x * x is never negative, which the corner rule above cannot see.
Bounds square_bounds(const Bounds& a) {
  if (a.min >= 0) return finite_ends({bound_mul(a.min, a.min), bound_mul(a.max, a.max)});
  if (a.max <= 0) return finite_ends({bound_mul(a.max, a.max), bound_mul(a.min, a.min)});
  return {0, std::max(bound_mul(a.min, a.min), bound_mul(a.max, a.max))};
}

bool is_infinite(int64_t v) { return v == kNegInf || v == kPosInf; }

// floor(x / d) for an endpoint x and a divisor endpoint d >= 1 that may be +inf.
int64_t div_endpoint(int64_t x, int64_t d) {
  if (is_infinite(x)) return x;
  if (d == kPosInf) return x >= 0 ? 0 : -1;
  return *checked_floordiv(x, d);
}

Bounds floordiv_bounds(const Bounds& a, const Bounds& b) {
  if (b.min >= 1) {
    // For a fixed sign of the dividend the quotient is monotone in both operands.
    int64_t lo = a.min >= 0 ? div_endpoint(a.min, b.max) : div_endpoint(a.min, b.min);
    int64_t hi = a.max >= 0 ? div_endpoint(a.max, b.min) : div_endpoint(a.max, b.max);
    return finite_ends({lo, hi});
  }
  if (b.max <= -1) return floordiv_bounds(neg_bounds(a), neg_bounds(b));
  // The divisor may be either sign: |floor(a / b)| <= |a| for every b != 0.
  int64_t m = std::max(bound_neg(a.min), a.max);
  m = std::max<int64_t>(m, 0);
  return {bound_neg(m), m};
}

Bounds floormod_bounds(const Bounds& a, const Bounds& b) {
  if (b.is_constant() && b.min != 0 && !is_infinite(a.min) && !is_infinite(a.max)) {
    // A dividend inside one period [k*c, k*c + c) is just shifted.
    int64_t c = b.min;
    int64_t k = *checked_floordiv(a.min, c);
    if (k == *checked_floordiv(a.max, c)) {
      auto shift = checked_mul(k, c);
      if (shift) {
        auto lo = checked_sub(a.min, *shift), hi = checked_sub(a.max, *shift);
        if (lo && hi) return {*lo, *hi};
      }
    }
  }
  if (b.min >= 1) {
    int64_t hi = b.max == kPosInf ? kPosInf : b.max - 1;
    if (a.min >= 0) hi = std::min(hi, a.max);  // a mod b <= a for a >= 0
    return {0, hi};
  }
  if (b.max <= -1) {
    int64_t lo = b.min == kNegInf ? kNegInf : b.min + 1;
    if (a.max <= 0) lo = std::max(lo, a.min);
    return {lo, 0};
  }
  // The result has the divisor's sign and is smaller in magnitude.
  int64_t lo = b.min == kNegInf ? kNegInf : std::min<int64_t>(b.min + 1, 0);
  int64_t hi = b.max == kPosInf ? kPosInf : std::max<int64_t>(b.max - 1, 0);
  return {lo, hi};
}

Bounds join(const Bounds& a, const Bounds& b) {
  return {std::min(a.min, b.min), std::max(a.max, b.max)};
}

Bounds truth(bool known_true, bool known_false) {
  if (known_true) return Bounds::exactly(1);
  if (known_false) return Bounds::exactly(0);
  return {0, 1};
}

}  // namespace

Bounds Analyzer::const_bounds_as_written(const Expr& e) const {
  BoundsMemo memo;
  return bounds_as_written(e, memo);
}

Bounds Analyzer::bounds_as_written(const Expr& e, BoundsMemo& memo) const {
  if (!e.defined() || kind_arity(e.kind()) == 0) return finite_ends(bounds_of_node(e, memo));
  auto it = memo.find(e.get());
  if (it != memo.end()) return it->second;
  Bounds b = finite_ends(bounds_of_node(e, memo));
  memo.emplace(e.get(), b);
  return b;
}

Bounds Analyzer::bounds_of_node(const Expr& e, BoundsMemo& memo) const {
  DYNVM_INTERNAL_CHECK(e.defined(), "bounds of an undefined expression");
  switch (e.kind()) {
    case ExprKind::kIntImm:
      // INT64_MAX and INT64_MIN double as infinities; as constants they get an interval
      // that is correct either way.
      if (e->value == kPosInf) return {kPosInf - 1, kPosInf};
      if (e->value == kNegInf) return {kNegInf, kNegInf + 1};
      return Bounds::exactly(e->value);
    case ExprKind::kBoolImm:
      return Bounds::exactly(e->value);
    case ExprKind::kVar: {
      const VarRange* r = range(e->var_id);
      return r ? Bounds{r->min, r->max} : Bounds::everything();
    }
    case ExprKind::kNot: {
      Bounds a = bounds_as_written(e.operand(0), memo);
      return truth(a.max == 0, a.min == 1);
    }
    case ExprKind::kSelect: {
      Bounds c = bounds_as_written(e.operand(0), memo);
      Bounds t = bounds_as_written(e.operand(1), memo);
      Bounds f = bounds_as_written(e.operand(2), memo);
      if (c.min == 1) return t;
      if (c.max == 0) return f;
      return join(t, f);
    }
    default:
      break;
  }
  const Expr& x = e.operand(0);
  const Expr& y = e.operand(1);
  Bounds a = bounds_as_written(x, memo);
  Bounds b = bounds_as_written(y, memo);
  switch (e.kind()) {
    case ExprKind::kAdd:
      return add_bounds(a, b);
    case ExprKind::kSub:
      if (structural_equal(x, y)) return Bounds::exactly(0);
      return add_bounds(a, neg_bounds(b));
    case ExprKind::kMul:
      if (structural_equal(x, y)) return square_bounds(a);
      return mul_bounds(a, b);
    case ExprKind::kFloorDiv:
      return floordiv_bounds(a, b);
    case ExprKind::kFloorMod:
      return floormod_bounds(a, b);
    case ExprKind::kMin:
      return {std::min(a.min, b.min), std::min(a.max, b.max)};
    case ExprKind::kMax:
      return {std::max(a.min, b.min), std::max(a.max, b.max)};
    case ExprKind::kAnd:
      return truth(a.min == 1 && b.min == 1, a.max == 0 || b.max == 0);
    case ExprKind::kOr:
      return truth(a.min == 1 || b.min == 1, a.max == 0 && b.max == 0);
    default:
      break;
  }
  // Comparisons: decide from the bounds of the difference a - b.
  Bounds d = structural_equal(x, y) ? Bounds::exactly(0) : add_bounds(a, neg_bounds(b));
  switch (e.kind()) {
    case ExprKind::kEq:
      return truth(d.min == 0 && d.max == 0, d.min > 0 || d.max < 0);
    case ExprKind::kNe:
      return truth(d.min > 0 || d.max < 0, d.min == 0 && d.max == 0);
    case ExprKind::kLt:
      return truth(d.max < 0, d.min >= 0);
    case ExprKind::kLe:
      return truth(d.max <= 0, d.min > 0);
    case ExprKind::kGt:
      return truth(d.min > 0, d.max <= 0);
    case ExprKind::kGe:
      return truth(d.min >= 0, d.max < 0);
    default:
      DYNVM_INTERNAL_CHECK(false, "no bounds rule for ", kind_name(e.kind()));
      return Bounds::everything();
  }
}

}  // namespace dynvm::arith
