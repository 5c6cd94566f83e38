// EyeLike (see eye_like.h): the diagonal test is on indices, the value a select.
#include "kernels/ops/eye_like.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {

OpInstance eye_like(const std::vector<arith::Expr>& shape, vm::DType dtype, int64_t k) {
  if (shape.size() != 2) user_error("eye_like: the shape must be 2-D, got rank ", shape.size());
  const tir::DataType t{dtype, 1};
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    arith::Expr on_diagonal = arith::eq(arith::Expr(i[1]) - arith::Expr(i[0]), k);
    return tir::select(tir::index_value(on_diagonal, tir::boolean()), tir::make_const(t, 1),
                       tir::make_const(t, 0));
  });
  return injective_op("eye_like_" + tir::to_string(t), {}, out);
}

}  // namespace dynvm::ops
