// ONNX GridSample (opset 16): samples a 4-D NCHW input at the points of a grid
// [N, H_out, W_out, 2] of (x, y) coordinates normalized to [-1, 1], as PyTorch's
// grid_sample: modes bilinear / nearest (round half to even) / bicubic (A = -0.75, the
// 4 x 4 neighbours), padding zeros / border / reflection, align_corners. Coordinates are
// computed in the input's float dtype, the neighbours' indices let-bound and every read
// bounds-checked (outside: 0). Injective template.
#pragma once

#include <string>

#include "kernels/ops/op.h"

namespace dynvm::ops {

enum class GridSampleMode : uint8_t { kBilinear, kNearest, kBicubic };
enum class GridPadding : uint8_t { kZeros, kBorder, kReflection };

// "bilinear" / "nearest" / "bicubic" and "zeros" / "border" / "reflection"; else UserError.
GridSampleMode grid_sample_mode(const std::string& name);
GridPadding grid_padding(const std::string& name);

// x: [N, C, H, W] float; grid: [N, H_out, W_out, 2] of x's dtype. Output [N, C, H_out, W_out].
OpInstance grid_sample(const TensorType& x, const TensorType& grid, GridSampleMode mode,
                       GridPadding padding, bool align_corners);

}  // namespace dynvm::ops
