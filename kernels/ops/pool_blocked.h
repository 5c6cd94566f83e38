// Max and average pools over a channel-blocked tensor (kernels/ops/conv_blocked.h), so that a
// ResNet's stem pool stays in the layout of the convs around it (in NCHW it was a conversion
// out, a pool and a conversion back: 260 us against ~50 on [2, 16, 80, 160]).
//
//   max_pool_blocked(xb [N, CB, H, W, 16], attrs)     -> [N, CB, OH, OW, 16]
//   average_pool_blocked(xb [N, CB, H, W, 16], attrs) -> [N, CB, OH, OW, 16]
//
// Every tap is written out (no reduction loop) and reads the padded input inlined, as the
// blocked depthwise conv does: one contiguous vector of 16 channels per tap at any stride.
// ceil_mode is not taken (compiler/passes/block_channels leaves such pools in NCHW).
#pragma once

#include "kernels/ops/op.h"
#include "kernels/ops/pool.h"

namespace dynvm::ops {

OpInstance max_pool_blocked(const TensorType& xb, const PoolAttrs& attrs);
OpInstance average_pool_blocked(const TensorType& xb, const PoolAttrs& attrs);

}  // namespace dynvm::ops
