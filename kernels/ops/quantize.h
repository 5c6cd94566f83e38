// Linear (de)quantization, ONNX QuantizeLinear and DequantizeLinear (opset 10..18 without
// saturate / block_size): a scale and an optional zero point, each a scalar (per tensor) or
// a 1-D tensor along `axis` (per axis; a static length 1 is per tensor too). Scheduled with
// the injective template (schedules.h).
#pragma once

#include <optional>

#include "kernels/ops/op.h"

namespace dynvm::ops {

// y = saturate(round_half_to_even(x / scale) + zero_point), computed in f32 (x f32 or
// int32, scale f32), saturated to the range of the zero point's dtype (uint8 or int8;
// uint8 without a zero point).
OpInstance quantize_linear(const TensorType& x, const TensorType& scale,
                           const std::optional<TensorType>& zero_point, int64_t axis = 1);
// y = (f32(x) - f32(zero_point)) * scale: f32 of x's shape (x uint8, int8 or int32).
OpInstance dequantize_linear(const TensorType& x, const TensorType& scale,
                             const std::optional<TensorType>& zero_point, int64_t axis = 1);

}  // namespace dynvm::ops
