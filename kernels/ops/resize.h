// ONNX Resize of an N-D tensor (NCHW images and any other rank): modes nearest, linear and
// cubic (cubic_coeff_a, exclude_outside) on any dims, with the coordinate transformations
// half_pixel, asymmetric, align_corners, pytorch_half_pixel and tf_crop_and_resize (roi,
// extrapolation_value).
//
// Each output coordinate maps to an input coordinate in f64, the same arithmetic as the
// ONNX reference implementation (onnx/backend/test/case/node/resize.py), so nearest
// rounding ties land the same way; the resulting input indices are clamped into the input
// (the reference's edge padding), so no coordinate ever reads out of bounds. Linear
// interpolates in the data's type (f32), cubic in f64; integer data is rounded half to even.
// Cubic takes the four neighbours ceil(c) - 2 .. ceil(c) + 1 (the reference's choice,
// ties to the lower index) with Keys' weights; exclude_outside zeroes the weights of
// neighbours outside the input and renormalizes.
//
// Two forms. `resize`: constant `scales` or `sizes`, the kernel specialized on them. With
// scales, an output dim is floor(in * scale) computed exactly: ONNX scales are f32, i.e.
// p / 2^k, so a symbolic input dim gives the index expression floordiv(in * p, 2^k). Sizes
// need static input dims wherever the size differs from the input. `resize_at_run_time`:
// scales or sizes only the run time knows; the output's dims are symbols the kernel binds
// from its output argument, the scales are read by the kernel (f32) or are out / in.
// `resize_output_sizes` computes floor(in * scale) per dim as an i64 vector, for scales
// read at run time (the compiler reads its elements as run-time symbols).
// Scheduled with the injective template (schedules.h). Not here: opset 18's antialias,
// axes and keep_aspect_ratio_policy (refused by the compiler), half_pixel_symmetric.
#pragma once

#include <string>
#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

enum class ResizeMode : uint8_t { kNearest, kLinear, kCubic };
enum class NearestMode : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class CoordinateTransform : uint8_t {
  kHalfPixel,         // (x + 0.5) / scale - 0.5
  kAsymmetric,        // x / scale
  kAlignCorners,      // x * (in - 1) / (out - 1), 0 when out == 1
  kPytorchHalfPixel,  // half_pixel, but 0 when out == 1
  kTfCropAndResize,   // start * (in - 1) + x * (end - start) * (in - 1) / (out - 1), from roi
};

struct ResizeAttrs {
  ResizeMode mode = ResizeMode::kNearest;
  CoordinateTransform coordinate_transformation_mode = CoordinateTransform::kHalfPixel;
  NearestMode nearest_mode = NearestMode::kRoundPreferFloor;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0;  // tf_crop_and_resize, outside the input
  // `resize`: exactly one of the two is non-empty, with one entry per input dim.
  // `resize_at_run_time`: both empty.
  std::vector<float> scales;
  std::vector<int64_t> sizes;
};

// ONNX's attribute strings ("nearest", "round_prefer_ceil", "align_corners", ...); any
// other value is a UserError naming the attribute.
ResizeMode resize_mode_from_string(const std::string& mode);
NearestMode nearest_mode_from_string(const std::string& mode);
CoordinateTransform coordinate_transform_from_string(const std::string& mode);

// The output shape of `resize` (UserError for bad attributes).
std::vector<arith::Expr> resize_output_shape(const TensorType& x, const ResizeAttrs& attrs);

// `roi` (f32 or f64, 2 * rank elements: starts then ends) is read by tf_crop_and_resize
// and required by it; other transformations ignore it.
OpInstance resize(const TensorType& x, const ResizeAttrs& attrs, const TensorType* roi = nullptr);

// What only the run time knows: the output's dims (`shape`, symbols bound from the output
// or constants), the scales (`scales`: f32, one per dim, read by the kernel; absent: the
// scale is out / in, as ONNX defines it for sizes), and the dims known to keep their size
// (`kept`: read straight through).
struct ResizeAtRunTime {
  std::vector<arith::Expr> shape;
  std::vector<bool> kept;
  const TensorType* scales = nullptr;
};
OpInstance resize_at_run_time(const TensorType& x, const ResizeAttrs& attrs, const TensorType* roi,
                              const ResizeAtRunTime& run_time);

// floor(x.shape[d] * scales[d]) as an i64 vector, -1 where the scale is not positive and
// finite or the product reaches 2^62 (the caller checks for it).
OpInstance resize_output_sizes(const TensorType& x, const TensorType& scales);

}  // namespace dynvm::ops
