// Elementwise operators that elementwise.h's UnaryOp table does not have: sin and cos (the
// TIR intrinsics), ONNX HardSwish (x * max(0, min(1, x / 6 + 1/2))) and ONNX PRelu
// (x < 0 ? slope * x : x, slope broadcast unidirectionally to x's shape). Floating-point
// inputs only; scheduled with the injective template (schedules.h): knobs
// `vector_width` and `parallel`.
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

enum class ActivationOp : uint8_t { kSin, kCos, kHardSwish };

OpInstance activation(ActivationOp op, const TensorType& x);
// slope: same dtype as x, its shape broadcastable to x's (the output has x's shape).
OpInstance prelu(const TensorType& x, const TensorType& slope);

}  // namespace dynvm::ops
