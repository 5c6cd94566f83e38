// loop_partition: removes bounds guards from the bulk of a loop's iterations. A split that
// does not divide its extent lowers to
//     for (io, 0, ceildiv(n, 16)):  for (ii, 0, 16):  if (io*16 + ii < n): body
// and the guard costs a compare and a branch (and blocks vectorization) in every iteration.
// For a loop `v` whose body holds an `if` with atoms `a*v + r <= 0`-like (any <, <=, >, >= of
// an expression affine in v with a constant coefficient), the pass computes the range of v on
// which every such atom holds for all values of the loops between v and the if (bounding r
// by those loops' ranges), and splits v into
//     head [min, lo)   main [lo, hi)   tail [hi, min + extent)
// The main part gets the if replaced by its remaining atoms (those not about v), or by its
// then-branch. Head and tail keep the guard — unless r involved no inner loop, in which case
// the atoms are exactly false there and the if becomes its else-branch.
//
// A store value `select(c, a, b)` whose condition is such an index condition is a guard too
// (conv's padded copy reads `inside ? X[clamped] : 0`): the main part takes `a`, an exact
// head or tail `b`. A main part is partitioned again for the guards of other ranges it
// holds (a split's tail guard around that select), and its indices are simplified knowing
// that the removed guards hold there, so the padded copy's clamps vanish from its interior.
//
// Soundness does not rest on the simplifier: lo and hi are built so that the atoms hold by
// construction (a * floordiv(x, a) <= x). When no if qualifies (atoms not affine, a symbolic
// coefficient, r depending on a let or on v itself, ==, !=, ||), the loop is left alone.
// GPU-bound loops are never partitioned. Nor is an unrolled loop of constant range (a register
// tile's columns) whose split point would be symbolic: its copies must index the tile at
// constants, so it keeps its guard and the loops inside it are partitioned instead (a
// vectorized one gets a masked tail).
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/arith/analyzer.h"
#include "kernels/arith/simplify.h"
#include "kernels/tir/functor.h"
#include "kernels/tir/passes/passes.h"
#include "vm/error.h"

namespace dynvm::tir {
namespace {

// Every expression this pass reasons about is an index expression.
using arith::Expr;

// A loop between the partitioned loop and an if: its variable's range.
struct InnerLoop {
  arith::VarId var;
  Expr min;
  Expr extent;
};

// Context of an if inside the partitioned loop's body.
struct Context {
  std::vector<InnerLoop> loops;      // outermost first
  std::vector<arith::VarId> opaque;  // let-bound variables: no known range
};

// What one if's condition says about v.
struct GuardRange {
  Expr lower;         // condition's v-atoms hold for v >= lower (undefined: no lower limit)
  Expr upper;         // ... and for v < upper (undefined: no upper limit)
  bool exact = true;  // the v-atoms are false for every v outside [lower, upper)
  std::vector<Expr> other_atoms;  // atoms not mentioning v
};

void split_conjunction(const Expr& c, std::vector<Expr>& atoms) {
  if (c.kind() == arith::ExprKind::kAnd) {
    split_conjunction(c.operand(0), atoms);
    split_conjunction(c.operand(1), atoms);
  } else {
    atoms.push_back(c);
  }
}

Expr conjunction(const std::vector<Expr>& atoms) {
  Expr c;
  for (const Expr& a : atoms) c = c.defined() ? arith::logical_and(c, a) : a;
  return c;
}

// The atom as `d <= 0`, or undefined for == / != / anything else.
Expr as_nonpositive(const Expr& atom) {
  const Expr one = arith::make_int(1);
  switch (atom.kind()) {
    case arith::ExprKind::kLt:
      return atom.operand(0) - atom.operand(1) + one;
    case arith::ExprKind::kLe:
      return atom.operand(0) - atom.operand(1);
    case arith::ExprKind::kGt:
      return atom.operand(1) - atom.operand(0) + one;
    case arith::ExprKind::kGe:
      return atom.operand(1) - atom.operand(0);
    default:
      return Expr();
  }
}

bool mentions_any(const Expr& e, const std::vector<arith::VarId>& vars) {
  for (arith::VarId id : vars) {
    if (arith::uses_var(e, id)) return true;
  }
  return false;
}

// Inner loops of at most this many (constant) iterations that r is not affine in are bounded
// by their values one by one (a resize's phase loop: an offset floordiv(2 r - 1, 4)).
constexpr int64_t kMaxEnumeratedIterations = 8;

// The largest value r takes over the inner loops' ranges (an upper bound, symbolic in the
// outer variables), or undefined when r is neither affine with constant coefficients in
// them nor over a short constant loop.
Expr max_over_inner(Expr r, const Context& ctx, bool& involved_inner) {
  for (size_t k = ctx.loops.size(); k-- > 0;) {
    const InnerLoop& w = ctx.loops[k];
    if (!arith::uses_var(r, w.var)) continue;
    involved_inner = true;
    std::optional<AffineForm> f = affine_in(r, w.var);
    if (f && f->coeff.is_int_imm()) {
      int64_t c = f->coeff.int_value();
      Expr at = c > 0 ? w.min + w.extent - arith::make_int(1) : w.min;
      r = arith::simplify(f->rest + f->coeff * at);
      continue;
    }
    if (!w.min.is_int_imm() || !w.extent.is_int_imm() || w.extent.int_value() < 1 ||
        w.extent.int_value() > kMaxEnumeratedIterations) {
      return Expr();
    }
    Expr most;
    for (int64_t i = 0; i < w.extent.int_value(); ++i) {
      Expr at = arith::simplify(substitute(r, {{w.var, arith::make_int(w.min.int_value() + i)}}));
      most = most.defined() ? arith::simplify(arith::max(most, at)) : at;
    }
    r = most;
  }
  return r;
}

std::optional<GuardRange> analyze(const Expr& cond, arith::VarId v, const Context& ctx,
                                  const arith::Analyzer& an) {
  if (!arith::uses_var(cond, v)) return std::nullopt;
  std::vector<Expr> atoms;
  split_conjunction(cond, atoms);
  GuardRange g;
  for (const Expr& atom : atoms) {
    if (!arith::uses_var(atom, v)) {
      g.other_atoms.push_back(atom);
      continue;
    }
    Expr d = as_nonpositive(atom);
    if (!d.defined()) return std::nullopt;
    std::optional<AffineForm> f = affine_in(d, v);
    if (!f || !f->coeff.is_int_imm() || f->coeff.int_value() == 0) return std::nullopt;
    bool involved_inner = false;
    Expr rmax = max_over_inner(f->rest, ctx, involved_inner);
    if (!rmax.defined() || arith::uses_var(rmax, v) || mentions_any(rmax, ctx.opaque)) {
      return std::nullopt;
    }
    for (const InnerLoop& w : ctx.loops) {
      if (arith::uses_var(rmax, w.var)) return std::nullopt;
    }
    if (involved_inner) g.exact = false;
    int64_t a = f->coeff.int_value();
    if (a > 0) {
      // a*v + rmax <= 0  <=  v <= floordiv(-rmax, a)
      Expr upper = an.simplify(arith::floordiv(-rmax, arith::make_int(a)) + arith::make_int(1));
      g.upper = g.upper.defined() ? an.simplify(arith::min(g.upper, upper)) : upper;
    } else {
      // rmax <= -a*v  <=  v >= ceildiv(rmax, -a)
      Expr lower =
          an.simplify(arith::floordiv(rmax + arith::make_int(-a - 1), arith::make_int(-a)));
      g.lower = g.lower.defined() ? an.simplify(arith::max(g.lower, lower)) : lower;
    }
  }
  return g;
}

bool same_expr(const Expr& a, const Expr& b) {
  if (a.defined() != b.defined()) return false;
  return !a.defined() || arith::structural_equal(a, b);
}

bool same_range(const GuardRange& a, const GuardRange& b) {
  return same_expr(a.lower, b.lower) && same_expr(a.upper, b.upper);
}

// Walks a loop body keeping the Context of each if. In search mode it records the first
// if that analyze() accepts; in rewrite mode it replaces every if whose range is `target`'s.
class GuardWalker : public StmtMutator {
 public:
  enum class Mode { kSearch, kMain, kOutside };

  GuardWalker(arith::VarId v, const arith::Analyzer& an, Mode mode,
              const GuardRange* target = nullptr)
      : v_(v), an_(an), mode_(mode), target_(target) {}

  std::optional<GuardRange> found;

 protected:
  Stmt visit_for(const Stmt& s) override {
    if (mode_ == Mode::kSearch && found) return s;
    ctx_.loops.push_back({s->loop_var->var_id, s->min, s->extent});
    Stmt r = StmtMutator::visit_for(s);
    ctx_.loops.pop_back();
    return r;
  }

  Stmt visit_let_stmt(const Stmt& s) override {
    ctx_.opaque.push_back(s->let_var->var_id);
    Stmt r = StmtMutator::visit_let_stmt(s);
    ctx_.opaque.pop_back();
    return r;
  }

  // A select may sit inside a let expression whose variable its condition reads.
  tir::Expr visit_let_expr(const tir::Expr& e) override {
    ctx_.opaque.push_back(arith::Var(e->let_var).id());
    tir::Expr r = StmtMutator::visit_let_expr(e);
    ctx_.opaque.pop_back();
    return r;
  }

  Stmt visit_if(const Stmt& s) override {
    if (mode_ == Mode::kSearch && found) return s;
    std::optional<GuardRange> g = analyze(s->condition, v_, ctx_, an_);
    if (mode_ == Mode::kSearch) {
      if (g) {
        found = g;
        return s;
      }
      return StmtMutator::visit_if(s);
    }
    if (!g || !same_range(*g, *target_)) return StmtMutator::visit_if(s);
    if (mode_ == Mode::kMain) {
      Stmt then_case = mutate_stmt(s->then_case);
      if (g->other_atoms.empty()) return then_case;
      return make_if(conjunction(g->other_atoms), then_case, mutate_stmt(s->else_case));
    }
    if (!g->exact) return StmtMutator::visit_if(s);
    return s->else_case.defined() ? mutate_stmt(s->else_case) : make_nop();
  }

  // A select whose condition is an index condition is a guard too (a padded copy's
  // `inside ? X[clamped] : 0`): the main part takes its first value, an exact outside part
  // its second. A vectorized select stays a select: it is already branch-free.
  tir::Expr visit_select(const tir::Expr& e) override {
    if (mode_ == Mode::kSearch && found) return e;
    const tir::Expr& c = e->operands[0];
    std::optional<GuardRange> g;
    if (c.kind() == tir::ExprKind::kIndexValue && c.type().lanes == 1) {
      g = analyze(c->index, v_, ctx_, an_);
    }
    if (mode_ == Mode::kSearch) {
      if (g) {
        found = g;
        return e;
      }
      return StmtMutator::visit_select(e);
    }
    if (!g || !same_range(*g, *target_)) return StmtMutator::visit_select(e);
    if (mode_ == Mode::kMain) {
      tir::Expr a = mutate_expr(e->operands[1]);
      if (g->other_atoms.empty()) return a;
      return select(index_value(conjunction(g->other_atoms), c.type()), a,
                    mutate_expr(e->operands[2]));
    }
    if (!g->exact) return StmtMutator::visit_select(e);
    return mutate_expr(e->operands[2]);
  }

 private:
  arith::VarId v_;
  const arith::Analyzer& an_;
  Mode mode_;
  const GuardRange* target_;
  Context ctx_;
};

class Partitioner : public StmtMutator {
 public:
  explicit Partitioner(const PrimFunc& f) {
    for (const BufferRef& p : f.params) {
      for (const auto& d : p->shape()) {
        if (d.kind() == arith::ExprKind::kVar) an_.bind(arith::Var(d), 0, arith::kPosInf);
      }
    }
  }

 protected:
  Stmt visit_for(const Stmt& s) override {
    if (s->for_kind == ForKind::kGpuBlock || s->for_kind == ForKind::kGpuThread) {
      return recurse(s, s->min, s->extent, s->body);
    }
    arith::Var v(s->loop_var);
    GuardWalker search(v.id(), an_, GuardWalker::Mode::kSearch);
    search.mutate_stmt(s->body);
    if (!search.found) return recurse(s, s->min, s->extent, s->body);
    const GuardRange& g = *search.found;

    // lo = clamp(lower, m, end), hi = clamp(upper, lo, end); clamps that provably change
    // nothing are left out, which keeps the bounds readable and the analyzer effective.
    Expr m = s->min;
    Expr end = an_.simplify(s->min + s->extent);
    Expr lo = g.lower.defined() ? clamp(g.lower, m, end) : m;
    Expr hi = g.upper.defined() ? clamp(g.upper, lo, end) : end;
    // An unrolled loop of constant range becomes copies at constant values, which index a
    // register tile. Split at a symbolic point, a part starting there keeps a symbolic
    // variable (a tile's last columns as `for (c, n floordiv 16 - io*2, ...)`), and the
    // tile goes to memory: such a loop keeps its guard for the loops inside to partition.
    if (s->for_kind == ForKind::kUnrolled && m.is_int_imm() && s->extent.is_int_imm()) {
      const bool symbolic_main = !lo.is_int_imm();
      const bool symbolic_tail = g.upper.defined() && !g.exact && !hi.is_int_imm();
      if (symbolic_main || symbolic_tail) return recurse(s, s->min, s->extent, s->body);
    }

    GuardWalker main_walker(v.id(), an_, GuardWalker::Mode::kMain, &g);
    GuardWalker outside_walker(v.id(), an_, GuardWalker::Mode::kOutside, &g);
    Stmt main_body = main_walker.mutate_stmt(s->body);
    Stmt outside_body = outside_walker.mutate_stmt(s->body);

    std::vector<Stmt> parts;
    if (g.lower.defined()) parts.push_back(recurse(s, m, an_.simplify(lo - m), outside_body));
    // The main part may hold guards of other ranges (a split's tail guard around a padded
    // copy's select): it is partitioned again. Each round removes one range, so it ends.
    Expr main_extent = an_.simplify(hi - lo);
    Facts outer = facts_.count(v.id()) ? facts_[v.id()] : Facts{};
    facts_[v.id()] = {tighter(outer.lower, g.lower, true), tighter(outer.upper, g.upper, false)};
    parts.push_back(
        visit_for(make_for(v, lo, main_extent, s->for_kind, main_body, s->thread_axis)));
    if (outer.lower.defined() || outer.upper.defined()) {
      facts_[v.id()] = outer;
    } else {
      facts_.erase(v.id());
    }
    if (g.upper.defined()) parts.push_back(recurse(s, hi, an_.simplify(end - hi), outside_body));
    return make_seq(std::move(parts));
  }

 private:
  // a <= b for every value in scope. Adds one rule the simplifier lacks: floordiv by a
  // positive constant is monotonic (n floordiv 16 <= (n + 15) floordiv 16).
  bool provably_le(const Expr& a, const Expr& b) const {
    if (an_.can_prove(arith::le(a, b))) return true;
    if (a.kind() == arith::ExprKind::kFloorDiv && b.kind() == arith::ExprKind::kFloorDiv &&
        a.operand(1).is_int_imm() && a.operand(1).int_value() > 0 &&
        arith::structural_equal(a.operand(1), b.operand(1))) {
      return provably_le(a.operand(0), b.operand(0));
    }
    return false;
  }

  // The larger (want_max) or smaller of two optional bounds; undefined when both are.
  Expr tighter(const Expr& a, const Expr& b, bool want_max) const {
    if (!a.defined()) return b;
    if (!b.defined()) return a;
    if (provably_le(a, b)) return want_max ? b : a;
    if (provably_le(b, a)) return want_max ? a : b;
    return an_.simplify(want_max ? arith::max(a, b) : arith::min(a, b));
  }

  Expr clamp(const Expr& x, const Expr& lo, const Expr& hi) const {
    Expr r = an_.simplify(x);
    if (!provably_le(lo, r)) r = an_.simplify(arith::max(r, lo));
    if (!provably_le(r, hi)) r = an_.simplify(arith::min(r, hi));
    return r;
  }

  // Rebuilds loop s over [min, min + extent) with `body`, partitioning inside it, of s's
  // kind. An unrolled one stays unrolled: specialize_extents may give it constant extents,
  // and unroll makes serial what is left symbolic. A vectorized one stays vectorized:
  // vectorize makes a symbolic remainder one masked vector iteration.
  Stmt recurse(const Stmt& s, const Expr& min, const Expr& extent, const Stmt& body) {
    bool gpu = s->for_kind == ForKind::kGpuBlock || s->for_kind == ForKind::kGpuThread;
    if (!gpu && an_.const_bounds(extent).max <= 0) return make_nop();
    const ForKind kind = s->for_kind;
    arith::Var v(s->loop_var);
    Expr lower = min, upper = an_.simplify(min + extent - arith::make_int(1));
    auto f = facts_.find(v.id());
    if (f != facts_.end()) {
      // An iteration that runs satisfies both the loop's range and the facts; the facts are
      // the simpler bounds to prove with (the range is clamped by min / max).
      if (f->second.lower.defined()) lower = f->second.lower;
      if (f->second.upper.defined()) upper = an_.simplify(f->second.upper - arith::make_int(1));
      // Contradicting facts: the guards never all hold, so the piece never runs.
      if (!gpu && an_.const_bounds(lower).min > an_.const_bounds(upper).max) return make_nop();
    }
    if (lower.is_int_imm() && upper.is_int_imm()) {
      an_.bind(v, lower.int_value(), upper.int_value());
    } else {
      an_.bind(v, lower, upper);
    }
    Stmt new_body = mutate_stmt(body);
    an_.unbind(v);
    if (!gpu && new_body.kind() == StmtKind::kNop) return new_body;
    if (min.get() == s->min.get() && extent.get() == s->extent.get() &&
        new_body.get() == s->body.get() && kind == s->for_kind) {
      return s;
    }
    return make_for(v, min, extent, kind, new_body, s->thread_axis);
  }

  // Inside a main part: the guards removed from it hold, so indices there are simplified
  // with them (a padded copy's clamps vanish). Elsewhere indices are left to simplify.
  Expr mutate_index(const Expr& e) override { return facts_.empty() ? e : an_.simplify(e); }

  // What the guards of the main parts being rebuilt say about their loop variables:
  // lower <= v < upper, either side undefined when unknown. The loop's own range may be
  // wider (lo and hi are clamped into the loop); an iteration that runs satisfies both.
  struct Facts {
    Expr lower, upper;
  };
  std::unordered_map<arith::VarId, Facts> facts_;
  arith::Analyzer an_;
};

}  // namespace

PrimFunc loop_partition(PrimFunc f) {
  Partitioner p(f);
  f.body = p.mutate_stmt(f.body);
  return f;
}

}  // namespace dynvm::tir
