// Bounds of index expressions at a point of a loop nest, for the passes that need the
// values a symbolic extent can take (specialize_extents: one copy per value; vectorize: a
// remainder of at most one vector). Exact rules only: interval bounds over the enclosing
// loops' ranges and the function's dims (>= 0), the extremes of an expression affine in a
// loop at that loop's ends (interval arithmetic loses the correlation in `m - io*8` with
// io >= m floordiv 8), and `c * (y floordiv c)` read as `y - y floormod c`.
#pragma once

#include <vector>

#include "kernels/arith/analyzer.h"
#include "kernels/tir/stmt.h"

namespace dynvm::tir {

class LoopBounds {
 public:
  // The function's dims are >= 0.
  explicit LoopBounds(const PrimFunc& f);

  // Inside loop `s` (a kFor) until the matching leave(s); loops nest.
  void enter(const Stmt& s);
  void leave(const Stmt& s);

  // [min, max] of e where the innermost entered loop's body runs (kNegInf / kPosInf where
  // unknown).
  arith::Bounds range(const arith::Expr& e) const;

  const arith::Analyzer& analyzer() const { return an_; }

 private:
  struct Loop {
    arith::VarId var;
    arith::Expr min;
    arith::Expr extent;
  };
  arith::Bounds bounds(const arith::Expr& x) const;
  arith::Expr at_extreme(const arith::Expr& x, const Loop& loop, bool largest) const;

  arith::Analyzer an_;
  std::vector<Loop> loops_;  // enclosing loops, outermost first
};

}  // namespace dynvm::tir
