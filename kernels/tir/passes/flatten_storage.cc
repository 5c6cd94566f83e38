// flatten_storage: every buffer access with one index per dim becomes an access with a single
// row-major flat index (sum of index * stride, the strides from Buffer::strides()), which is
// what code generation addresses memory with. Accesses that are already flat (one index:
// rank-1 buffers, and the vector accesses that vectorize emits) are left alone; a rank-0
// buffer's access becomes index 0. Buffers keep their shapes: allocation sizes come from them.
#include <utility>
#include <vector>

#include "kernels/arith/simplify.h"
#include "kernels/tir/functor.h"
#include "kernels/tir/passes/passes.h"

namespace dynvm::tir {
namespace {

// The flat index, or an empty vector when `indices` are already flat.
std::vector<arith::Expr> flatten(const Buffer& b, const std::vector<arith::Expr>& indices) {
  if (indices.size() == 1) return {};  // rank 1, or already flat
  std::vector<arith::Expr> strides = b.strides();
  arith::Expr flat = arith::make_int(0);
  for (size_t d = 0; d < indices.size(); ++d) flat = flat + indices[d] * strides[d];
  return {arith::simplify(flat)};
}

class Flattener : public StmtMutator {
 protected:
  Expr visit_buffer_load(const Expr& e) override {
    std::vector<arith::Expr> flat = flatten(*e->buffer, e->indices);
    if (flat.empty()) return StmtMutator::visit_buffer_load(e);
    return buffer_load(e->buffer, std::move(flat));
  }

  Stmt visit_store(const Stmt& s) override {
    std::vector<arith::Expr> flat = flatten(*s->buffer, s->indices);
    if (flat.empty()) return StmtMutator::visit_store(s);
    return make_store(s->buffer, std::move(flat), mutate_expr(s->value));
  }
};

}  // namespace

PrimFunc flatten_storage(PrimFunc f) {
  Flattener fl;
  f.body = fl.mutate_stmt(f.body);
  return f;
}

}  // namespace dynvm::tir
