// ONNX Det: the determinant of each M x M matrix of a [..., M, M] float tensor, by Gaussian
// elimination with partial pivoting as a generated kernel. A te::scatter holds a working
// copy (M + 2 rows of M + 1 columns: the matrix, a spare row for swaps, the pivot index and
// the permutation's sign) and runs, for each column k, six serial phases over (i, j): pick
// the pivot (the largest |a[i][k]|, i >= k), swap it into row k through the spare row, flip
// the sign, eliminate below row k. The determinant is the sign times the diagonal's product.
// Cost: 6 M^3 serial steps per matrix (about 4 M^3 of them masked off), O(M^2) memory per
// matrix; matrices run one after another. A zero pivot column gives 0 (no division by 0).
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

// x: [..., M, M], f32 or f64 (M may be symbolic). Output: x's dims without the last two.
OpInstance det(const TensorType& x);

}  // namespace dynvm::ops
