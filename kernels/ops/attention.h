// Scaled dot-product attention as one kernel (compiler/passes/fuse_attention rewrites the
// MatMul -> scale -> mask -> Softmax -> MatMul chains exporters write into it):
//   Y[b..., i, :] = softmax_j(scale * sum_d Q[b..., i, d] Kt[b..., d, j] + mask[b..., i, j])
//                   @ V[b..., :, :]
// Q [batch..., Lq, D], Kt [batch..., D, Lk] (the second MatMul operand as the graph has it),
// V [batch..., Lk, Dv], batch dims broadcast as numpy's; the optional mask broadcasts to the
// scores' [batch..., Lq, Lk]. Y is [batch..., Lq, Dv].
//
// Computed per block of query rows: the block's scores ([rows, Lk], in the cache) are
// accumulated in register tiles, normalized with lane reductions (lanes.h) and multiplied
// by V in register tiles, so the [Lq, Lk] scores, which the unfused chain writes once and
// reads three times, never reach memory (a [4, 1500, 1500] score tensor is 36 MB).
// Knobs: `tile_m` (query rows per block: the register tiles' rows), `parallel` (blocks and
// batch dims across threads).
#pragma once

#include <optional>

#include "kernels/ops/op.h"

namespace dynvm::ops {

OpInstance attention(const TensorType& q, const TensorType& kt, const TensorType& v,
                     const std::optional<TensorType>& mask, double scale);

}  // namespace dynvm::ops
