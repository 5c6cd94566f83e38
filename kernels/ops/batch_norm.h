// ONNX BatchNormalization at inference: per channel (axis 1),
//   Y = (X - mean) / sqrt(var + epsilon) * scale + bias
// with scale, bias, mean and var 1-D of the channel count. One elementwise output over X's
// (possibly symbolic) shape, scheduled with the injective template (schedules.h): knobs
// `vector_width` and `parallel`. The training mode (batch statistics, running-mean
// outputs) is not here.
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

// x: [N, C, ...] (rank >= 2, f32 / f64); scale, bias, mean, var: [C] of x's dtype.
OpInstance batch_norm(const TensorType& x, const TensorType& scale, const TensorType& bias,
                      const TensorType& mean, const TensorType& var, double epsilon = 1e-5);

}  // namespace dynvm::ops
