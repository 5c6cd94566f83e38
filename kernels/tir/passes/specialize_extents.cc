// specialize_extents: gives each unrolled loop whose extent is symbolic but takes only a few
// values one copy per value. Loop partition leaves the remainder of a split as a loop of
// extent `m - io*8` (0..7); unroll cannot replicate it, so it stays a runtime loop and LLVM
// keeps the tile it works on (a matmul's register accumulators) in memory. This pass finds
// such an extent e and emits
//     if (e == 1) S[e := 1] else if (e == 2) S[e := 2] ... else S
// where S[e := c] is S with every loop whose extent is e given the extent c; unroll then
// replicates those loops and the tile stays in registers, as in a static-shape kernel.
//
// Which loops: kUnrolled loops (the schedule asked for registers / straight-line code) whose
// extent is not a constant. Which values: 1 up to the extent's upper bound where the dispatch
// goes (loop ranges bound, symbolic dims >= 0; an extent affine in the enclosing loops is
// bounded at their ends, `c * (y floordiv c)` read as `y - y floormod c`). Values <= 0 (loops
// that do not run) and any the bounds do not exclude take the final `else S`: the original,
// unspecialized loops, which unroll makes serial. It is left out when the bounds prove that
// e takes no other value.
//
// Where the dispatch goes: as high as it can without duplicating unrelated code. Starting
// from where all of e's variables are bound, it descends through a sequence (or if) that has
// only one part mentioning e and through parallel / GPU loops, and stops at the first other
// statement: a loop that does not depend on e (hoisting the test out of it), an allocation,
// a let, or the sequence whose parts use e. So the three row loops of a matmul tile (init,
// update inside the k loop, store) share one dispatch, outside the tile's column loop.
//
// Code size: `max_copies` caps how many copies of one statement the pass may make (nested
// dispatches multiply); a dispatch that would exceed it is not made. Each copy runs only when
// e equals its value; the bounds matter only to leave out the fallback, and every rule that
// derives them is exact (interval bounds, extremes of affine forms, floor division identity).
#include <algorithm>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kernels/tir/functor.h"
#include "kernels/tir/loop_bounds.h"
#include "kernels/tir/passes/passes.h"

namespace dynvm::tir {
namespace {

bool is_candidate_loop(const Stmt& s) {
  return s.kind() == StmtKind::kFor && s->for_kind == ForKind::kUnrolled && !s->extent.is_int_imm();
}

bool has_loop_with_extent(const Stmt& s, const arith::Expr& e) {
  bool found = false;
  for_each_stmt(s, [&](const Stmt& st) {
    if (!found && is_candidate_loop(st)) found = arith::structural_equal(st->extent, e);
  });
  return found;
}

// s with every loop of extent e given the extent c.
class ExtentReplacer : public StmtMutator {
 public:
  ExtentReplacer(arith::Expr e, int64_t c) : e_(std::move(e)), c_(c) {}

 protected:
  Stmt visit_for(const Stmt& s) override {
    Stmt body = mutate_stmt(s->body);
    if (!arith::structural_equal(s->extent, e_)) {
      if (body.get() == s->body.get()) return s;
      return make_for(arith::Var(s->loop_var), s->min, s->extent, s->for_kind, body,
                      s->thread_axis);
    }
    return make_for(arith::Var(s->loop_var), s->min, arith::make_int(c_), s->for_kind, body,
                    s->thread_axis);
  }

 private:
  arith::Expr e_;
  int64_t c_;
};

// The values a dispatch on e covers: [lo, hi]; exhaustive when e takes no other value.
struct ValueRange {
  int64_t lo;
  int64_t hi;
  bool exhaustive;
  int64_t copies() const { return hi - lo + 1 + (exhaustive ? 0 : 1); }
};

class ExtentSpecializer : public StmtMutator {
 public:
  ExtentSpecializer(const PrimFunc& f, int64_t max_copies) : bounds_(f), budget_(max_copies) {
    for (const BufferRef& p : f.params) {
      for (const auto& d : p->shape()) {
        for_each_var(d, [&](const arith::Expr& v) { in_scope_.insert(v->var_id); });
      }
    }
  }

 protected:
  Stmt visit_for(const Stmt& s) override {
    if (auto d = dispatch(s)) return *d;
    bounds_.enter(s);
    in_scope_.insert(s->loop_var->var_id);
    Stmt r = StmtMutator::visit_for(s);
    in_scope_.erase(s->loop_var->var_id);
    bounds_.leave(s);
    return r;
  }

  Stmt visit_let_stmt(const Stmt& s) override {
    if (auto d = dispatch(s)) return *d;
    in_scope_.insert(s->let_var->var_id);
    Stmt r = StmtMutator::visit_let_stmt(s);
    in_scope_.erase(s->let_var->var_id);
    return r;
  }

  Stmt visit_seq(const Stmt& s) override {
    if (auto d = dispatch(s)) return *d;
    return StmtMutator::visit_seq(s);
  }

  Stmt visit_if(const Stmt& s) override {
    if (auto d = dispatch(s)) return *d;
    return StmtMutator::visit_if(s);
  }

  Stmt visit_allocate(const Stmt& s) override {
    if (auto d = dispatch(s)) return *d;
    return StmtMutator::visit_allocate(s);
  }

 private:
  // The dispatch chain for s, when s is where a dispatch on some extent goes.
  std::optional<Stmt> dispatch(const Stmt& s) {
    std::vector<arith::Expr> extents = candidate_extents(s);
    for (const arith::Expr& e : extents) {
      if (!is_dispatch_point(s, e)) continue;
      std::optional<ValueRange> values = value_range(e);
      if (!values || values->copies() > budget_) continue;
      return make_chain(s, e, *values);
    }
    return std::nullopt;
  }

  // Extents of candidate loops in s whose variables are all bound outside s, distinct, in
  // first-use order; those already dispatched on (the fallback of a chain) are skipped.
  std::vector<arith::Expr> candidate_extents(const Stmt& s) const {
    std::vector<arith::Expr> out;
    for_each_stmt(s, [&](const Stmt& st) {
      if (!is_candidate_loop(st)) return;
      const arith::Expr& e = st->extent;
      bool bound_outside = true;
      for_each_var(e, [&](const arith::Expr& v) {
        if (!in_scope_.count(v->var_id)) bound_outside = false;
      });
      if (!bound_outside || contains(out, e) || contains(done_, e)) return;
      out.push_back(e);
    });
    return out;
  }

  static bool contains(const std::vector<arith::Expr>& list, const arith::Expr& e) {
    for (const arith::Expr& x : list) {
      if (arith::structural_equal(x, e)) return true;
    }
    return false;
  }

  static bool is_dispatch_point(const Stmt& s, const arith::Expr& e) {
    switch (s.kind()) {
      case StmtKind::kSeq: {
        int parts = 0;
        for (const Stmt& c : s->seq) parts += has_loop_with_extent(c, e) ? 1 : 0;
        return parts >= 2;
      }
      case StmtKind::kIf:
        return s->else_case.defined() && has_loop_with_extent(s->then_case, e) &&
               has_loop_with_extent(s->else_case, e);
      case StmtKind::kFor:
        return s->for_kind != ForKind::kParallel && s->for_kind != ForKind::kGpuBlock &&
               s->for_kind != ForKind::kGpuThread;
      case StmtKind::kAllocate:
      case StmtKind::kLetIndex:
        return true;
      default:
        return false;
    }
  }

  std::optional<ValueRange> value_range(const arith::Expr& e) const {
    arith::Bounds b = bounds_.range(e);
    if (b.max == arith::kPosInf || b.max < 1) return std::nullopt;
    int64_t lo = std::max<int64_t>(b.min, 1);
    if (lo > b.max) return std::nullopt;
    return ValueRange{lo, b.max, b.min >= 1};
  }

  Stmt make_chain(const Stmt& s, const arith::Expr& e, const ValueRange& values) {
    const int64_t saved_budget = budget_;
    budget_ /= values.copies();
    // The fallback: s itself, where e is no longer a candidate.
    Stmt chain;
    if (!values.exhaustive) {
      done_.push_back(e);
      chain = mutate_stmt(s);
      done_.pop_back();
    }
    for (int64_t c = values.hi; c >= values.lo; --c) {
      Stmt copy = mutate_stmt(ExtentReplacer(e, c).mutate_stmt(s));
      chain = chain.defined() ? make_if(arith::eq(e, arith::make_int(c)), copy, chain) : copy;
    }
    budget_ = saved_budget;
    return chain;
  }

  LoopBounds bounds_;
  std::unordered_set<arith::VarId> in_scope_;
  std::vector<arith::Expr> done_;
  int64_t budget_;
};

}  // namespace

PrimFunc specialize_extents(PrimFunc f, int64_t max_copies) {
  ExtentSpecializer s(f, max_copies);
  f.body = s.mutate_stmt(f.body);
  return f;
}

}  // namespace dynvm::tir
