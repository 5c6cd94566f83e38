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
  bool identity = false;      // out == in and every transformation maps x to x
  Expr scale;                 // f64: the given scale, or out / in
  int64_t integer_scale = 0;  // the given scale when it is an integer >= 2 (out == in * it)
};

// Whether nearest mode picks input index `i floordiv k` for output index i at an integer
// scale k >= 2, as the f64 reference does (so the kernel can index with integers: no f64
// floor, no clamp, since i < in * k). asymmetric + floor: floor(i / k). half_pixel with
// rounding: c = (i + 0.5) / k - 0.5, and c + 0.5 = (i + 0.5) / k is never an integer nor
// reaches floor(i / k) + 1, so both roundings of c give floor(i / k). pytorch_half_pixel is
// half_pixel except for a single output element, which reads 0 either way.
bool nearest_is_quotient(CoordinateTransform transform, NearestMode mode) {
  switch (transform) {
    case CoordinateTransform::kAsymmetric:
      return mode == NearestMode::kFloor;
    case CoordinateTransform::kHalfPixel:
    case CoordinateTransform::kPytorchHalfPixel:
      return mode == NearestMode::kRoundPreferFloor || mode == NearestMode::kRoundPreferCeil;
    default:
      return false;
  }
}

// Whether linear mode at an integer scale k >= 2 reads, for output index q*k + r, the
// neighbours q + f_r and q + f_r + 1 with weights fixed by the phase r: the coordinate is
// q + d_r with d_r = (r + 0.5) / k - 0.5 (half_pixel; pytorch_half_pixel too, whose single-
// element exception cannot occur at k >= 2) or r / k (asymmetric), so f_r = floor(d_r).
bool linear_is_periodic(CoordinateTransform transform) {
  return transform == CoordinateTransform::kHalfPixel ||
         transform == CoordinateTransform::kPytorchHalfPixel ||
         transform == CoordinateTransform::kAsymmetric;
}

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

// Identity needs a transformation that maps x to x at scale 1; tf_crop_and_resize's roi
// may crop a dim that keeps its size.
bool may_be_identity(const ResizeAttrs& a) {
  return a.coordinate_transformation_mode != CoordinateTransform::kTfCropAndResize;
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
      p.scale = f64c(s);
      p.identity = s == 1.0f && may_be_identity(a);
      p.out = s == 1.0f ? p.in : scaled_dim(p.in, s, d);
      if (s >= 2.0f && s == std::floor(s) && s <= 0x1p30f)
        p.integer_scale = static_cast<int64_t>(s);
      continue;
    }
    int64_t size = a.sizes[d];
    if (size < 0) user_error("resize: size ", d, " is negative (", size, ")");
    if (p.in.is_int_imm() && p.in.int_value() == size) {
      p.identity = may_be_identity(a);
      p.out = p.in;
      p.scale = f64c(1);
      continue;
    }
    if (!p.in.is_int_imm()) {
      user_error("resize: sizes need a static input dim ", d,
                 " (it is symbolic and could be empty; give scales instead)");
    }
    if (p.in.int_value() == 0) user_error("resize: input dim ", d, " is empty but size is ", size);
    p.out = arith::Expr(size);
    p.scale = f64c(static_cast<double>(size) / static_cast<double>(p.in.int_value()));
  }
  return plans;
}

// The input coordinate (f64) of output index i along a resized dim, as the ONNX reference
// computes it. `roi_start` / `roi_end`: tf_crop_and_resize's window of this dim.
Expr source_coordinate(const DimPlan& p, const arith::Var& i, CoordinateTransform mode,
                       const Expr& roi_start, const Expr& roi_end) {
  Expr x = as_f64(i);
  const Expr& scale = p.scale;
  Expr half_pixel = (x + f64c(0.5)) / scale - f64c(0.5);
  // A single output element sits at input 0 (align_corners would divide by zero).
  auto unless_single = [&](Expr e, Expr single) {
    if (p.out.is_int_imm()) return p.out.int_value() > 1 ? e : single;
    return tir::select(condition(arith::gt(p.out, 1)), e, single);
  };
  switch (mode) {
    case CoordinateTransform::kHalfPixel:
      return half_pixel;
    case CoordinateTransform::kAsymmetric:
      return x / scale;
    case CoordinateTransform::kPytorchHalfPixel:
      return unless_single(half_pixel, f64c(0));
    case CoordinateTransform::kAlignCorners:
      return unless_single(x * as_f64(p.in - arith::Expr(1)) / as_f64(p.out - arith::Expr(1)),
                           f64c(0));
    case CoordinateTransform::kTfCropAndResize: {
      Expr in1 = as_f64(p.in - arith::Expr(1));
      Expr width = roi_end - roi_start;
      Expr start = roi_start * in1;
      return unless_single(x * width * in1 / as_f64(p.out - arith::Expr(1)) + start,
                           width * in1 / f64c(2) + start);
    }
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

// Keys' cubic weights of the neighbours base - 1 .. base + 2 for r = c - base in (0, 1],
// as the reference writes them.
std::vector<Expr> cubic_weights(const Expr& r, double a) {
  Expr A = f64c(a);
  Expr r1 = r + f64c(1), s = f64c(1) - r, s1 = s + f64c(1);
  return {((A * r1 - f64c(5 * a)) * r1 + f64c(8 * a)) * r1 - f64c(4 * a),
          ((A + f64c(2)) * r - (A + f64c(3))) * r * r + f64c(1),
          ((A + f64c(2)) * s - (A + f64c(3))) * s * s + f64c(1),
          ((A * s1 - f64c(5 * a)) * s1 + f64c(8 * a)) * s1 - f64c(4 * a)};
}

// One neighbour of a resized dim: its (clamped) input index and weight (f64).
struct Tap {
  arith::Expr index;
  Expr weight;
};

const char* mode_name(ResizeMode m) {
  switch (m) {
    case ResizeMode::kNearest:
      return "nearest";
    case ResizeMode::kLinear:
      return "linear";
    case ResizeMode::kCubic:
      return "cubic";
  }
  return "?";
}

// Nearest upsampling of the last dim by an integer k: output column q*k + r reads input
// column q. The last axis split into (q, r), r unrolled outside q's vectors: each vector
// loads input columns q..q+15 contiguously and stores them k apart (one masked store of
// 16 k elements), where vectors over the output columns gathered every element (a [32,
// 128, 128] -> [32, 256, 256] upsample: 2.8 ms). Linear upsampling by k in its periodic
// transformations takes the same schedule: for each phase r, columns q + f_r and
// q + f_r + 1 with constant weights, contiguous between the borders loop_partition cuts off.
te::Schedule nearest_upsample_schedule(const std::vector<KnobSpec>& specs,
                                       const KnobValues& knobs, const te::TensorRef& out,
                                       int64_t k) {
  te::Schedule s = te::create_schedule({out});
  te::Stage& st = s[out];
  const size_t rank = st.num_axes();
  const int64_t width = knob_value(specs, knobs, "vector_width");
  if (width < 1) user_error("resize: vector_width must be positive, got ", width);
  auto [q, r] = st.split(st.axis(rank - 1), k);
  auto [qo, qi] = st.split(q, width);
  std::vector<te::IterVarRef> order;
  for (size_t d = 0; d + 1 < rank; ++d) order.push_back(st.axis(d));
  order.insert(order.end(), {qo, r, qi});
  st.reorder(order);
  st.unroll(r);
  if (width > 1) st.vectorize(qi);
  if (knob_value(specs, knobs, "parallel") != 0) {
    te::IterVarRef rows = rank > 1 ? st.axis(0) : qo;
    for (size_t d = 1; d + 1 < rank; ++d) rows = st.fuse(rows, st.axis(d));
    st.parallel(rows);
  }
  return s;
}

// The kernel over planned dims. `roi`: tf_crop_and_resize's window (defined for it);
// `guard`: coordinates come from values read at run time (any f32), so they are kept in
// [-2^40, 2^40] before becoming indices (a neighbour's +1 must not overflow).
OpInstance build(const std::string& name, const TensorType& x, const ResizeAttrs& attrs,
                 const std::vector<DimPlan>& plans, std::vector<te::TensorRef> inputs,
                 const te::TensorRef& in, const te::TensorRef& roi, bool guard) {
  const ResizeMode mode = attrs.mode;
  if (mode != ResizeMode::kNearest && x.dtype == vm::DType::kBool) {
    user_error("resize: ", mode_name(mode), " mode does not take bool");
  }
  const CoordinateTransform transform = attrs.coordinate_transformation_mode;
  const bool crop = transform == CoordinateTransform::kTfCropAndResize;
  if (crop && !roi) user_error("resize: tf_crop_and_resize needs roi");
  const auto rank = static_cast<int64_t>(plans.size());
  std::vector<arith::Expr> shape;
  for (const DimPlan& p : plans) shape.push_back(p.out);
  // Whether a resized dim reads by phase at its integer scale: output index q*k + r from
  // input q (nearest) or from q + f_r and q + f_r + 1 with r's weights (linear).
  auto by_phase = [&](const DimPlan& p) {
    if (p.identity || p.integer_scale == 0) return false;
    if (mode == ResizeMode::kNearest) return nearest_is_quotient(transform, attrs.nearest_mode);
    return mode == ResizeMode::kLinear && !guard && linear_is_periodic(transform);
  };
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> at(i.begin(), i.end());
    // (var, value) of each resized dim's input index; the body is wrapped in their lets.
    std::vector<std::pair<arith::Var, Expr>> lets;
    std::vector<std::pair<size_t, std::vector<Tap>>> taps;  // linear / cubic, per dim
    Expr outside;                                           // tf_crop_and_resize
    arith::Expr interior;  // the last dim's periodic neighbours lie inside the input (or undefined)
    for (size_t d = 0; d < plans.size(); ++d) {
      const DimPlan& p = plans[d];
      if (p.identity) continue;
      if (by_phase(p) && mode == ResizeMode::kNearest) {
        at[d] = arith::floordiv(i[d], p.integer_scale);
        continue;
      }
      if (by_phase(p)) {
        const int64_t k = p.integer_scale;
        const arith::Expr q = arith::floordiv(i[d], k), r = arith::floormod(i[d], k);
        const bool half = transform != CoordinateTransform::kAsymmetric;
        // f_r = floor(d_r) in integers: floor((2r + 1 - k) / 2k) for half_pixel.
        const arith::Expr f = half ? arith::floordiv(r * 2 + (1 - k), 2 * k) : arith::Expr(0);
        Expr delta = half ? (as_f64(r) + f64c(0.5)) / f64c(static_cast<double>(k)) - f64c(0.5)
                          : as_f64(r) / f64c(static_cast<double>(k));
        Expr w = delta - as_f64(f);
        const arith::Expr lo = arith::simplify(q + f), hi = arith::simplify(q + f + 1);
        taps.push_back({d, {{clamp(lo, p.in), f64c(1) - w}, {clamp(hi, p.in), w}}});
        if (d + 1 == plans.size()) {
          interior = arith::logical_and(arith::ge(lo, 0), arith::lt(hi, p.in));
        }
        continue;
      }
      Expr roi_start, roi_end;
      if (crop) {
        roi_start = tir::cast(tir::f64(), te::read(roi, std::vector<arith::Expr>{int64_t(d)}));
        roi_end = tir::cast(tir::f64(), te::read(roi, std::vector<arith::Expr>{rank + int64_t(d)}));
      }
      Expr c = source_coordinate(p, i[d], transform, roi_start, roi_end);
      if (crop) {
        // Not inside [0, in - 1] (a NaN too): the extrapolation value.
        Expr inside = tir::logical_and(cmp(tir::CompareOp::kGe, c, f64c(0)),
                                       cmp(tir::CompareOp::kLe, c, as_f64(p.in - arith::Expr(1))));
        Expr out_d = tir::logical_not(inside);
        outside = outside.defined() ? tir::logical_or(outside, out_d) : out_d;
      }
      if (guard) c = tir::max(tir::min(c, f64c(0x1p40)), f64c(-0x1p40));
      arith::Var v("src" + std::to_string(d));
      if (mode == ResizeMode::kNearest) {
        lets.emplace_back(v, nearest_index(c, attrs.nearest_mode));
        at[d] = clamp(v, p.in);
      } else if (mode == ResizeMode::kLinear) {
        Expr f = tir::call(tir::Intrinsic::kFloor, c);
        lets.emplace_back(v, tir::cast(tir::i64(), f));
        Expr r = c - f;
        taps.push_back({d, {{clamp(v, p.in), f64c(1) - r}, {clamp(v + 1, p.in), r}}});
      } else {
        // base = ceil(c) - 1, so r = c - base is in (0, 1]: an integral c is neighbour 2.
        Expr base = tir::call(tir::Intrinsic::kCeil, c) - f64c(1);
        lets.emplace_back(v, tir::cast(tir::i64(), base));
        std::vector<Expr> w = cubic_weights(c - base, attrs.cubic_coeff_a);
        if (attrs.exclude_outside) {
          Expr sum;
          for (int64_t k = 0; k < 4; ++k) {
            arith::Expr at_k = v + (k - 1);
            Expr inside = condition(arith::logical_and(arith::ge(at_k, 0), arith::lt(at_k, p.in)));
            w[k] = tir::select(inside, w[k], f64c(0));
            sum = sum.defined() ? sum + w[k] : w[k];
          }
          for (Expr& wk : w) wk = wk / sum;
        }
        std::vector<Tap> t;
        for (int64_t k = 0; k < 4; ++k) t.push_back({clamp(v + (k - 1), p.in), w[k]});
        taps.emplace_back(d, std::move(t));
      }
    }
    Expr body;
    if (mode == ResizeMode::kNearest) {
      body = te::read(in, at);
    } else {
      // Sum over every combination of one neighbour per dim (the first dim's varying
      // fastest) of the weights' product times the element. Linear weighs in the data's
      // floating type, cubic in f64; integers in f64, rounded half to even.
      tir::DataType t = mode == ResizeMode::kLinear && vm::is_floating(x.dtype)
                            ? tir::DataType{x.dtype, 1}
                            : tir::f64();
      auto cast_to = [](tir::DataType to, const Expr& e) {
        return e.type() == to ? e : tir::cast(to, e);
      };
      size_t combinations = 1;
      for (const auto& [d, list] : taps) combinations *= list.size();
      for (size_t combination = 0; combination < combinations; ++combination) {
        std::vector<arith::Expr> idx = at;
        Expr w;
        size_t rest = combination;
        for (const auto& [d, list] : taps) {
          const Tap& tap = list[rest % list.size()];
          rest /= list.size();
          idx[d] = tap.index;
          Expr wd = cast_to(t, tap.weight);
          w = w.defined() ? w * wd : wd;
        }
        Expr term = cast_to(t, te::read(in, idx));
        if (w.defined()) term = w * term;  // undefined when no dim is resized
        body = body.defined() ? body + term : term;
      }
      // The same sum either way: the select is the guard by which loop_partition cuts off
      // the borders, and inside them, where the guard holds, the last dim's clamps simplify
      // away and its columns load contiguously (select evaluates both sides, so neither
      // may read outside the input).
      if (interior.defined()) body = tir::select(condition(interior), body, body);
      if (!vm::is_floating(x.dtype)) {
        body = tir::cast(tir::DataType{x.dtype, 1}, tir::call(tir::Intrinsic::kRound, body));
      } else {
        body = cast_to(tir::DataType{x.dtype, 1}, body);
      }
    }
    if (outside.defined()) {
      body = tir::select(outside, tir::make_const(body.type(), attrs.extrapolation_value), body);
    }
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
      body = tir::let_index(it->first, it->second, body);
    }
    return body;
  });
  OpInstance op =
      injective_op(name + mode_name(mode) + "_" + dtype_suffix(x.dtype), std::move(inputs), out);
  if (by_phase(plans.back())) {
    op.schedule = [specs = op.knobs, out, k = plans.back().integer_scale](const KnobValues& knobs) {
      return nearest_upsample_schedule(specs, knobs, out, k);
    };
  }
  return op;
}

te::TensorRef roi_placeholder(const TensorType* roi, const ResizeAttrs& attrs, size_t rank) {
  if (attrs.coordinate_transformation_mode != CoordinateTransform::kTfCropAndResize) return {};
  if (roi == nullptr) user_error("resize: tf_crop_and_resize needs roi");
  if (roi->shape.size() != 1 || !roi->shape[0].is_int_imm() ||
      roi->shape[0].int_value() != static_cast<int64_t>(2 * rank) || !vm::is_floating(roi->dtype)) {
    user_error("resize: roi must be a float vector of ", 2 * rank, " elements");
  }
  return te::placeholder("roi", roi->shape, roi->dtype);
}

}  // namespace

ResizeMode resize_mode_from_string(const std::string& mode) {
  if (mode == "nearest") return ResizeMode::kNearest;
  if (mode == "linear") return ResizeMode::kLinear;
  if (mode == "cubic") return ResizeMode::kCubic;
  user_error("resize: unsupported mode '", mode, "' (expected nearest, linear or cubic)");
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
  if (mode == "tf_crop_and_resize") return CoordinateTransform::kTfCropAndResize;
  user_error("resize: unsupported coordinate_transformation_mode '", mode,
             "' (expected half_pixel, asymmetric, align_corners, pytorch_half_pixel or "
             "tf_crop_and_resize)");
}

std::vector<arith::Expr> resize_output_shape(const TensorType& x, const ResizeAttrs& attrs) {
  std::vector<arith::Expr> shape;
  for (const DimPlan& p : plan_dims(x, attrs)) shape.push_back(p.out);
  return shape;
}

OpInstance resize(const TensorType& x, const ResizeAttrs& attrs, const TensorType* roi) {
  std::vector<DimPlan> plans = plan_dims(x, attrs);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef roi_in = roi_placeholder(roi, attrs, plans.size());
  std::vector<te::TensorRef> inputs{in};
  if ((roi_in != nullptr)) inputs.push_back(roi_in);
  return build("resize_", x, attrs, plans, inputs, in, roi_in, /*guard=*/(roi_in != nullptr));
}

OpInstance resize_at_run_time(const TensorType& x, const ResizeAttrs& attrs, const TensorType* roi,
                              const ResizeAtRunTime& run_time) {
  const size_t rank = x.shape.size();
  if (rank == 0) user_error("resize: the input must have rank >= 1");
  if (run_time.shape.size() != rank || run_time.kept.size() != rank) {
    user_error("resize: an output of rank ", run_time.shape.size(), " for ", rank);
  }
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef roi_in = roi_placeholder(roi, attrs, rank);
  std::vector<te::TensorRef> inputs{in};
  if ((roi_in != nullptr)) inputs.push_back(roi_in);
  te::TensorRef scales;
  if (run_time.scales != nullptr) {
    const TensorType& s = *run_time.scales;
    if (s.shape.size() != 1 || !s.shape[0].is_int_imm() ||
        s.shape[0].int_value() != static_cast<int64_t>(rank) || !vm::is_floating(s.dtype)) {
      user_error("resize: scales must be a float vector of ", rank, " elements");
    }
    scales = te::placeholder("scales", s.shape, s.dtype);
    inputs.push_back(scales);
  }
  std::vector<DimPlan> plans(rank);
  for (size_t d = 0; d < rank; ++d) {
    DimPlan& p = plans[d];
    p.in = x.shape[d];
    p.identity = run_time.kept[d] && may_be_identity(attrs);
    // A kept dim is the input's (one symbol fewer to bind).
    p.out = run_time.kept[d] ? p.in : run_time.shape[d];
    p.scale = (scales != nullptr)
                  ? tir::cast(tir::f64(), te::read(scales, std::vector<arith::Expr>{int64_t(d)}))
                  : as_f64(p.out) / as_f64(p.in);
  }
  return build("resize_rt_", x, attrs, plans, inputs, in, roi_in, /*guard=*/true);
}

OpInstance resize_output_sizes(const TensorType& x, const TensorType& scales) {
  const auto rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) user_error("resize: the input must have rank >= 1");
  if (scales.shape.size() != 1 || !scales.shape[0].is_int_imm() ||
      scales.shape[0].int_value() != rank || !vm::is_floating(scales.dtype)) {
    user_error("resize: scales must be a float vector of ", rank, " elements");
  }
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);  // only its dims are read
  te::TensorRef s = te::placeholder("scales", scales.shape, scales.dtype);
  te::TensorRef out = te::compute("N", {arith::Expr(rank)}, [&](const te::Indices& i) {
    arith::Expr dim = x.shape[static_cast<size_t>(rank - 1)];
    for (int64_t d = rank - 1; d-- > 0;) {
      dim = arith::select(arith::eq(i[0], d), x.shape[static_cast<size_t>(d)], dim);
    }
    Expr scale = tir::cast(tir::f64(), te::read(s, std::vector<arith::Expr>{i[0]}));
    Expr n = tir::call(tir::Intrinsic::kFloor, as_f64(dim) * scale);
    // False for a NaN too.
    Expr valid = tir::logical_and(cmp(tir::CompareOp::kGt, scale, f64c(0)),
                                  cmp(tir::CompareOp::kLt, n, f64c(0x1p62)));
    return tir::cast(tir::i64(), tir::select(valid, n, f64c(-1)));
  });
  return injective_op("resize_output_sizes_" + dtype_suffix(scales.dtype), {in, s}, out);
}

}  // namespace dynvm::ops
