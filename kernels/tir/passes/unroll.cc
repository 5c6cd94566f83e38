// unroll: replicates the body of each kUnrolled loop once per iteration with the loop
// variable replaced by its value (min + k), so that LLVM sees straight-line code it can
// schedule and keep in registers (register tiles of a matmul). Loops whose extent is not a
// constant, or larger than kMaxUnrollExtent, become serial loops instead: unrolling them would
// be impossible or bloat the code for no gain. Inner loops are unrolled first.
#include <utility>
#include <vector>

#include "kernels/arith/simplify.h"
#include "kernels/tir/functor.h"
#include "kernels/tir/passes/passes.h"

namespace dynvm::tir {
namespace {

class Unroller : public StmtMutator {
 protected:
  Stmt visit_for(const Stmt& s) override {
    Stmt body = mutate_stmt(s->body);
    arith::Var v(s->loop_var);
    if (s->for_kind != ForKind::kUnrolled) {
      if (body.get() == s->body.get()) return s;
      return make_for(v, s->min, s->extent, s->for_kind, body, s->thread_axis);
    }
    arith::Expr extent = arith::simplify(s->extent);
    if (!extent.is_int_imm() || extent.int_value() > kMaxUnrollExtent) {
      return make_for(v, s->min, s->extent, ForKind::kSerial, body);
    }
    std::vector<Stmt> copies;
    for (int64_t k = 0; k < extent.int_value(); ++k) {
      arith::Expr value = arith::simplify(s->min + arith::make_int(k));
      copies.push_back(substitute(body, VarMap{{v.id(), value}}));
    }
    return make_seq(std::move(copies));
  }
};

}  // namespace

PrimFunc unroll(PrimFunc f) {
  Unroller u;
  f.body = u.mutate_stmt(f.body);
  return f;
}

}  // namespace dynvm::tir
