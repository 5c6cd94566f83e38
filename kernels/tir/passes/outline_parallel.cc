// outline_parallel: each outermost kParallel loop becomes a kParallelCall in the entry and a
// ParallelRegion that code generation emits as a separate function called back by the
// runtime's parallel_for over chunks [begin, end) of iterations. The region's loop variable
// runs over [0, extent) (a loop with min m is rebased: the body sees m + lv); everything
// else the body needs from the entry — free index variables and buffers — is listed as
// captured, for the closure. Parallel loops nested inside a region become serial: the
// runtime's parallel_for does not nest.
#include <string>
#include <utility>

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
