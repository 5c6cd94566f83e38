// Pools over the channel-blocked layout (see pool_blocked.h).
#include "kernels/ops/pool_blocked.h"

#include <cmath>
#include <string>

#include "kernels/ops/conv_blocked.h"
#include "kernels/ops/schedules.h"
#include "kernels/ops/window.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using te::Indices;
using te::TensorRef;

enum class Kind : uint8_t { kMax, kAverage };

OpInstance pool_blocked(Kind kind, const TensorType& xb, const PoolAttrs& attrs) {
  const std::string op = kind == Kind::kMax ? "max_pool_blocked" : "average_pool_blocked";
  const BlockedShape g = blocked_shape(xb, op);
  const auto& s = xb.shape;
  if (attrs.kernel_shape.size() != 2) user_error(op, ": a 2-D kernel_shape is required");
  if (attrs.ceil_mode) user_error(op, ": ceil_mode is not supported");
  if (kind == Kind::kMax && attrs.count_include_pad) {
    user_error(op, ": count_include_pad is for average pool");
  }
  Window win{attrs.kernel_shape, spatial_values(attrs.strides, 2, 1, 1, op, "strides"),
             spatial_values(attrs.pads, 4, 0, 0, op, "pads"),
             spatial_values(attrs.dilations, 2, 1, 1, op, "dilations")};
  for (int64_t k : win.kernel) {
    if (k < 1) user_error(op, ": kernel sizes must be >= 1, got ", k);
  }
  std::vector<arith::Expr> out{s[0], s[1]};
  for (size_t d = 0; d < 2; ++d) out.push_back(window_output_dim(s[2 + d], win, d));
  out.push_back(s[4]);
  check_output_dims(op, out);
  TensorRef X = te::placeholder("X", s, xb.dtype);
  const double pad = kind == Kind::kMax ? -INFINITY : 0.0;
  TensorRef Y = te::compute("Y", out, [&](const Indices& i) {
    tir::Expr y, count;
    for (int64_t r = 0; r < win.kernel[0]; ++r) {
      for (int64_t c = 0; c < win.kernel[1]; ++c) {
        tir::Expr v = window_tap(X, i, win, r, c, pad);
        y = !y.defined() ? v : kind == Kind::kMax ? tir::max(y, v) : y + v;
        if (kind == Kind::kMax || attrs.count_include_pad) continue;
        // The taps inside the input: a constant once loop_partition splits the borders off.
        tir::Expr one =
            tir::select(tir::index_value(window_tap_inside(X, i, win, r, c), tir::boolean()),
                        tir::make_const(v.type(), 1.0), tir::make_const(v.type(), 0.0));
        count = count.defined() ? count + one : one;
      }
    }
    if (kind == Kind::kMax) return y;
    if (!count.defined()) {
      count = tir::make_const(y.type(), static_cast<double>(win.kernel[0] * win.kernel[1]));
    }
    return y / count;
  });
  OpInstance inst;
  inst.name = op + "_" + std::to_string(win.kernel[0]) + "x" + std::to_string(win.kernel[1]) + "_" +
              dtype_suffix(xb.dtype);
  inst.inputs = {X};
  inst.outputs = {Y};
  inst.knobs = {reduction_knobs(out).front()};  // parallel
  inst.schedule = [Y, specs = inst.knobs, blocks = g.blocks](const KnobValues& knobs) {
    te::Schedule sch = te::create_schedule({Y});
    te::Stage& so = sch[Y];
    so.vectorize(so.axis(4));
    if (knob_value(specs, knobs, "parallel") != 0) {
      // As the blocked depthwise conv: few blocks run their rows in parallel.
      so.parallel(blocks < kManyChannelBlocks ? so.axis(2) : so.fuse(so.axis(0), so.axis(1)));
    }
    return sch;
  };
  return inst;
}

}  // namespace

OpInstance max_pool_blocked(const TensorType& xb, const PoolAttrs& attrs) {
  return pool_blocked(Kind::kMax, xb, attrs);
}

OpInstance average_pool_blocked(const TensorType& xb, const PoolAttrs& attrs) {
  return pool_blocked(Kind::kAverage, xb, attrs);
}

}  // namespace dynvm::ops
