// ONNX TopK: the k largest (or smallest) elements along one axis, sorted, ties to the lower
// index (as ONNX Runtime), and their int64 indices. k is the output's extent along the axis,
// a symbol the kernel binds from its outputs, so a k computed at run time needs nothing
// else. Each element's place in the order is counted (a reduction over its row), then
// output j's index is that of the element whose place is j, and its value is read there:
// O(n^2) per row, no data-dependent loop (an argsort of 8 rows of 1,000: 9.3 ms when the
// values were gathered by place too, 2.0 read at the indices).
// Scheduled with the reduction template (knobs `parallel`, `unroll`).
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

// `out_shape` is x's shape with dim `axis` replaced by k. Outputs: values (x's dtype),
// indices (i64).
OpInstance topk(const TensorType& x, int64_t axis, bool largest,
                const std::vector<arith::Expr>& out_shape);

}  // namespace dynvm::ops
