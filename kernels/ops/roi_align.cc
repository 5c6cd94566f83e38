// RoiAlign (see roi_align.h): a reduction S over each bin's sample grid, computed at each
// bin of Y (all channels) or each element, Y dividing by the sample count (avg) or giving an
// empty grid 0 (max). The roi's geometry is recomputed from the rois tensor wherever it is
// needed (a few loads and flops that LLVM hoists out of the inner loops): ORT's pre_calc
// table of weights would need a buffer sized by the data.
#include "kernels/ops/roi_align.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using tir::Expr;

// One roi's box in pixels, as ORT's RoiAlignForward computes it.
struct RoiBox {
  Expr start_y, start_x;  // the roi's top-left corner
  Expr bin_h, bin_w;      // one output bin's size
};

struct RoiAlignBuilder {
  const RoiAlignAttrs& attrs;
  tir::DataType t;
  te::TensorRef rois;
  // X is not empty: otherwise no sample is taken (a read would leave X).
  arith::Expr image_exists;

  Expr c(double v) const { return tir::make_const(t, v); }
  Expr as_float(const arith::Expr& e) const { return tir::index_value(e, t); }

  RoiBox box(const arith::Expr& roi) const {
    const bool half_pixel = attrs.coordinates == RoiCoordinates::kHalfPixel;
    const Expr scale = c(attrs.spatial_scale), offset = c(half_pixel ? 0.5 : 0.0);
    auto corner = [&](int64_t k) { return te::read(rois, {roi, arith::Expr(k)}) * scale - offset; };
    const Expr x1 = corner(0), y1 = corner(1);
    Expr width = corner(2) - x1, height = corner(3) - y1;
    if (!half_pixel) {  // malformed rois are taken as 1 x 1
      width = tir::max(width, c(1));
      height = tir::max(height, c(1));
    }
    return {y1, x1, height / c(static_cast<double>(attrs.output_height)),
            width / c(static_cast<double>(attrs.output_width))};
  }

  // The samples per bin side: sampling_ratio, or ceil(bin size) of this roi (clamped to
  // >= 0, as an extent must be; ORT's negative count takes no sample either). None for an
  // empty X.
  Expr grid_count(const Expr& bin_size) const {
    Expr count = attrs.sampling_ratio > 0
                     ? tir::make_const_int(tir::i64(), attrs.sampling_ratio)
                     : tir::max(tir::cast(tir::i64(), tir::call(tir::Intrinsic::kCeil, bin_size)),
                                tir::make_const_int(tir::i64(), 0));
    return tir::select(tir::index_value(image_exists, tir::boolean()), count,
                       tir::make_const_int(tir::i64(), 0));
  }

  // `body` with the grid counts of `roi` let-bound to grid_h, grid_w.
  Expr with_grid(const arith::Expr& roi, const arith::Var& grid_h, const arith::Var& grid_w,
                 const Expr& body) const {
    const RoiBox b = box(roi);
    return tir::let_index(grid_h, grid_count(b.bin_h),
                          tir::let_index(grid_w, grid_count(b.bin_w), body));
  }
};

arith::Expr clamp(const arith::Expr& v, const arith::Expr& n) {
  return arith::max(arith::min(v, n - arith::Expr(1)), arith::Expr(0));
}

}  // namespace

RoiAlignMode roi_align_mode(const std::string& name) {
  if (name == "avg") return RoiAlignMode::kAvg;
  if (name == "max") return RoiAlignMode::kMax;
  user_error("roi_align: unknown mode '", name, "' (expected avg or max)");
}

RoiCoordinates roi_coordinates(const std::string& name) {
  if (name == "half_pixel") return RoiCoordinates::kHalfPixel;
  if (name == "output_half_pixel") return RoiCoordinates::kOutputHalfPixel;
  user_error("roi_align: unknown coordinate_transformation_mode '", name,
             "' (expected half_pixel or output_half_pixel)");
}

OpInstance roi_align(const TensorType& x, const TensorType& rois, const TensorType& batch_indices,
                     const RoiAlignAttrs& attrs) {
  if (x.shape.size() != 4) user_error("roi_align: X must be 4-D (N x C x H x W)");
  if (x.dtype != vm::DType::kFloat32 && x.dtype != vm::DType::kFloat64) {
    user_error("roi_align: X must be f32 or f64, got ", vm::dtype_name(x.dtype));
  }
  if (rois.shape.size() != 2 || rois.dtype != x.dtype) {
    user_error("roi_align: rois must be a 2-D tensor [num_rois, 4] of X's dtype");
  }
  if (rois.shape[1].is_int_imm() && rois.shape[1].int_value() != 4) {
    user_error("roi_align: rois must have 4 columns (x1, y1, x2, y2), got ",
               rois.shape[1].int_value());
  }
  if (batch_indices.shape.size() != 1 ||
      (batch_indices.dtype != vm::DType::kInt64 && batch_indices.dtype != vm::DType::kInt32)) {
    user_error("roi_align: batch_indices must be a 1-D int64 tensor [num_rois]");
  }
  if (attrs.output_height < 1 || attrs.output_width < 1) {
    user_error("roi_align: output_height and output_width must be positive, got ",
               attrs.output_height, " x ", attrs.output_width);
  }
  if (attrs.sampling_ratio < 0) {
    user_error("roi_align: sampling_ratio must be >= 0, got ", attrs.sampling_ratio);
  }

  const arith::Expr &images = x.shape[0], &h = x.shape[2], &w = x.shape[3];
  // One extent for rois and batch_indices: the kernel checks their dims agree at run time.
  const arith::Expr num_rois = rois.shape[0];
  te::TensorRef X = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef R = te::placeholder("rois", {num_rois, arith::Expr(4)}, x.dtype);
  te::TensorRef B = te::placeholder("batch_indices", {num_rois}, batch_indices.dtype);
  const RoiAlignBuilder rb{
      attrs, tir::DataType{x.dtype, 1}, R,
      arith::logical_and(arith::gt(images, 0),
                         arith::logical_and(arith::gt(h, 0), arith::gt(w, 0)))};
  const std::vector<arith::Expr> shape = {num_rois, x.shape[1], arith::Expr(attrs.output_height),
                                          arith::Expr(attrs.output_width)};
  const bool avg = attrs.mode == RoiAlignMode::kAvg;

  arith::Var grid_h("grid_h"), grid_w("grid_w");
  const te::IterVar ry = te::reduce_axis(grid_h, "ry"), rx = te::reduce_axis(grid_w, "rx");
  te::TensorRef samples = te::compute("S", shape, [&](const te::Indices& i) {
    const RoiBox b = rb.box(i[0]);
    // Sample (ry, rx) of bin (i[2], i[3]); ORT's order of operations.
    auto coordinate = [&](const Expr& start, const Expr& bin, const arith::Expr& cell,
                          const te::IterVar& r, const arith::Var& grid) {
      return start + rb.as_float(cell) * bin +
             (rb.as_float(r.var) + rb.c(0.5)) * bin / rb.as_float(grid);
    };
    const Expr sample_y = coordinate(b.start_y, b.bin_h, i[2], ry, grid_h);
    const Expr sample_x = coordinate(b.start_x, b.bin_w, i[3], rx, grid_w);
    const Expr inside = tir::logical_and(
        tir::logical_and(tir::compare(tir::CompareOp::kGe, sample_y, rb.c(-1)),
                         tir::compare(tir::CompareOp::kLe, sample_y, rb.as_float(h))),
        tir::logical_and(tir::compare(tir::CompareOp::kGe, sample_x, rb.c(-1)),
                         tir::compare(tir::CompareOp::kLe, sample_x, rb.as_float(w))));
    const Expr yc = tir::max(sample_y, rb.c(0)), xc = tir::max(sample_x, rb.c(0));
    // y0 / x0: the truncated coordinates; the neighbours are clamped into the image, and a
    // coordinate at or past the last row / column sits exactly on it (weight 0 beyond).
    arith::Var y0("y0"), x0("x0"), image("image");
    const arith::Expr y_low = clamp(y0, h), y_high = clamp(arith::Expr(y0) + arith::Expr(1), h);
    const arith::Expr x_low = clamp(x0, w), x_high = clamp(arith::Expr(x0) + arith::Expr(1), w);
    auto fraction = [&](const Expr& coord, const arith::Var& v, const arith::Expr& size) {
      return tir::select(tir::index_value(arith::ge(v, size - arith::Expr(1)), tir::boolean()),
                         rb.c(0), coord - rb.as_float(v));
    };
    const Expr ly = fraction(yc, y0, h), lx = fraction(xc, x0, w);
    const Expr hy = rb.c(1) - ly, hx = rb.c(1) - lx;
    const arith::Expr img = clamp(image, images);
    auto at = [&](const arith::Expr& row, const arith::Expr& col) {
      return te::read(X, {img, i[1], row, col});
    };
    const Expr p1 = hy * hx * at(y_low, x_low), p2 = hy * lx * at(y_low, x_high);
    const Expr p3 = ly * hx * at(y_high, x_low), p4 = ly * lx * at(y_high, x_high);
    const Expr value = avg ? p1 + p2 + p3 + p4 : tir::max(tir::max(tir::max(p1, p2), p3), p4);
    const Expr sample = tir::let_index(
        image, tir::cast(tir::i64(), te::read(B, {i[0]})),
        tir::let_index(
            y0, tir::cast(tir::i64(), yc),
            tir::let_index(x0, tir::cast(tir::i64(), xc), tir::select(inside, value, rb.c(0)))));
    const Expr reduced = avg ? te::sum(sample, {ry, rx}) : te::max_reduce(sample, {ry, rx});
    return rb.with_grid(i[0], grid_h, grid_w, reduced);
  });

  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    arith::Var gh("gh"), gw("gw");
    const arith::Expr count = arith::Expr(gh) * arith::Expr(gw);
    const Expr s = te::read(samples, {i.begin(), i.end()});
    const Expr y =
        avg ? s / rb.as_float(arith::max(count, arith::Expr(1)))
            : tir::select(tir::index_value(arith::gt(count, 0), tir::boolean()), s, rb.c(0));
    return rb.with_grid(i[0], gh, gw, y);
  });

  OpInstance op;
  op.name = str_cat(
      "roi_align_", avg ? "avg" : "max",
      attrs.coordinates == RoiCoordinates::kHalfPixel ? "_half_pixel_" : "_output_half_pixel_",
      dtype_suffix(x.dtype));
  op.inputs = {X, R, B};
  op.outputs = {out};
  // share_samples 1: the channel loop inside each bin's sample loops, so a sample's
  // coordinates and weights (ORT's pre_calc) are computed once for every channel; 0: the
  // samples of one output element at a time (fewer loops when channels are few).
  op.knobs = {KnobSpec{"parallel", {0, 1}, reduction_knobs(shape)[0].default_value},
              KnobSpec{"share_samples", {0, 1}, 1}};
  op.schedule = [out, samples, specs = op.knobs](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({out});
    te::Stage& so = s[out];
    te::Stage& ss = s[samples];
    const bool share = knob_value(specs, knobs, "share_samples") != 0;
    // The bins (roi, bin row, bin column) or the output rows (roi, channel, bin row) in
    // parallel; the samples summed into a buffer of the channels, or a scalar, at them.
    if (share) so.reorder({so.axis(0), so.axis(2), so.axis(3), so.axis(1)});
    const te::IterVarRef last = share ? so.axis(3) : so.axis(2);
    te::IterVarRef outer = so.fuse(so.fuse(so.axis(0), share ? so.axis(2) : so.axis(1)), last);
    if (knob_value(specs, knobs, "parallel") != 0) so.parallel(outer);
    ss.compute_at(so, share ? outer : so.axis(3));
    if (share) {
      ss.reorder(
          {ss.axis(0), ss.axis(2), ss.axis(3), ss.reduce_axis(0), ss.reduce_axis(1), ss.axis(1)});
    }
    return s;
  };
  return op;
}

}  // namespace dynvm::ops
