// Conv chains in the channel-blocked layout (NCHW16c, kernels/ops/conv_blocked.h), as ONNX
// Runtime's NCHWc transformer does for its convs.
//
// In NCHW a depthwise conv's vectors run along rows: a symbolic width leaves lanes empty (7
// of 16 at a 7-wide map), a stride of 2 costs a permute per tap, and the dynamic kernel ran
// 2.5-4.6x slower than a static one. Blocked, the vector lanes are 16 channels, so every tap
// is one contiguous load at any width or stride, and a dynamic kernel is as fast as a static
// one (docs/kernels.md, "Channel-blocked layout").
//
// What it rewrites, in a module that has at least one depthwise or dense KxK conv it can
// block:
//   - Conv with a constant f32 weight, 2-D, explicit pads (or VALID), 8 output channels or
//     more: `dynvm.ConvBlocked` over the blocked input (weights and bias packed here, zero
//     past the channels), when it is
//       depthwise (group = C = M, 8 channels or more) or pointwise (1x1, unit strides, no
//       pads, group 1): always, converting its input where that is NCHW;
//       dense (any window; groups of whole blocks of input and output channels; a pointwise
//       one over fewer than 8 channels too): when
//       its output lanes are at most 1/8 padding (40 channels compute 48: slower than
//       NCHW), its input is blocked already or is an NCHW tensor of fewer than 8 channels
//       (a stem reads the image itself, no conversion), and a reader of its result gains
//       in the layout in turn (a depthwise or pointwise conv, a pool or mean, or a dense
//       conv or elementwise op that leads to one): a dense conv gains 5-15% blocked, about
//       what converting its input or output costs;
//     a dense 3x3 conv of stride and dilation 1, whole input blocks and one group (or groups
//     of 32 channels or more) runs as
//     Winograd's F(4x4, 3x3) (attribute winograd = 4, W transformed to U here): 36
//     products per 4x4 output tile instead of 144, 2-3x faster than directly, so such a
//     conv is blocked wherever it is, converting its input if need be (as a depthwise one);
//   - the elementwise ops between them whose result has the same channels (Relu, Clip,
//     HardSwish, Sigmoid, Add, Mul, ...: those that keep the padded lanes finite), with
//     per-channel constants packed to [1, CB, 1, 1, 16] and scalars as they are;
//   - GlobalAveragePool, and ReduceMean over the spatial axes keeping dims (squeeze and
//     excitation), as ReduceMean over the blocked dims 2 and 3;
//   - 2-D MaxPool (without indices) and AveragePool without ceil_mode:
//     `dynvm.MaxPoolBlocked` / `dynvm.AveragePoolBlocked` (kernels/ops/pool_blocked.h).
// A value the rewritten op reads that is not blocked yet gets `dynvm.ToBlocked`; every
// rewritten binding keeps its variable, bound to `dynvm.FromBlocked` of the blocked value, so
// that readers outside the chain are unchanged and dce drops the conversions nobody reads.
#pragma once

#include <cstddef>

#include "compiler/passes/pass.h"

namespace dynvm::compiler {

struct BlockChannelsStats {
  size_t convs = 0;       // Conv -> dynvm.ConvBlocked
  size_t winograd = 0;    // of them, 3x3 stride-1 convs by Winograd's F(4x4, 3x3)
  size_t others = 0;      // elementwise ops and reductions on blocked values
  size_t to_blocked = 0;  // dynvm.ToBlocked inserted
};

// `winograd`: dense 3x3 stride-1 convs over whole input blocks run as Winograd's F(4x4, 3x3)
// (kernels/ops/conv_winograd.h; their weights transformed here), else directly.
PassResult block_channels(const TypedModule& in, BlockChannelsStats* stats = nullptr,
                          bool winograd = true);

}  // namespace dynvm::compiler
