// outline_parallel: each outermost kParallel loop becomes a kParallelCall in the entry and a
// ParallelRegion that code generation emits as a separate function called back by the
// runtime's parallel_for over chunks [begin, end) of iterations. The region's loop variable
// runs over [0, extent) (a loop with min m is rebased: the body sees m + lv); everything
// else the body needs from the entry — free index variables and buffers — is listed as
// captured, for the closure. Parallel loops nested inside a region become serial: the
// runtime's parallel_for does not nest. Each region also gets an estimate of the stores one
// iteration runs (symbolic where the sizes are), from which the call's grain is computed
// so that small sizes run on one thread.
#include <string>
#include <utility>
#include <vector>

#include "kernels/arith/simplify.h"
#include "kernels/tir/functor.h"
#include "kernels/tir/passes/passes.h"
#include "vm/error.h"

namespace dynvm::tir {
namespace {

class Serializer : public StmtMutator {
 protected:
  Stmt visit_for(const Stmt& s) override {
    Stmt body = mutate_stmt(s->body);
    ForKind kind = s->for_kind == ForKind::kParallel ? ForKind::kSerial : s->for_kind;
    if (kind == s->for_kind && body.get() == s->body.get()) return s;
    return make_for(arith::Var(s->loop_var), s->min, s->extent, kind, body, s->thread_axis);
  }
};

// How many stores and loads one iteration of a region runs, as an expression of what the call site
// knows: an extent that depends on a variable bound inside the region (the region's own
// loop variable, an inner loop's, a let's) counts as kUnknownExtent. Both arms of an `if`
// count. A rough measure of work, what the call's grain is computed from.
class WorkCounter : public StmtMutator {
 public:
  explicit WorkCounter(const arith::Var& region_var) { bound_.push_back(region_var.id()); }
  arith::Expr total() const { return arith::simplify(total_); }

  static constexpr int64_t kUnknownExtent = 16;

 protected:
  Stmt visit_for(const Stmt& s) override {
    const arith::Expr saved = scale_;
    scale_ = scale_ * (depends_on_bound(s->extent) ? arith::make_int(kUnknownExtent) : s->extent);
    bound_.push_back(arith::Var(s->loop_var).id());
    mutate_stmt(s->body);
    bound_.pop_back();
    scale_ = saved;
    return s;
  }
  Stmt visit_let_stmt(const Stmt& s) override {
    bound_.push_back(arith::Var(s->let_var).id());
    mutate_stmt(s->body);
    bound_.pop_back();
    return s;
  }
  // A store and the loads of its value: a depthwise conv's output vector is one store of
  // 9 to 49 taps (counted as one, its kernels never split), an elementwise add's is three.
  Stmt visit_store(const Stmt& s) override {
    int64_t loads = 0;
    for_each_expr(s, [&](const Expr& e) { loads += e.kind() == ExprKind::kBufferLoad ? 1 : 0; });
    total_ = total_ + scale_ * (1 + loads);
    return s;
  }

 private:
  bool depends_on_bound(const arith::Expr& e) const {
    for (arith::VarId id : bound_) {
      if (arith::uses_var(e, id)) return true;
    }
    return false;
  }

  std::vector<arith::VarId> bound_;
  arith::Expr scale_ = arith::make_int(1);
  arith::Expr total_ = arith::make_int(0);
};

class Outliner : public StmtMutator {
 public:
  explicit Outliner(LoweredFunc& out) : out_(out) {}

 protected:
  Stmt visit_for(const Stmt& s) override {
    if (s->for_kind != ForKind::kParallel) return StmtMutator::visit_for(s);
    Serializer serializer;
    Stmt body = serializer.mutate_stmt(s->body);
    arith::Var v(s->loop_var);
    arith::Expr min = arith::simplify(s->min);
    arith::Var lv = v;
    if (!(min.is_int_imm() && min.int_value() == 0)) {
      lv = arith::Var(v.name());
      body = substitute(body, VarMap{{v.id(), arith::simplify(min + lv)}});
    }
    ParallelRegion r;
    r.name = str_cat(out_.func.name, "_parallel", out_.regions.size());
    r.loop_var = lv.expr();
    FreeVars fv = free_vars(body);
    for (const auto& var : fv.vars) {
      if (var->var_id != lv.id()) r.captured_vars.push_back(var);
    }
    r.captured_buffers = std::move(fv.buffers);
    WorkCounter work(lv);
    work.mutate_stmt(body);
    r.work_per_iteration = work.total();
    r.body = body;
    out_.regions.push_back(std::move(r));
    return make_parallel_call(out_.regions.size() - 1, s->extent);
  }

 private:
  LoweredFunc& out_;
};

}  // namespace

LoweredFunc outline_parallel(PrimFunc f) {
  LoweredFunc out;
  out.func = f;
  Outliner o(out);
  out.func.body = o.mutate_stmt(f.body);
  return out;
}

}  // namespace dynvm::tir
