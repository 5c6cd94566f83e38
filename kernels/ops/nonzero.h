// Outputs whose size the data decides: ONNX NonZero and Compress. Their extent (how many
// elements are nonzero, how many conditions hold) is computed first by count_nonzero, a
// reduction the importer binds next to the op (compiler/op: dynvm.CountNonZero), so that
// type inference reads it as a run-time symbol and memory is allocated exactly; the kernels
// here then take that extent from their output argument.
//
// Both place element i at the number of nonzero elements before it: an exclusive running
// count (te::scan, linear) followed by one serial pass that stores each selected element
// at its place (te::scatter). Work is linear in the input; the pass is serial.
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

// How many elements of x are nonzero (true for bool): an i64 scalar. Reduction template.
OpInstance count_nonzero(const TensorType& x);

// ONNX NonZero: out[d, k] = the d-th coordinate of x's k-th nonzero element in row-major
// order; out is i64 [rank(x), count] with `count` count_nonzero(x) (a scalar x is read as
// one element of rank 1).
OpInstance nonzero(const TensorType& x, const arith::Expr& count);

// ONNX Compress: the slices of x along `axis` whose condition holds, in order (axis < 0 ...
// counts from the end); without an axis (has_axis false) the elements of x flattened.
// condition is bool, one-dimensional; where it is shorter than the axis, the rest is
// dropped. `count` is count_nonzero(condition).
OpInstance compress(const TensorType& x, const TensorType& condition, const arith::Expr& count,
                    bool has_axis, int64_t axis);

}  // namespace dynvm::ops
