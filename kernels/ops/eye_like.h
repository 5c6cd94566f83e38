// ONNX EyeLike: a 2-D tensor of ones on the k-th diagonal (k > 0 above the main one, k < 0
// below) and zeros elsewhere. The kernel only writes: its shape is the output's, whose
// dims may be symbols bound from the output argument. Injective template (schedules.h).
#pragma once

#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

// out[i, j] = (j - i == k) ? 1 : 0 in `dtype` (any numeric dtype or bool).
OpInstance eye_like(const std::vector<arith::Expr>& shape, vm::DType dtype, int64_t k = 0);

}  // namespace dynvm::ops
