// Pooling, ONNX semantics, 1-D, 2-D and 3-D over NCW / NCHW / NCDHW inputs (N and the
// spatial dims may be symbolic): max pool (f32, f64, int8, uint8; pads never win: they read
// the type's lowest value; dilations), average pool (count_include_pad, no dilations) and
// the global pools (reduce.h's max / mean over the spatial dims, keepdims). ceil_mode rounds
// the output dims up, dropping a window that would start past the input and its begin pad;
// the rounded-up windows read pads past the end pad, outside the average's count.
//
// Like conv (conv.h), a window reads a padded copy of the input (stage "Pad") so that its
// indices are affine. Schedule: (n, c, row) fused in parallel, the output width split by
// `vector_width` with a register accumulator computed at each block (reduce loops outside,
// the width vectorized inside); average pool divides by the window's count when storing.
// Knobs: vector_width {1,4,8,16}=8, parallel (injective_knobs).
#pragma once

#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

struct PoolAttrs {
  std::vector<int64_t> kernel_shape;  // required, one per spatial dim
  std::vector<int64_t> strides;       // default 1
  std::vector<int64_t> pads;          // ONNX order (begins, then ends), default 0
  std::vector<int64_t> dilations;     // max pool only, default 1
  bool count_include_pad = false;     // average pool only
  bool ceil_mode = false;             // round the output dims up
};

// x: [N, C, spatial...] -> [N, C, out...], out = floordiv(H + pads - d*(k-1) - 1, s) + 1
// (ceil_mode: ceildiv, at most floordiv(H + pad_begin - 1, s) + 1).
OpInstance max_pool(const TensorType& x, const PoolAttrs& attrs);
OpInstance average_pool(const TensorType& x, const PoolAttrs& attrs);
// Max pool with ONNX's second output, Indices (i64): where each maximum is in X, as a flat
// index over X's shape, row-major, or with the spatial dims in reverse order when
// `column_major` (storage_order=1). The first maximum of a window wins. Stages: the
// window's argmax (reduction template's `parallel`), then value and index read from it.
OpInstance max_pool_with_indices(const TensorType& x, const PoolAttrs& attrs,
                                 bool column_major = false);

// x: [N, C, spatial...] -> [N, C, 1...].
OpInstance global_max_pool(const TensorType& x);
OpInstance global_average_pool(const TensorType& x);

}  // namespace dynvm::ops
