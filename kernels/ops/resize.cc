// Resize (see resize.h): per output dim, the input coordinate in f64, then the nearest
// input index or the two linear neighbours, let-bound and clamped into the input.
#include "kernels/ops/resize.h"

#include <cmath>

#include "kernels/arith/simplify.h"
#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using tir::Expr;

Expr f64c(double v) { return tir::make_const(tir::f64(), v); }
Expr i64c(int64_t v) { return tir::make_const_int(tir::i64(), v); }
Expr as_f64(const arith::Expr& e) { return tir::index_value(e, tir::f64()); }
Expr condition(const arith::Expr& e) { return tir::index_value(e, tir::boolean()); }
Expr cmp(tir::CompareOp op, const Expr& a, const Expr& b) { return tir::compare(op, a, b); }

// How one dim is resized.
struct DimPlan {
  arith::Expr in, out;
  bool identity = false;  // out == in and every transformation maps x to x
  double scale = 1;       // the given scale, or size / in
};

// floor(in * s) exactly. s is an f32, i.e. p / 2^k: for a symbolic dim, floordiv(in * p, 2^k).
arith::Expr scaled_dim(const arith::Expr& in, float s, size_t d) {
  if (in.is_int_imm()) {
    // 64 mantissa bits hold the product of a 24-bit scale and any dim below 2^40.
    long double v = std::floor(static_cast<long double>(in.int_value()) * s);
    if (v >= 0x1p40L) user_error("resize: output dim ", d, " would be ", static_cast<double>(v));
    return arith::Expr(static_cast<int64_t>(v));
  }
  double p = s;
  int k = 0;
  while (p != std::floor(p) && k <= 30) {
    p *= 2;
    ++k;
  }
  if (k > 30 || p > 0x1p30) {
    user_error("resize: scale ", s, " of dim ", d,
               " cannot be applied exactly to a symbolic dim (give a static input dim)");
  }
  arith::Expr scaled = in * arith::Expr(static_cast<int64_t>(p));
  return arith::simplify(k == 0 ? scaled : arith::floordiv(scaled, arith::Expr(int64_t{1} << k)));
}

std::vector<DimPlan> plan_dims(const TensorType& x, const ResizeAttrs& a) {
  size_t rank = x.shape.size();
  if (rank == 0) user_error("resize: the input must have rank >= 1");
  bool by_scales = !a.scales.empty();
  if (by_scales == !a.sizes.empty()) user_error("resize: give exactly one of scales and sizes");
  size_t given = by_scales ? a.scales.size() : a.sizes.size();
  if (given != rank) {
    user_error("resize: ", given, by_scales ? " scales" : " sizes", " for an input of rank ", rank);
  }
  std::vector<DimPlan> plans(rank);
  for (size_t d = 0; d < rank; ++d) {
    DimPlan& p = plans[d];
    p.in = x.shape[d];
    if (by_scales) {
      float s = a.scales[d];
      if (!(s > 0) || !std::isfinite(s)) {
        user_error("resize: scale ", d, " is ", s, " (it must be positive and finite)");
      }
      p.scale = s;
      p.identity = s == 1.0f;
      p.out = p.identity ? p.in : scaled_dim(p.in, s, d);
      continue;
    }
    int64_t size = a.sizes[d];
    if (size < 0) user_error("resize: size ", d, " is negative (", size, ")");
    if (p.in.is_int_imm() && p.in.int_value() == size) {
      p.identity = true;
      p.out = p.in;
      continue;
    }
    if (!p.in.is_int_imm()) {
      user_error("resize: sizes need a static input dim ", d,
                 " (it is symbolic and could be empty; give scales instead)");
    }
    if (p.in.int_value() == 0) user_error("resize: input dim ", d, " is empty but size is ", size);
    p.out = arith::Expr(size);
    p.scale = static_cast<double>(size) / static_cast<double>(p.in.int_value());
  }
  if (a.mode == ResizeMode::kLinear) {
    for (size_t d = 0; d + 2 < rank; ++d) {
      if (!plans[d].identity) {
        user_error("resize: linear mode interpolates only the last two dims; dim ", d,
                   " must keep its size (scale 1)");
      }
    }
  }
  return plans;
}

// The input coordinate (f64) of output index i along a resized dim, as the ONNX reference
// computes it.
Expr source_coordinate(const DimPlan& p, const arith::Var& i, CoordinateTransform mode) {
  Expr x = as_f64(i);
  Expr scale = f64c(p.scale);
  Expr half_pixel = (x + f64c(0.5)) / scale - f64c(0.5);
  // A single output element sits at input 0 (align_corners would divide by zero).
  auto unless_single = [&](Expr e) {
    if (p.out.is_int_imm()) return p.out.int_value() > 1 ? e : f64c(0);
    return tir::select(condition(arith::gt(p.out, 1)), e, f64c(0));
  };
  switch (mode) {
    case CoordinateTransform::kHalfPixel:
      return half_pixel;
    case CoordinateTransform::kAsymmetric:
      return x / scale;
    case CoordinateTransform::kPytorchHalfPixel:
      return unless_single(half_pixel);
    case CoordinateTransform::kAlignCorners:
      return unless_single(x * as_f64(p.in - arith::Expr(1)) / as_f64(p.out - arith::Expr(1)));
  }
  DYNVM_INTERNAL_CHECK(false, "unknown coordinate transformation");
  return x;
}

// The nearest input index (int64, not yet clamped) of coordinate c: the reference's
// neighbour choice by the fraction r = c - floor(c) (an integral c is itself).
Expr nearest_index(const Expr& c, NearestMode mode) {
  Expr f = tir::call(tir::Intrinsic::kFloor, c);
  Expr r = c - f;
  Expr base = tir::cast(tir::i64(), f);
  auto up_if = [&](tir::CompareOp op, double t) {
    return base + tir::select(cmp(op, r, f64c(t)), i64c(1), i64c(0));
  };
  switch (mode) {
    case NearestMode::kRoundPreferFloor:
      return up_if(tir::CompareOp::kGt, 0.5);
    case NearestMode::kRoundPreferCeil:
      return up_if(tir::CompareOp::kGe, 0.5);
    case NearestMode::kFloor:
      return base;
    case NearestMode::kCeil:
      return up_if(tir::CompareOp::kGt, 0);
  }
  DYNVM_INTERNAL_CHECK(false, "unknown nearest mode");
  return base;
}

// Edge padding: an index outside the input reads its first or last element.
arith::Expr clamp(const arith::Expr& index, const arith::Expr& extent) {
  return arith::max(arith::min(index, extent - arith::Expr(1)), arith::Expr(0));
}

}  // namespace

ResizeMode resize_mode_from_string(const std::string& mode) {
  if (mode == "nearest") return ResizeMode::kNearest;
  if (mode == "linear") return ResizeMode::kLinear;
  user_error("resize: unsupported mode '", mode, "' (expected nearest or linear)");
}

NearestMode nearest_mode_from_string(const std::string& mode) {
  if (mode == "round_prefer_floor") return NearestMode::kRoundPreferFloor;
  if (mode == "round_prefer_ceil") return NearestMode::kRoundPreferCeil;
  if (mode == "floor") return NearestMode::kFloor;
  if (mode == "ceil") return NearestMode::kCeil;
  user_error("resize: unsupported nearest_mode '", mode,
             "' (expected round_prefer_floor, round_prefer_ceil, floor or ceil)");
}

CoordinateTransform coordinate_transform_from_string(const std::string& mode) {
  if (mode == "half_pixel") return CoordinateTransform::kHalfPixel;
  if (mode == "asymmetric") return CoordinateTransform::kAsymmetric;
  if (mode == "align_corners") return CoordinateTransform::kAlignCorners;
  if (mode == "pytorch_half_pixel") return CoordinateTransform::kPytorchHalfPixel;
  user_error("resize: unsupported coordinate_transformation_mode '", mode,
             "' (expected half_pixel, asymmetric, align_corners or pytorch_half_pixel)");
}

std::vector<arith::Expr> resize_output_shape(const TensorType& x, const ResizeAttrs& attrs) {
  std::vector<arith::Expr> shape;
  for (const DimPlan& p : plan_dims(x, attrs)) shape.push_back(p.out);
  return shape;
}

OpInstance resize(const TensorType& x, const ResizeAttrs& attrs) {
  std::vector<DimPlan> plans = plan_dims(x, attrs);
  bool linear = attrs.mode == ResizeMode::kLinear;
  if (linear && x.dtype == vm::DType::kBool) user_error("resize: linear mode does not take bool");
  std::vector<arith::Expr> shape;
  for (const DimPlan& p : plans) shape.push_back(p.out);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  CoordinateTransform transform = attrs.coordinate_transformation_mode;
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> at(i.begin(), i.end());
    // (var, value) of each resized dim's input index; the body is wrapped in their lets.
    std::vector<std::pair<arith::Var, Expr>> lets;
    std::vector<std::pair<size_t, Expr>> fractions;  // linear: (dim, c - floor(c))
    for (size_t d = 0; d < plans.size(); ++d) {
      if (plans[d].identity) continue;
      Expr c = source_coordinate(plans[d], i[d], transform);
      arith::Var v("src" + std::to_string(d));
      if (linear) {
        Expr f = tir::call(tir::Intrinsic::kFloor, c);
        lets.emplace_back(v, tir::cast(tir::i64(), f));
        fractions.emplace_back(d, c - f);
      } else {
        lets.emplace_back(v, nearest_index(c, attrs.nearest_mode));
      }
      at[d] = clamp(v, plans[d].in);
    }
    Expr body;
    if (!linear) {
      body = te::read(in, at);
    } else {
      // Sum over the 2^m corners of the weight (1 - r or r per dim) times the element.
      tir::DataType t = vm::is_floating(x.dtype) ? tir::DataType{x.dtype, 1} : tir::f64();
      auto cast_to = [](tir::DataType to, const Expr& e) {
        return e.type() == to ? e : tir::cast(to, e);
      };
      for (size_t corner = 0; corner < (size_t{1} << fractions.size()); ++corner) {
        std::vector<arith::Expr> idx = at;
        Expr w;
        for (size_t j = 0; j < fractions.size(); ++j) {
          auto [d, r] = fractions[j];
          bool upper = (corner >> j) & 1;
          if (upper) idx[d] = clamp(arith::Expr(lets[j].first) + arith::Expr(1), plans[d].in);
          Expr wd = cast_to(t, upper ? r : f64c(1) - r);
          w = w.defined() ? w * wd : wd;
        }
        Expr term = cast_to(t, te::read(in, idx));
        if (w.defined()) term = w * term;  // undefined when no dim is resized
        body = body.defined() ? body + term : term;
      }
      if (!vm::is_floating(x.dtype)) {
        body = tir::cast(tir::DataType{x.dtype, 1}, tir::call(tir::Intrinsic::kRound, body));
      }
    }
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
      body = tir::let_index(it->first, it->second, body);
    }
    return body;
  });
  return injective_op(
      std::string("resize_") + (linear ? "linear_" : "nearest_") + dtype_suffix(x.dtype), {in},
      out);
}

}  // namespace dynvm::ops
