// InstanceNormalization (see instance_norm.h).
#include "kernels/ops/instance_norm.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {

OpInstance instance_norm(const TensorType& x, const TensorType& scale, const TensorType& bias,
                         double epsilon) {
  if (!vm::is_floating(x.dtype)) user_error("instance_norm needs a floating-point input");
  if (x.shape.size() < 3) user_error("instance_norm: the input must be [N, C, D1, ...]");
  for (const TensorType* p : {&scale, &bias}) {
    if (p->dtype != x.dtype || p->shape.size() != 1) {
      user_error("instance_norm: scale and B must be 1-D of x's dtype");
    }
  }
  const tir::DataType t{x.dtype, 1};
  const std::vector<arith::Expr> spatial(x.shape.begin() + 2, x.shape.end());
  arith::Expr count(1);
  for (const arith::Expr& d : spatial) count = count * d;
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef sc = te::placeholder("Scale", {x.shape[1]}, x.dtype);
  te::TensorRef bi = te::placeholder("B", {x.shape[1]}, x.dtype);
  // A reduction over the spatial dims of f(x[n, c, ...]) divided by their count.
  auto spatial_mean = [&](const char* name,
                          const std::function<tir::Expr(tir::Expr, const te::Indices&)>& f) {
    return te::compute(name, {x.shape[0], x.shape[1]}, [&](const te::Indices& i) {
      std::vector<te::IterVar> axes;
      std::vector<arith::Expr> at{i[0], i[1]};
      for (size_t d = 0; d < spatial.size(); ++d) {
        axes.push_back(te::reduce_axis(spatial[d], "r" + std::to_string(d)));
        at.push_back(axes.back().var);
      }
      return te::sum(f(te::read(in, at), i) / tir::index_value(count, t), axes);
    });
  };
  te::TensorRef mean = spatial_mean("mean", [](tir::Expr v, const te::Indices&) { return v; });
  te::TensorRef var = spatial_mean("var", [&](tir::Expr v, const te::Indices& i) {
    tir::Expr d = v - te::read(mean, {i[0], i[1]});
    return d * d;
  });
  te::TensorRef out = te::compute("Y", x.shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> nc{i[0], i[1]};
    tir::Expr sd =
        tir::call(tir::Intrinsic::kSqrt, te::read(var, nc) + tir::make_const(t, epsilon));
    return (te::read(in, {i.begin(), i.end()}) - te::read(mean, nc)) / sd *
               te::read(sc, {arith::Expr(i[1])}) +
           te::read(bi, {arith::Expr(i[1])});
  });
  OpInstance op;
  op.name = "instance_norm_" + dtype_suffix(x.dtype);
  op.inputs = {in, sc, bi};
  op.outputs = {out};
  op.knobs = injective_knobs(x.shape);
  op.schedule = [specs = op.knobs, mean, var, out](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({out});
    const bool parallel = knob_value(specs, knobs, "parallel") != 0;
    schedule_reduction(s, mean, parallel);
    schedule_reduction(s, var, parallel);
    schedule_injective(s, out, knob_value(specs, knobs, "vector_width"), parallel);
    return s;
  };
  return op;
}

}  // namespace dynvm::ops
