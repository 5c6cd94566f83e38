// Block rearrangements between depth and space (ONNX DepthToSpace, SpaceToDepth) on
// N x C x H x W tensors of any dtype, symbolic dims allowed: pure index arithmetic, one read
// per output element, scheduled with the injective template (schedules.h).
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

enum class DepthToSpaceMode : uint8_t {
  kDCR,  // depth-column-row: channel (i * b + j) * C' + c
  kCRD,  // column-row-depth: channel c * b * b + i * b + j
};

// [N, C, H, W] -> [N, C / b^2, H * b, W * b]; out[n, c, h*b + i, w*b + j] reads the input
// channel `mode` gives for (c, i, j). A static C must be divisible by b^2 (a symbolic one is
// required to be by the caller).
OpInstance depth_to_space(const TensorType& x, int64_t blocksize, DepthToSpaceMode mode);
// [N, C, H, W] -> [N, C * b^2, H / b, W / b]: out[n, (i*b + j) * C + c, h, w] =
// x[n, c, h*b + i, w*b + j] (the inverse of DCR depth_to_space).
OpInstance space_to_depth(const TensorType& x, int64_t blocksize);

}  // namespace dynvm::ops
