// Bounds of index expressions in a loop nest (see loop_bounds.h).
#include "kernels/tir/loop_bounds.h"

#include <algorithm>
#include <array>
#include <functional>
#include <optional>

#include "kernels/tir/arith_util.h"
#include "kernels/tir/functor.h"

namespace dynvm::tir {
namespace {

// Every `y floordiv c` in e with a constant c > 0, distinct.
std::vector<arith::Expr> floordiv_atoms(const arith::Expr& e) {
  std::vector<arith::Expr> out;
  std::function<void(const arith::Expr&)> walk = [&](const arith::Expr& x) {
    if (x.kind() == arith::ExprKind::kFloorDiv && x.operand(1).is_int_imm() &&
        x.operand(1).int_value() > 0) {
      for (const arith::Expr& seen : out) {
        if (arith::structural_equal(seen, x)) return;
      }
      out.push_back(x);
      return;
    }
    for (int i = 0; i < arith::kind_arity(x.kind()); ++i) walk(x.operand(i));
  };
  walk(e);
  return out;
}

// e with every occurrence of `part` replaced by `with`.
arith::Expr replace_subexpr(const arith::Expr& e, const arith::Expr& part,
                            const arith::Expr& with) {
  if (arith::structural_equal(e, part)) return with;
  const int arity = arith::kind_arity(e.kind());
  if (arity == 0) return e;
  std::array<arith::Expr, 3> ops;
  bool changed = false;
  for (int i = 0; i < arity; ++i) {
    ops[i] = replace_subexpr(e.operand(i), part, with);
    changed = changed || ops[i].get() != e.operand(i).get();
  }
  if (!changed) return e;
  switch (e.kind()) {
    case arith::ExprKind::kSelect:
      return arith::make_select(ops[0], ops[1], ops[2]);
    case arith::ExprKind::kNot:
      return arith::make_not(ops[0]);
    default:
      return arith::make_binary(e.kind(), ops[0], ops[1]);
  }
}

}  // namespace

LoopBounds::LoopBounds(const PrimFunc& f) {
  for (const BufferRef& p : f.params) {
    for (const auto& d : p->shape()) {
      if (d.kind() == arith::ExprKind::kVar) an_.bind(arith::Var(d), 0, arith::kPosInf);
    }
  }
}

void LoopBounds::enter(const Stmt& s) {
  arith::Var v(s->loop_var);
  if (s->min.is_int_imm() && s->extent.is_int_imm()) {
    an_.bind(v, s->min.int_value(), s->min.int_value() + s->extent.int_value() - 1);
  } else {
    an_.bind(v, s->min, an_.simplify(s->min + s->extent - arith::make_int(1)));
  }
  loops_.push_back({v.id(), s->min, s->extent});
}

void LoopBounds::leave(const Stmt& s) {
  loops_.pop_back();
  an_.unbind(arith::Var(s->loop_var));
}

arith::Bounds LoopBounds::range(const arith::Expr& e) const {
  arith::Bounds b = an_.const_bounds(e);
  // An expression affine in the loops takes its extremes at their ends: substitute those
  // (innermost loop first: its ends may mention outer loops) and bound what is left.
  arith::Expr upper = e, lower = e;
  for (size_t k = loops_.size(); k-- > 0 && (upper.defined() || lower.defined());) {
    upper = at_extreme(upper, loops_[k], true);
    lower = at_extreme(lower, loops_[k], false);
  }
  if (upper.defined()) b.max = std::min(b.max, bounds(upper).max);
  if (lower.defined()) b.min = std::max(b.min, bounds(lower).min);
  return b;
}

// const_bounds of x, also with each `c * (y floordiv c)` term written `y - y floormod c`:
// the interval of `m - (m floordiv 8)*8` is unbounded, that of `m floormod 8` is [0, 7].
arith::Bounds LoopBounds::bounds(const arith::Expr& x) const {
  arith::Bounds b = an_.const_bounds(x);
  arith::Expr rewritten = x;
  for (const arith::Expr& atom : floordiv_atoms(x)) {
    arith::Var q("q");
    std::optional<AffineForm> f = affine_in(replace_subexpr(rewritten, atom, q), q.id());
    int64_t c = atom.operand(1).int_value();
    if (!f || !f->coeff.is_int_imm() || f->coeff.int_value() % c != 0) continue;
    const arith::Expr& y = atom.operand(0);
    arith::Expr multiple = y - arith::floormod(y, atom.operand(1));  // == c * atom
    rewritten = an_.simplify(f->rest + arith::make_int(f->coeff.int_value() / c) * multiple);
  }
  arith::Bounds r = an_.const_bounds(rewritten);
  return {std::max(b.min, r.min), std::min(b.max, r.max)};
}

// The largest (or smallest) value of x over loop's range when x is affine in its variable
// with a constant coefficient; undefined otherwise.
arith::Expr LoopBounds::at_extreme(const arith::Expr& x, const Loop& loop, bool largest) const {
  if (!x.defined() || !arith::uses_var(x, loop.var)) return x;
  std::optional<AffineForm> f = affine_in(x, loop.var);
  if (!f || !f->coeff.is_int_imm()) return arith::Expr();
  bool at_last = (f->coeff.int_value() > 0) == largest;
  arith::Expr end = at_last ? loop.min + loop.extent - arith::make_int(1) : loop.min;
  return an_.simplify(f->rest + f->coeff * end);
}

}  // namespace dynvm::tir
