// ONNX OneHot: a new axis of extent `depth` at `axis` whose element is values[1] (on) where
// its position equals the index and values[0] (off) elsewhere. Indices of any integer or
// float dtype (floats truncated toward zero); negative ones count from the end; those still
// outside [0, depth) give a row of off values, as the ONNX specification says. `depth` is
// the output's extent along the axis, a constant or a symbol bound from the output
// argument, so a depth read at run time needs nothing else. Injective template.
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

// Output: indices' shape with `depth` inserted at `axis` (in [-r-1, r]), values' dtype;
// values is [off, on] (a 1-D tensor of 2 elements).
OpInstance one_hot(const TensorType& indices, const TensorType& values, int64_t axis,
                   const arith::Expr& depth);

}  // namespace dynvm::ops
