// Convolutions over channel-blocked tensors (NCHW16c), the layout compiler/passes/block_channels
// gives conv chains: the depthwise-separable ones of MobileNet- and EfficientNet-style models,
// and ResNet-style dense ones from the stem on. A blocked
// tensor is [N, ceil(C/16), H, W, 16]: channel c is lane c % 16 of block c / 16, lanes past C
// hold finite values that no consumer reads (weights and biases are zero there).
//
// Why: in NCHW a vector runs along a row, so a depthwise conv over a symbolic width fills 7 of
// 16 lanes at a 7-wide map, reads stride-2 inputs with two loads and a permute per tap, and
// computes into a rounded workspace. Blocked, the 16 lanes are channels: every tap of every
// output position is one contiguous vector, whatever the width and stride, and a dynamic
// kernel runs as fast as a static one (docs/kernels.md, "Channel-blocked layout"). A dense
// conv broadcasts each input value into a register tile instead, so a strided or narrow map
// costs it no rounded width and no strided loads ("Dense convs, stems and pools").
//
//   to_blocked(x [N, C, H, W])              -> [N, ceil(C/16), H, W, 16], zero past C
//   from_blocked(xb [N, CB, H, W, 16], C)   -> [N, C, H, W]
//   conv_blocked(x, w, bias, attrs)         -> [N, ceil(M/16), OH, OW, 16]
//     depthwise (groups = C = M, x blocked): w [CB, kH, kW, 16], each output the sum of its
//       taps written out (no reduction loop: loop_partition then splits the borders off the
//       output rows and columns only) with the weights staged in registers per block;
//     dense (any window; pointwise is 1x1; groups of whole blocks, a ResNeXt's or RegNet's
//       wide groups: w [MB, C/groups, ...]): w [MB, C, kH, kW, 16 (out)], x blocked
//       or NCHW (a stem's 3 channels: its output blocked without a conversion), a register
//       tile of oc_block output blocks x ow_block positions, each input value broadcast into
//       it (positions along a row; a strided conv over a symbolic width takes them along the
//       image's positions flattened, so that no row ends in a partial tile); the sum runs
//       over the C real input channels only (never a padded lane);
//   bias [MB, 16] (zero past M).
// Both take an epilogue (compiler/passes/fuse_ops) at the blocked output's indices.
#pragma once

#include <optional>
#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

inline constexpr int64_t kChannelBlock = 16;

// ceil(channels / kChannelBlock).
inline int64_t channel_blocks(int64_t channels) {
  return (channels + kChannelBlock - 1) / kChannelBlock;
}

// Channel blocks enough to share among the threads as a parallel loop; fewer run their rows
// in parallel (the blocked depthwise conv and pools).
inline constexpr int64_t kManyChannelBlocks = 8;

// A blocked tensor's channel blocks and spatial dims, checked (f32 / f64, [N, CB, H, W, 16]
// with a static CB), else a UserError naming op.
struct BlockedShape {
  arith::Expr n, h, w;
  int64_t blocks = 0;
};
BlockedShape blocked_shape(const TensorType& xb, const std::string& op);

OpInstance to_blocked(const TensorType& x);
OpInstance from_blocked(const TensorType& xb, int64_t channels);

struct BlockedConvAttrs {
  std::vector<int64_t> kernel;     // [kH, kW]
  std::vector<int64_t> strides;    // default 1
  std::vector<int64_t> pads;       // [h_begin, w_begin, h_end, w_end], default 0
  std::vector<int64_t> dilations;  // default 1
  bool depthwise = false;          // else dense
  // Dense: groups of whole blocks (C/groups and M/groups multiples of 16), W's dim 1 the
  // input channels of a group.
  int64_t groups = 1;
  // Dense 3x3, stride 1: the output tile of Winograd's F(m x m, 3 x 3) (conv_winograd.h; W is
  // then its transformed U), or 0 for the direct conv.
  int64_t winograd = 0;
};

// A blocked conv's bias, when given: X's dtype, [out_blocks, 16], else a UserError naming op.
void check_blocked_bias(const std::optional<TensorType>& bias, const TensorType& x,
                        int64_t out_blocks, const char* op);

// The instance of a blocked conv computing Y: its name (with X's dtype and the epilogue's),
// inputs (the epilogue's after W and B) and output; the caller adds knobs and the schedule.
OpInstance blocked_conv_op(std::string name, const te::TensorRef& X, const te::TensorRef& W,
                           const te::TensorRef& B, const te::TensorRef& Y, const FusedEpilogue* e);

OpInstance conv_blocked(const TensorType& xb, const TensorType& w,
                        const std::optional<TensorType>& bias, const BlockedConvAttrs& attrs);

}  // namespace dynvm::ops
