// ONNX Resize of an N-D tensor (NCHW images and any other rank), scaled by constant
// `scales` or to constant `sizes`: modes nearest (every dim) and linear (the last dim, or
// bilinear on the last two; the other dims must keep their size), with the coordinate
// transformations half_pixel, asymmetric, align_corners and pytorch_half_pixel.
//
// Each output coordinate maps to an input coordinate in f64, the same arithmetic as the
// ONNX reference implementation (onnx/backend/test/case/node/resize.py), so nearest
// rounding ties land the same way; the resulting input index is clamped into the input
// (the reference's edge padding), so no coordinate ever reads out of bounds. Linear
// interpolates in the data's type (f32), or in f64 rounded half to even for integer data.
//
// Shapes: with scales, an output dim is floor(in * scale) computed exactly: ONNX scales are
// f32, i.e. p / 2^k, so a symbolic input dim gives the index expression
// floordiv(in * p, 2^k) (in * scale for integer scales). Sizes need static input dims
// wherever the size differs from the input (a symbolic empty input could not be read).
// Scheduled with the injective template (schedules.h). Not here: cubic mode,
// tf_crop_and_resize (roi, extrapolation_value), exclude_outside, and opset 18's axes and
// keep_aspect_ratio_policy, which an importer resolves into full-rank scales or sizes.
#pragma once

#include <string>
#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

enum class ResizeMode : uint8_t { kNearest, kLinear };
enum class NearestMode : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class CoordinateTransform : uint8_t {
  kHalfPixel,         // (x + 0.5) / scale - 0.5
  kAsymmetric,        // x / scale
  kAlignCorners,      // x * (in - 1) / (out - 1), 0 when out == 1
  kPytorchHalfPixel,  // half_pixel, but 0 when out == 1
};

struct ResizeAttrs {
  ResizeMode mode = ResizeMode::kNearest;
  CoordinateTransform coordinate_transformation_mode = CoordinateTransform::kHalfPixel;
  NearestMode nearest_mode = NearestMode::kRoundPreferFloor;
  // Exactly one of the two is non-empty, with one entry per input dim.
  std::vector<float> scales;
  std::vector<int64_t> sizes;
};

// ONNX's attribute strings ("nearest", "round_prefer_ceil", "align_corners", ...); any
// other value (including ONNX modes not implemented here: cubic, tf_crop_and_resize,
// half_pixel_symmetric) is a UserError naming the attribute.
ResizeMode resize_mode_from_string(const std::string& mode);
NearestMode nearest_mode_from_string(const std::string& mode);
CoordinateTransform coordinate_transform_from_string(const std::string& mode);

// The output shape (UserError for bad attributes).
std::vector<arith::Expr> resize_output_shape(const TensorType& x, const ResizeAttrs& attrs);

OpInstance resize(const TensorType& x, const ResizeAttrs& attrs);

}  // namespace dynvm::ops
