// BatchNormalization at inference (see batch_norm.h).
#include "kernels/ops/batch_norm.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {

OpInstance batch_norm(const TensorType& x, const TensorType& scale, const TensorType& bias,
                      const TensorType& mean, const TensorType& var, double epsilon) {
  if (!vm::is_floating(x.dtype)) user_error("batch_norm needs a floating-point input");
  if (x.shape.size() < 2) user_error("batch_norm: the input must be [N, C, ...]");
  for (const TensorType* p : {&scale, &bias, &mean, &var}) {
    if (p->dtype != x.dtype) user_error("batch_norm: scale, bias, mean and var need x's dtype");
    if (p->shape.size() != 1) user_error("batch_norm: scale, bias, mean and var must be 1-D");
  }
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef sc = te::placeholder("Scale", scale.shape, scale.dtype);
  te::TensorRef bi = te::placeholder("Bias", bias.shape, bias.dtype);
  te::TensorRef mu = te::placeholder("Mean", mean.shape, mean.dtype);
  te::TensorRef va = te::placeholder("Var", var.shape, var.dtype);
  te::TensorRef out = te::compute("Y", x.shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> all(i.begin(), i.end());
    std::vector<arith::Expr> c{arith::Expr(i[1])};
    tir::Expr v = te::read(va, c);
    tir::Expr inv = tir::call(tir::Intrinsic::kSqrt, v + tir::make_const(v.type(), epsilon));
    return (te::read(in, all) - te::read(mu, c)) / inv * te::read(sc, c) + te::read(bi, c);
  });
  return injective_op("batch_norm_" + tir::to_string(tir::DataType{x.dtype, 1}),
                      {in, sc, bi, mu, va}, out);
}

}  // namespace dynvm::ops
