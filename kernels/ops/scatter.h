// Writing by data: ONNX ScatterElements (and opset-9 Scatter), ScatterND and MaxUnpool. The output
// starts as a copy of data (element-wise, the injective template's knobs), then one serial
// pass over the updates (te::scatter) stores each update where its index says, or combines
// it with what is there (`reduction`: add, mul, max, min). Duplicate indices: the last
// update wins for `none`, all of them combine otherwise, as ONNX Runtime does.
//
// Indices are int32 or int64; a negative index counts from the end of its axis. An index
// still outside the axis is skipped (nothing is written), never out of bounds; ONNX
// Runtime reports an error instead (the kernel ABI has no error path from a kernel body).
#pragma once

#include <string>
#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

enum class ScatterReduction : uint8_t { kNone, kAdd, kMul, kMax, kMin };
// "none", "add", "mul", "max", "min"; anything else is a UserError.
ScatterReduction scatter_reduction(const std::string& name);

// out = data; out[j with j[axis] replaced by indices[j]] (op)= updates[j] for every j of
// indices' shape (updates has indices' shape, both data's rank).
OpInstance scatter_elements(const TensorType& data, const TensorType& indices,
                            const TensorType& updates, int64_t axis,
                            ScatterReduction reduction = ScatterReduction::kNone);

// out = data; with k = indices' last dim, out[indices[j..., :], t...] (op)= updates[j..., t...]
// for the leading dims j of indices and the trailing dims t of data after the first k.
OpInstance scatter_nd(const TensorType& data, const TensorType& indices, const TensorType& updates,
                      ScatterReduction reduction = ScatterReduction::kNone);

// ONNX MaxUnpool: zeros of `out_shape`, with x[j] stored where the flat (row-major) index
// indices[j] points (MaxPool's Indices; indices has x's shape). The index is a position in
// `index_shape`, the shape MaxPool's input had (each spatial dim (in - 1) * stride - pads +
// kernel); a larger out_shape keeps the coordinates and pads at the ends.
OpInstance max_unpool(const TensorType& x, const TensorType& indices,
                      const std::vector<arith::Expr>& index_shape,
                      const std::vector<arith::Expr>& out_shape);

}  // namespace dynvm::ops
