// 3x3 stride-1 dense convolutions over channel-blocked tensors by Winograd's minimal filtering,
// F(m x m, 3 x 3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks").
//
// Why: a blocked dense 3x3 conv runs at this machine's FMA peak (a ResNet's 56x56 layers at
// ~110 GFLOP/s, as ORT's), so only fewer multiplications make it faster. F(4x4, 3x3) computes
// each 4x4 output tile from a 6x6 input tile with 36 products per (input, output) channel pair
// instead of 144: the 9 taps' work becomes 2.25 per output.
//
//   U = G g G^T   (compile time, compiler/passes/block_channels: W [M, C, 3, 3] -> U)
//   V = B^T d B   (each alpha x alpha input tile d, alpha = m + 2)
//   M = U . V     (one product per position (eps, nu) of the tile: [T tiles, C] x [C, M])
//   Y = A^T M A   (each m x m output tile), then the bias and the fused epilogue
//
// Layouts: x [N, CB, H, W, 16] (C = 16 CB: whole blocks), U [alpha, alpha, MB, C, 16 (out)],
// zero past M, y [N, MB, OH, OW, 16]. Tiles are numbered over the images flattened
// (t = (n * TH + ty) * TW + tx), so that the product's register tile of tile_block tiles x
// oc_block output blocks runs across tile rows and images, and only the last one is short.
// The transforms are written out with the matrices' constants, zero terms dropped (a select
// over the transform's row that unrolling resolves), and computed per tile in registers.
// When U fits in L2 (up to 1 MB: 64 x 64 channels), Y's tiles run in chunks of 8 (one block
// of every tile_block candidate), in parallel, each computing its V and M first:
// they stay in cache and the kernel's memory is bounded (V and M over all tiles are 2.25x
// its input's and output's bytes); wider convs keep V and M whole, U streamed once.
#pragma once

#include <optional>
#include <vector>

#include "kernels/ops/conv_blocked.h"
#include "kernels/ops/op.h"

namespace dynvm::ops {

// The matrices of F(m x m, 3 x 3) over the points 0, +-1, +-2 (m = 4) or 0, +-1 (m = 2),
// row-major: bt [alpha x alpha], g [alpha x 3], at [m x alpha].
struct WinogradMatrices {
  int64_t m = 0, alpha = 0;
  std::vector<double> bt, g, at;
};

// m = 2 or 4, else a UserError.
const WinogradMatrices& winograd_matrices(int64_t m);

// U = G g G^T for every (output, input) channel pair of a [M, C, 3, 3] f32 weight (row-major),
// laid out [alpha, alpha, ceil(M/16), C, 16], zero past M.
std::vector<float> winograd_weights(const float* w, int64_t out_channels, int64_t in_channels,
                                    int64_t m);

// The conv of conv_blocked.h with attrs.winograd = m: a 3x3 kernel, stride and dilation 1,
// x blocked with whole blocks, groups of whole blocks (U's C then a group's channels: W
// [M, C / groups, 3, 3] transformed as above), w = U.
OpInstance conv_winograd(const TensorType& xb, const TensorType& u,
                         const std::optional<TensorType>& bias, const BlockedConvAttrs& attrs,
                         const FusedEpilogue* e);

}  // namespace dynvm::ops
