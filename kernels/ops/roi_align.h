// ONNX RoiAlign (opsets 10 and 16) as ONNX Runtime computes it: for each roi [x1, y1, x2, y2]
// (times spatial_scale; half_pixel shifts it by -0.5, output_half_pixel makes it at least
// 1 x 1) of the image batch_indices[roi] selects, each of the output_height x output_width
// bins takes a grid of bilinear samples, sampling_ratio per side or, when 0,
// ceil(roi size / output size) per side for that roi (read at run time: a reduction whose
// extents are let-bound per element). `avg` averages the samples; `max` takes the largest
// bilinear weight x neighbour product of any sample (ORT's max, not the max of the
// interpolated values). Samples beyond one pixel outside the image count as 0. Coordinates in
// X's dtype, in ORT's order of operations. A reduction over each bin's samples (by default
// for every channel at once, each sample's coordinates and weights shared), then the
// average's division or an empty grid's 0.
#pragma once

#include <string>

#include "kernels/ops/op.h"

namespace dynvm::ops {

enum class RoiAlignMode : uint8_t { kAvg, kMax };
// half_pixel (opset 16's default): roi coordinates shifted by -0.5 pixel; output_half_pixel
// (opset 10's only behaviour): not shifted, and a roi smaller than 1 x 1 taken as 1 x 1.
enum class RoiCoordinates : uint8_t { kHalfPixel, kOutputHalfPixel };

// "avg" / "max" and "half_pixel" / "output_half_pixel"; else UserError.
RoiAlignMode roi_align_mode(const std::string& name);
RoiCoordinates roi_coordinates(const std::string& name);

struct RoiAlignAttrs {
  RoiAlignMode mode = RoiAlignMode::kAvg;
  RoiCoordinates coordinates = RoiCoordinates::kHalfPixel;
  int64_t output_height = 1;
  int64_t output_width = 1;
  int64_t sampling_ratio = 0;  // 0: adaptive, ceil(roi size / output size) per roi
  float spatial_scale = 1.0f;  // an ONNX float attribute: f32, as ORT reads it
};

// x: [N, C, H, W] f32 / f64; rois: [num_rois, 4] of x's dtype; batch_indices: [num_rois]
// int64 (or int32; out-of-range indices are clamped into [0, N), where ORT reads past X).
// Output [num_rois, C, output_height, output_width] of x's dtype.
OpInstance roi_align(const TensorType& x, const TensorType& rois, const TensorType& batch_indices,
                     const RoiAlignAttrs& attrs);

}  // namespace dynvm::ops
