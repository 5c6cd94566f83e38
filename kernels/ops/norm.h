// Normalisations: softmax and log_softmax over one axis (ONNX opset 13; numerically
// stable: the row max is subtracted before exp), and layer_norm over the trailing axes from
// `axis` with scale, optional bias and epsilon, and optionally its Mean / InvStdDev outputs
// (ONNX LayerNormalization, opset 17); hardmax over one axis (opset 13) and local response
// normalization across channels (ONNX LRN).
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

// ONNX Hardmax (opset 13): 1 where x is the first maximum along `axis`, 0 elsewhere; the
// argmax is a reduction stage, the output one compare per element.
OpInstance hardmax(const TensorType& x, int64_t axis = -1);
// ONNX LRN over dim 1 (channels) of an N x C x ... input:
//   y = x / (bias + alpha / size * sum of x^2 over channels c - (size-1)/2 .. c + size/2)^beta
// with the window clipped to [0, C). The windowed sum is a reduction stage of x's shape.
OpInstance lrn(const TensorType& x, int64_t size, double alpha = 1e-4, double beta = 0.75,
               double bias = 1.0);

}  // namespace dynvm::ops
