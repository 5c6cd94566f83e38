// simplify: canonicalises every index expression with an arith::Analyzer that knows what
// holds in scope — each loop variable lies in [min, min + extent - 1], each symbolic dim of a
// parameter is >= 0 — and removes the structure that this knowledge makes dead: loops of
// extent 1 (their variable becomes the min), loops of extent <= 0, ifs whose condition is
// provably true or false, and allocations / loops left with an empty body. Last in the
// pipeline it also turns a serial loop of at most one iteration (a split's tail, as
// loop_partition leaves it) into an if around the body at the min: inner loops over what
// is left of a vector (`(w floordiv 32) - i.outer` full vectors) then have extent 0 and go.
// Not earlier: specialize_extents bounds a tail's extent by the loop's range. GPU-bound loops
// are never removed: the thread binding is part of their meaning.
#include <utility>

#include "kernels/arith/analyzer.h"
#include "kernels/tir/functor.h"
#include "kernels/tir/passes/passes.h"
#include "vm/error.h"

namespace dynvm::tir {
namespace {

bool is_gpu(ForKind k) { return k == ForKind::kGpuBlock || k == ForKind::kGpuThread; }

class Simplifier : public StmtMutator {
 public:
  Simplifier(const PrimFunc& f, bool single_iterations) : single_iterations_(single_iterations) {
    for (const BufferRef& p : f.params) {
      for (const auto& d : p->shape()) {
        if (d.kind() == arith::ExprKind::kVar) an_.bind(arith::Var(d), 0, arith::kPosInf);
      }
    }
  }

  arith::Expr mutate_index(const arith::Expr& e) override { return an_.simplify(e); }

 protected:
  Stmt visit_for(const Stmt& s) override {
    arith::Expr min = an_.simplify(s->min);
    arith::Expr extent = an_.simplify(s->extent);
    bool gpu = is_gpu(s->for_kind);
    if (!gpu && an_.const_bounds(extent).max <= 0) return make_nop();
    arith::Var var(s->loop_var);
    if (!gpu && extent.is_int_imm() && extent.int_value() == 1) {
      return mutate_stmt(substitute(s->body, VarMap{{var.id(), min}}));
    }
    if (single_iterations_ && s->for_kind == ForKind::kSerial && !extent.is_int_imm() &&
        an_.can_prove(arith::le(extent, arith::make_int(1)))) {
      // At most one iteration (a partition's tail of a split loop): the body at the min,
      // where its indices and inner extents simplify with the variable gone.
      Stmt body = mutate_stmt(substitute(s->body, VarMap{{var.id(), min}}));
      if (body.kind() == StmtKind::kNop) return body;
      return make_if(an_.simplify(arith::ge(extent, arith::make_int(1))), body);
    }
    bind_loop_var(var, min, extent);
    Stmt body = mutate_stmt(s->body);
    an_.unbind(var);
    if (!gpu && body.kind() == StmtKind::kNop) return body;
    if (min.get() == s->min.get() && extent.get() == s->extent.get() &&
        body.get() == s->body.get()) {
      return s;
    }
    return make_for(var, min, extent, s->for_kind, body, s->thread_axis);
  }

  Stmt visit_if(const Stmt& s) override {
    arith::Expr cond = an_.simplify(s->condition);
    if (an_.can_prove(cond)) return mutate_stmt(s->then_case);
    if (an_.can_prove(arith::logical_not(cond))) {
      return s->else_case.defined() ? mutate_stmt(s->else_case) : make_nop();
    }
    Stmt then_case = mutate_stmt(s->then_case);
    Stmt else_case = mutate_stmt(s->else_case);
    if (else_case.defined() && else_case.kind() == StmtKind::kNop) else_case = Stmt();
    if (then_case.kind() == StmtKind::kNop && !else_case.defined()) return then_case;
    return make_if(cond, then_case, else_case);
  }

  Stmt visit_allocate(const Stmt& s) override {
    Stmt body = mutate_stmt(s->body);
    if (body.kind() == StmtKind::kNop) return body;
    return body.get() == s->body.get() ? s : make_allocate(s->buffer, body);
  }

  Expr visit_index_value(const Expr& e) override {
    Expr r = StmtMutator::visit_index_value(e);
    if (r.kind() == ExprKind::kIndexValue && r.type().lanes == 1) {
      const arith::Expr& i = r->index;
      if (i.is_int_imm()) return make_const_int(r.type(), i.int_value());
      if (i.kind() == arith::ExprKind::kBoolImm) return make_const_int(r.type(), i->value);
    }
    return r;
  }

 private:
  void bind_loop_var(const arith::Var& var, const arith::Expr& min, const arith::Expr& extent) {
    if (min.is_int_imm() && extent.is_int_imm()) {
      an_.bind(var, min.int_value(), min.int_value() + extent.int_value() - 1);
    } else {
      an_.bind(var, min, an_.simplify(min + extent - arith::make_int(1)));
    }
  }

  arith::Analyzer an_;
  bool single_iterations_;
};

}  // namespace

PrimFunc simplify(PrimFunc f, bool single_iterations) {
  Simplifier s(f, single_iterations);
  f.body = s.mutate_stmt(f.body);
  return f;
}

PrimFunc simplify(PrimFunc f) { return simplify(std::move(f), false); }

}  // namespace dynvm::tir
