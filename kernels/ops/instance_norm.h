// ONNX InstanceNormalization: each (n, c) slice of an [N, C, D1, ...] float tensor
// normalized over its spatial dims, y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c]
// (var the biased variance). Two reduction stages ([N, C] mean, then variance about it, so
// large offsets lose no precision), then one injective pass. Symbolic dims allowed.
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

// x: [N, C, D1, ...] (rank >= 3); scale and bias: [C], x's dtype.
OpInstance instance_norm(const TensorType& x, const TensorType& scale, const TensorType& bias,
                         double epsilon);

}  // namespace dynvm::ops
