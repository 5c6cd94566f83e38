// Reductions over a list of axes (ONNX Reduce*): sum, mean, max, min, prod, l1, l2,
// log_sum_exp, and argmax / argmin over one axis (first or last occurrence, int64 indices).
// Axes may be negative; an empty list reduces every axis. keepdims keeps reduced dims as 1.
// The reducing stage uses the reduction template (knob `parallel`: fused data axes in
// parallel); a finishing step (mean's divide, l2's sqrt) is inlined into the output.
// A float reduction over the innermost axis (that axis at least one vector wide, or
// symbolic) runs in vector lanes: a [outputs..., 16] stage accumulates every 16th element of
// that axis per lane in one zmm (the tail lanes start from the combiner's identity: 0, 1,
// -inf, +inf), computed at each output, which then combines its 16 lanes. Integer
// reductions, argmax / argmin and those keeping the innermost axis stay scalar.
#pragma once

#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

enum class ReduceKind : uint8_t {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kL1,
  kL2,
  kLogSumExp,
  kSumSquare,
  kLogSum
};
const char* reduce_kind_name(ReduceKind kind);

OpInstance reduce(ReduceKind kind, const TensorType& x, std::vector<int64_t> axes,
                  bool keepdims = true);
// A reduction whose axes are known only at run time, in keepdims form: `out_shape` has x's
// rank, each dim a symbol the kernel binds from its output, 1 where reduced and x's dim
// elsewhere; output element o reduces x[o + k] over k_d < x_d / max(out_d, 1). Sum, max, min,
// prod, l1, sum_square and mean.
OpInstance reduce_to(ReduceKind kind, const TensorType& x,
                     const std::vector<arith::Expr>& out_shape);
// Ties resolve to the first occurrence, or with select_last_index to the last one.
OpInstance argmax(const TensorType& x, int64_t axis, bool keepdims = true,
                  bool select_last_index = false);
OpInstance argmin(const TensorType& x, int64_t axis, bool keepdims = true,
                  bool select_last_index = false);

// The axes normalised to [0, rank), sorted, unique (all axes when empty); UserError when
// out of range.
std::vector<size_t> normalize_axes(std::vector<int64_t> axes, size_t rank);

}  // namespace dynvm::ops
