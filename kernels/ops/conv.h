// Convolutions, ONNX semantics: conv, 1-D and 2-D (NCW / NCHW input, OIW / OIHW weights), and
// conv_transpose, 1-D to 3-D (weights [C_in, C_out/groups, k...]), with strides, pads, dilations,
// groups (depthwise included) and an optional bias [C_out]. N and the spatial dims may be
// symbolic; channels and kernel sizes must be constants (the schedule blocks them).
//
// conv's math reads a padded copy of the input (stage "Pad", zero outside, its reads
// clamped into range because select evaluates both sides; loop_partition cuts the copy at
// the borders, leaving a plain, vectorized copy inside), so that the convolution itself
// indexes affinely and its output-width loop vectorizes:
//   Y[n, o, y, x] = sum_{c, ky, kx} Pad[n, g(o)*C/G + c, y*s + ky*d, x*s + kx*d] * W[o, c, ky, kx]
// Default schedule (TVM's x86 conv2d idea, written like matmul's): the output is tiled by
// oc_block output channels x ow_block output columns; a register accumulator (cache_write,
// or the reduction stage when a bias follows) is computed at each tile with loops
// (c, ky, kx, o, x): x vectorized, o unrolled, so that each step is one (strided) vector
// load of the input row plus oc_block broadcast FMAs. A static output runs (n, oc-block,
// row) fused in parallel; a symbolic one its rows. A symbolic output width is computed
// rounded up to 16 columns into a workspace (the Pad stage gets the extra zeros) and copied
// out, so that no width tail runs scalar.
// A pointwise conv (1x1, unit strides, no pads; 1-D or 2-D) over a symbolic width tiles its
// flattened spatial axis instead, in place: X and Y hold each channel's (h*)w positions
// contiguously, so Y's (y, x) fuse into one axis split by ow_block, with one masked tail per
// channel block and no copy in or out (at w=25 the per-row tiles computed 32 of every 25
// columns). A 1-D conv of unit stride over a symbolic width does the same over its padded
// input's one row (a TCN's 20 -> 64 pointwise layer at t = 1000: 34 -> 24 us, its dilated
// 64 -> 64 layers 236 -> 229 us at 1 thread and 155-195 -> 145 at 2; its static build 24,
// 224 and 167); these 1-D forms take no residue variant, which would save one masked tail.
// A conv whose kernel fits in its stride, without pads or dilation (patch embeddings,
// kernel = stride; 1x1 stride-2 shortcuts) copies its patches once, Patches[n, (c, k...),
// y, x] = X[n, c, y*s + k, ...] (no larger than X), and is that same flat pointwise conv
// over them with W read as [M, C*k...]: no output vector gathers its inputs s apart. So does
// a framing conv, a window of up to 4 hops of 8 or more (an STFT as a conv: Silero VAD's 256
// taps every 128 samples), its patches overlapping (45 -> 19 us there).
// Knobs: oc_block (default 16, or the largest power of two dividing C_out), ow_block (16,
// one zmm; candidates divide 16), oh_block (output rows per tile, default 1: 2 and 4
// measured no faster on the ResNet layer), unroll_kw (0/1), parallel (0/1).
//
// conv_transpose of unit dilation is computed by output phase (conv.cc); dilated ones take
// the gather form (each output sums the inputs whose stride grid meets it).
#pragma once

#include <optional>
#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

// Per spatial dim (empty: the ONNX defaults). pads are ONNX-ordered: every begin, then
// every end ([h_begin, w_begin, h_end, w_end]).
struct ConvAttrs {
  std::vector<int64_t> strides;    // default 1
  std::vector<int64_t> pads;       // default 0
  std::vector<int64_t> dilations;  // default 1
  int64_t groups = 1;
  std::vector<int64_t> output_padding;  // conv_transpose only (default 0)
};

// x: [N, C, (D,) (H,) W], w: [M, C/groups, (kD,) (kH,) kW], bias: [M] -> [N, M, (OD,)
// (OH,) OW] with OH = floordiv(H + pad_begin + pad_end - d*(kH-1) - 1, s) + 1 (3-D convs
// take the 2-D template with a loop over depths).
OpInstance conv(const TensorType& x, const TensorType& w, const std::optional<TensorType>& bias,
                const ConvAttrs& attrs = {});

// x: [N, C, (H,) W], w: [C, M/groups, (kH,) kW], bias: [M] -> [N, M, (OH,) OW] with
// OH = s*(H-1) + output_padding + d*(kH-1) + 1 - pad_begin - pad_end.
OpInstance conv_transpose(const TensorType& x, const TensorType& w,
                          const std::optional<TensorType>& bias, const ConvAttrs& attrs = {});

}  // namespace dynvm::ops
