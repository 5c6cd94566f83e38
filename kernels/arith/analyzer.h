// The Analyzer: what dynvm knows about symbolic integers in one context (the ranges of the
// variables in scope) and the questions it can answer about expressions over them:
// constant bounds, divisibility (modular sets), simplification and proofs.
//
//   Analyzer an;
//   an.bind(i, 0, n - 1);                  // a loop variable, symbolic range
//   an.bind(n, 1, kPosInf);                // a dim, at least 1
//   an.simplify(floordiv(n * 16, 16));     // n
//   an.provably_divisible(n * 16, 16);     // true: a split by 16 needs no tail
//   an.can_prove(lt(i, n));                // true
#pragma once

#include <cstdint>
#include <unordered_map>

#include "kernels/arith/expr.h"
#include "kernels/arith/int_math.h"

namespace dynvm::arith {

// A closed interval; kNegInf / kPosInf (INT64_MIN / INT64_MAX) are infinities.
struct Bounds {
  int64_t min = kNegInf;
  int64_t max = kPosInf;

  bool is_constant() const { return min == max && min != kNegInf && min != kPosInf; }
  bool contains(int64_t v) const { return min <= v && v <= max; }
  static Bounds everything() { return {}; }
  static Bounds exactly(int64_t v) { return {v, v}; }
};

// The value is coeff * k + base for some integer k. coeff == 0 means the value is exactly
// base; otherwise coeff > 0 and 0 <= base < coeff. {1, 0} says nothing.
struct ModularSet {
  int64_t coeff = 1;
  int64_t base = 0;

  bool holds_for(int64_t v) const;
  static ModularSet everything() { return {}; }
  static ModularSet exactly(int64_t v) { return {0, v}; }
};

// What is known about one variable: a constant interval, and possibly symbolic bounds
// (min_expr <= var <= max_expr) that proofs can substitute, such as i <= n - 1.
struct VarRange {
  int64_t min = kNegInf;
  int64_t max = kPosInf;
  Expr min_expr;  // undefined: only the constant is known
  Expr max_expr;
};

class Analyzer {
 public:
  // Variable v takes values in [min, max]; kPosInf / kNegInf leave a side open. Binding a
  // variable again replaces what was known. UserError if min > max.
  void bind(const Var& v, int64_t min, int64_t max);
  // Symbolic range: min <= v <= max where the bounds are expressions over other variables
  // (they must not mention v). The constant interval is derived from their bounds.
  void bind(const Var& v, const Expr& min, const Expr& max);
  void unbind(const Var& v);
  // nullptr when nothing is known about the variable.
  const VarRange* range(VarId id) const;

  // Interval containing every value of e (for every variable assignment within the bound
  // ranges where e evaluates without error). Analyses e as written and as simplified and
  // returns the tighter.
  Bounds const_bounds(const Expr& e) const;
  // One bottom-up interval pass over e as written, no simplification (what simplify uses).
  Bounds const_bounds_as_written(const Expr& e) const;

  // Largest known {coeff, base} with e == coeff*k + base (e as written and as simplified).
  ModularSet modular_set(const Expr& e) const;
  ModularSet modular_set_as_written(const Expr& e) const;

  // Canonical, readable form of e (see simplify.h).
  Expr simplify(const Expr& e) const;

  // True only when a == b for every assignment in range: their simplified difference is 0,
  // or its bounds are [0, 0]. False means "could not prove", not "different".
  bool provably_equal(const Expr& a, const Expr& b) const;
  // True only when the condition holds for every assignment in range.
  bool can_prove(const Expr& cond) const;
  // True only when e is a multiple of factor (> 0) for every assignment in range.
  bool provably_divisible(const Expr& e, int64_t factor) const;

 private:
  // Bounds of nodes met so far in one walk: expressions share operands (type inference's
  // selects over selects of the same dims), and their trees are exponentially larger.
  using BoundsMemo = std::unordered_map<const void*, Bounds>;
  Bounds bounds_as_written(const Expr& e, BoundsMemo& memo) const;
  Bounds bounds_of_node(const Expr& e, BoundsMemo& memo) const;

  std::unordered_map<VarId, VarRange> ranges_;
};

// The same questions without any variable ranges.
bool provably_equal(const Expr& a, const Expr& b);
bool provably_divisible(const Expr& e, int64_t factor);

}  // namespace dynvm::arith
