// CumSum (see cumsum.h) as a te::scan along the axis.
#include "kernels/ops/cumsum.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {

OpInstance cumsum(const TensorType& x, int64_t axis_attr, bool exclusive, bool reverse) {
  auto rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) user_error("cumsum: the input must have rank >= 1");
  if (axis_attr < -rank || axis_attr >= rank) {
    user_error("cumsum: axis ", axis_attr, " is out of range for rank ", rank);
  }
  if (!vm::is_floating(x.dtype) && !vm::is_integer(x.dtype)) {
    user_error("cumsum: needs numeric data, got ", tir::to_string(tir::DataType{x.dtype, 1}));
  }
  auto axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + rank : axis_attr);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  // Exclusive: the first element is 0 and element k adds x at k's predecessor (k - 1, or
  // k + 1 when reverse); update only runs past the first element, so that read is in range.
  te::TensorRef out = te::scan(
      "Y", x.shape, axis, reverse,
      [&](const te::Indices& i) {
        tir::Expr v = te::read(in, {i.begin(), i.end()});
        return exclusive ? tir::make_const(v.type(), 0) : v;
      },
      [&](const te::Indices& i, tir::Expr prev) {
        std::vector<arith::Expr> at(i.begin(), i.end());
        if (exclusive) at[axis] = reverse ? at[axis] + arith::Expr(1) : at[axis] - arith::Expr(1);
        return prev + te::read(in, at);
      });
  OpInstance op;
  op.name = "cumsum_" + tir::to_string(tir::DataType{x.dtype, 1});
  op.inputs = {in};
  op.outputs = {out};
  // The parallel knob (and its size-dependent default) of the shared templates.
  op.knobs = {reduction_knobs(x.shape).front()};
  op.schedule = [specs = op.knobs, out, axis](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({out});
    if (knob_value(specs, knobs, "parallel") != 0 && axis > 0) {
      te::Stage& stage = s[out];
      te::IterVarRef fused = stage.axis(0);
      for (size_t d = 1; d < axis; ++d) fused = stage.fuse(fused, stage.axis(d));
      stage.parallel(fused);
    }
    return s;
  };
  return op;
}

}  // namespace dynvm::ops
