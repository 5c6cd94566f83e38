// Internal to kernels/arith: the rewriting engine behind simplify(). Split over
// simplify.cc (integer nodes: polynomials, floordiv/floormod, min/max, select) and
// simplify_condition.cc (comparisons, && || !, and the proofs both halves rely on).
#pragma once

#include <unordered_map>

#include "kernels/arith/analyzer.h"
#include "kernels/arith/canonical.h"
#include "kernels/arith/expr.h"

namespace dynvm::arith {

class Simplifier {
 public:
  explicit Simplifier(const Analyzer& analyzer) : analyzer_(analyzer) {}

  Expr simplify(const Expr& e);
  // Canonical polynomial of an integer expression.
  Poly to_poly(const Expr& e);
  // Canonical form of a boolean expression.
  Expr simplify_condition(const Expr& e);

  // Proofs over canonical polynomials; false means "could not prove".
  bool prove_nonpositive(const Poly& d);
  bool prove_le(const Poly& a, const Poly& b);  // a <= b
  bool prove_lt(const Poly& a, const Poly& b);  // a < b
  bool prove_nonzero(const Poly& d);

  Bounds bounds(const Poly& p) const { return analyzer_.const_bounds_as_written(to_expr(p)); }

 private:
  Poly node_poly(const Expr& e);
  Poly add_or_keep(ExprKind kind, const Poly& a, const Poly& b);
  Poly floordiv_poly(const Poly& a, const Poly& b);
  Poly floormod_poly(const Poly& a, const Poly& b);
  Poly floordiv_const(Poly a, int64_t c);
  Poly floormod_const(Poly a, int64_t c);
  Poly min_max_poly(const Expr& e);
  Poly select_poly(const Expr& e);
  // Rewrites b*c*(X floordiv c) + b*(X floormod c) into b*X wherever both terms appear.
  Poly merge_div_mod(Poly p);

  Expr compare(ExprKind kind, const Poly& a, const Poly& b);
  Expr compare_le0(const Poly& d);
  Expr compare_eq0(const Poly& d, ExprKind kind);
  Expr logic(const Expr& e);
  // Whether condition a implies condition b (both simplified), for dropping redundant terms.
  bool implies(const Expr& a, const Expr& b);

  bool prove_nonpositive_by_rewriting(const Poly& d);

  const Analyzer& analyzer_;
  int proof_depth_ = 0;  // proofs substitute and recurse; this bounds the work
  // Polys of the min / max / select / division nodes met so far, by node: the dims type
  // inference composes share operands (a select over two selects over the same dims), and
  // without it their tree, exponentially larger than the graph, is walked whole. Each entry
  // holds its node, so that a node a proof built and dropped cannot be freed and its address
  // reused by another while this simplifier lives.
  std::unordered_map<const void*, std::pair<Expr, Poly>> memo_;
};

// Poly of an already simplified expression; keeps it as one atom if expanding overflows.
Poly linear_form_or_atom(const Expr& e);
// The Poly for a node kept as written (over simplified operands).
Poly keep_node(ExprKind kind, const Poly& a, const Poly& b);

}  // namespace dynvm::arith
