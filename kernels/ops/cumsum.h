// ONNX CumSum: the running sum along one axis, optionally exclusive (each element sums the
// ones strictly before it) and/or reverse (from the end). Built on te::scan, a recurrence
// y[k] = y[k-1] + x[k] lowered to one serial loop along the axis: O(n) work, one load of x,
// one load of y[k-1] and one store per element (not the O(n^2) of a reduction over r <= k).
// Accumulates in the data's dtype, as ONNX Runtime does (f32 sums in f32; integers wrap).
//
// Schedule template "scan" (one knob): `parallel` {0,1} (default as the injective
// template's) runs the dims before `axis`, fused, in parallel; the scan axis and the dims
// after it stay serial inside (axis 0 is therefore serial). Not vectorized: every element
// reads the one its predecessor just stored.
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

// axis in [-rank, rank); f32, f64, i32, i64 data (bool is a UserError).
OpInstance cumsum(const TensorType& x, int64_t axis, bool exclusive = false, bool reverse = false);

}  // namespace dynvm::ops
