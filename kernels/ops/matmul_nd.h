// numpy / ONNX MatMul for any ranks: 1-D operands are promoted ([K] -> [1, K] on the left,
// [K, 1] on the right) and the added dim dropped from the result; batch dims (all but the
// last two) broadcast numpy-style. The tiled matmul / batch_matmul (matmul.h) cover the
// hot 2-D and 3-D cases; this builder is the general fallback (vector-matrix products in
// recurrences, 4-D attention scores), scheduled with the reduction template: output
// elements in parallel, the K reduction inner.
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

OpInstance matmul_nd(const TensorType& a, const TensorType& b);

}  // namespace dynvm::ops
