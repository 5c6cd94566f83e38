// sin, cos, hard_swish and prelu (see activation.h).
#include "kernels/ops/activation.h"

#include "kernels/ops/elementwise.h"
#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

// `math` over x (and a slope broadcast to it); floating-point inputs only.
OpInstance over_x(std::string name, const std::vector<TensorType>& ins,
                  const std::function<tir::Expr(const std::vector<tir::Expr>&)>& math) {
  const TensorType& x = ins[0];
  if (!vm::is_floating(x.dtype)) {
    user_error(name, " needs a floating-point input, got ", dtype_suffix(x.dtype));
  }
  return elementwise_map(name + "_" + dtype_suffix(x.dtype), ins, math);
}

tir::Expr c(const tir::Expr& like, double v) { return tir::make_const(like.type(), v); }

}  // namespace

OpInstance activation(ActivationOp op, const TensorType& x) {
  switch (op) {
    case ActivationOp::kSin:
      return over_x("sin", {x},
                    [](const auto& v) { return tir::call(tir::Intrinsic::kSin, v[0]); });
    case ActivationOp::kCos:
      return over_x("cos", {x},
                    [](const auto& v) { return tir::call(tir::Intrinsic::kCos, v[0]); });
    case ActivationOp::kHardSwish:
      return over_x("hard_swish", {x}, [](const auto& v) {
        const tir::Expr& e = v[0];
        tir::Expr gate = tir::max(tir::min(e * c(e, 1.0 / 6) + c(e, 0.5), c(e, 1)), c(e, 0));
        return e * gate;
      });
  }
  user_error("activation: unknown op");
}

OpInstance prelu(const TensorType& x, const TensorType& slope) {
  if (slope.dtype != x.dtype) user_error("prelu: slope and x have different dtypes");
  std::vector<arith::Expr> shape = broadcast_shape({x.shape, slope.shape});
  if (shape.size() != x.shape.size()) user_error("prelu: slope has a higher rank than x");
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k].is_int_imm() && x.shape[k].is_int_imm() &&
        shape[k].int_value() != x.shape[k].int_value()) {
      user_error("prelu: slope does not broadcast to x (unidirectionally)");
    }
  }
  return over_x("prelu", {x, slope}, [](const auto& v) {
    return tir::select(tir::compare(tir::CompareOp::kLt, v[0], c(v[0], 0)), v[0] * v[1], v[0]);
  });
}

}  // namespace dynvm::ops
