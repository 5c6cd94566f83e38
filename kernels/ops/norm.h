// Normalisations: softmax and log_softmax over one axis (ONNX opset 13; numerically
// stable: the row max is subtracted before exp), and layer_norm over the trailing axes from
// `axis` with scale, optional bias and epsilon, and optionally its Mean / InvStdDev outputs
// (ONNX LayerNormalization, opset 17).
// Knobs: `vector_width` and `parallel` (schedules.h) for every stage.
#pragma once

#include <optional>

#include "kernels/ops/op.h"

namespace dynvm::ops {

OpInstance softmax(const TensorType& x, int64_t axis = -1);
OpInstance log_softmax(const TensorType& x, int64_t axis = -1);
// scale (and bias) broadcast against x.shape[axis:] (unidirectional). num_outputs 2 adds
// ONNX's Mean, 3 also InvStdDev = 1 / sqrt(variance + epsilon): f32 (stash_type 1), x's
// shape with the dims from `axis` on set to 1.
OpInstance layer_norm(const TensorType& x, const TensorType& scale,
                      const std::optional<TensorType>& bias, int64_t axis = -1,
                      double epsilon = 1e-5, size_t num_outputs = 1);

}  // namespace dynvm::ops
