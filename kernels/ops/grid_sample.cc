// GridSample (see grid_sample.h): per output element, each grid coordinate unnormalized
// (and for bilinear / nearest padded) as PyTorch's grid_sampler_compute_source_index, then
// the neighbours read with their weights.
#include "kernels/ops/grid_sample.h"

#include <cmath>

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using tir::Expr;

struct Sampler {
  tir::DataType t;
  GridPadding padding;
  bool align_corners;

  Expr c(double v) const { return tir::make_const(t, v); }
  Expr floor(const Expr& e) const { return tir::call(tir::Intrinsic::kFloor, e); }
  Expr clip(const Expr& e, const Expr& size) const {
    return tir::min(tir::max(e, c(0)), size - c(1));
  }
  // [-1, 1] -> pixel coordinates along a dim of `size` elements.
  Expr unnormalize(const Expr& coord, const Expr& size) const {
    if (align_corners) return (coord + c(1)) / c(2) * (size - c(1));
    return ((coord + c(1)) * size - c(1)) / c(2);
  }
  // PyTorch's reflect_coordinates over [twice_low / 2, twice_high / 2].
  Expr reflect(const Expr& in, const Expr& twice_low, const Expr& twice_high) const {
    Expr low = twice_low / c(2), span = (twice_high - twice_low) / c(2);
    Expr safe_span = tir::select(tir::compare(tir::CompareOp::kEq, span, c(0)), c(1), span);
    Expr d = tir::call(tir::Intrinsic::kAbs, in - low);
    Expr flips = floor(d / safe_span);
    Expr extra = d - flips * safe_span;
    Expr even = tir::compare(tir::CompareOp::kEq, flips - c(2) * floor(flips / c(2)), c(0));
    Expr reflected = tir::select(even, extra + low, span - extra + low);
    return tir::select(tir::compare(tir::CompareOp::kEq, span, c(0)), c(0), reflected);
  }
  // The padding applied to a coordinate (border, reflection); zeros leaves it.
  Expr pad(const Expr& coord, const Expr& size) const {
    switch (padding) {
      case GridPadding::kZeros:
        return coord;
      case GridPadding::kBorder:
        return clip(coord, size);
      case GridPadding::kReflection: {
        Expr r = align_corners ? reflect(coord, c(0), c(2) * (size - c(1)))
                               : reflect(coord, c(-1), c(2) * size - c(1));
        return clip(r, size);
      }
    }
    return coord;
  }
  // Far enough outside that every neighbour is outside too, and small enough for an int64.
  Expr bounded(const Expr& coord, const Expr& size) const {
    return tir::min(tir::max(coord, c(-4)), size + c(4));
  }
};

arith::Expr inside(const arith::Expr& v, const arith::Expr& n) {
  return arith::logical_and(arith::ge(v, 0), arith::lt(v, n));
}

}  // namespace

GridSampleMode grid_sample_mode(const std::string& name) {
  if (name == "bilinear" || name == "linear") return GridSampleMode::kBilinear;
  if (name == "nearest") return GridSampleMode::kNearest;
  if (name == "bicubic" || name == "cubic") return GridSampleMode::kBicubic;
  user_error("grid_sample: unknown mode '", name, "' (expected bilinear, nearest or bicubic)");
}

GridPadding grid_padding(const std::string& name) {
  if (name == "zeros") return GridPadding::kZeros;
  if (name == "border") return GridPadding::kBorder;
  if (name == "reflection") return GridPadding::kReflection;
  user_error("grid_sample: unknown padding_mode '", name,
             "' (expected zeros, border or reflection)");
}

OpInstance grid_sample(const TensorType& x, const TensorType& grid, GridSampleMode mode,
                       GridPadding padding, bool align_corners) {
  if (x.shape.size() != 4) user_error("grid_sample: the input must be 4-D (N x C x H x W)");
  if (grid.shape.size() != 4) user_error("grid_sample: the grid must be 4-D (N x H x W x 2)");
  if (!vm::is_floating(x.dtype) || grid.dtype != x.dtype) {
    user_error("grid_sample: the input and grid must share one float dtype");
  }
  if (grid.shape[3].is_int_imm() && grid.shape[3].int_value() != 2) {
    user_error("grid_sample: the grid's last dim must be 2");
  }
  const Sampler s{tir::DataType{x.dtype, 1}, padding, align_corners};
  const arith::Expr &h = x.shape[2], &w = x.shape[3];
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef g =
      te::placeholder("Grid", {grid.shape[0], grid.shape[1], grid.shape[2], 2}, grid.dtype);
  const std::vector<arith::Expr> shape = {x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]};
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    const Expr wf = tir::index_value(w, s.t), hf = tir::index_value(h, s.t);
    Expr ix = s.unnormalize(te::read(g, {i[0], i[2], i[3], arith::Expr(0)}), wf);
    Expr iy = s.unnormalize(te::read(g, {i[0], i[2], i[3], arith::Expr(1)}), hf);
    if (mode != GridSampleMode::kBicubic) {
      ix = s.bounded(s.pad(ix, wf), wf);
      iy = s.bounded(s.pad(iy, hf), hf);
    }
    // The element at (row, col), 0 outside.
    auto at = [&](const arith::Expr& row, const arith::Expr& col) {
      auto clamp = [](const arith::Expr& v, const arith::Expr& n) {
        return arith::max(arith::min(v, n - arith::Expr(1)), arith::Expr(0));
      };
      Expr v = te::read(in, {i[0], i[1], clamp(row, h), clamp(col, w)});
      return tir::select(
          tir::index_value(arith::logical_and(inside(row, h), inside(col, w)), tir::boolean()), v,
          s.c(0));
    };
    auto to_index = [](const Expr& e) { return tir::cast(tir::i64(), e); };
    arith::Var x0("x0"), y0("y0");
    if (mode == GridSampleMode::kNearest) {
      Expr rx = tir::call(tir::Intrinsic::kRound, ix), ry = tir::call(tir::Intrinsic::kRound, iy);
      return tir::let_index(x0, to_index(rx), tir::let_index(y0, to_index(ry), at(y0, x0)));
    }
    const Expr fx = s.floor(ix), fy = s.floor(iy);
    const Expr tx = ix - fx, ty = iy - fy;
    Expr body;
    if (mode == GridSampleMode::kBilinear) {
      const arith::Expr x1 = arith::Expr(x0) + arith::Expr(1),
                        y1 = arith::Expr(y0) + arith::Expr(1);
      body = at(y0, x0) * (s.c(1) - tx) * (s.c(1) - ty) + at(y0, x1) * tx * (s.c(1) - ty) +
             at(y1, x0) * (s.c(1) - tx) * ty + at(y1, x1) * tx * ty;
    } else {
      // Cubic convolution weights (A = -0.75) of the neighbours at -1, 0, 1, 2.
      const double a = -0.75;
      auto near = [&](const Expr& d) {  // |d| <= 1
        return ((s.c(a + 2) * d - s.c(a + 3)) * d * d) + s.c(1);
      };
      auto far = [&](const Expr& d) {  // 1 < |d| < 2
        return ((s.c(a) * d - s.c(5 * a)) * d + s.c(8 * a)) * d - s.c(4 * a);
      };
      auto weights = [&](const Expr& f) {
        return std::vector<Expr>{far(f + s.c(1)), near(f), near(s.c(1) - f), far(s.c(2) - f)};
      };
      const std::vector<Expr> wx = weights(tx), wy = weights(ty);
      for (int64_t r = 0; r < 4; ++r) {
        Expr row;
        for (int64_t q = 0; q < 4; ++q) {
          // The neighbour's coordinates padded, as PyTorch's get_value_bounded.
          arith::Var cx("cx" + std::to_string(q)), cy("cy" + std::to_string(r));
          Expr px = s.bounded(s.pad(fx + s.c(static_cast<double>(q - 1)), wf), wf);
          Expr py = s.bounded(s.pad(fy + s.c(static_cast<double>(r - 1)), hf), hf);
          Expr v = tir::let_index(cx, to_index(px), tir::let_index(cy, to_index(py), at(cy, cx)));
          row = row.defined() ? row + v * wx[static_cast<size_t>(q)] : v * wx[0];
        }
        body = body.defined() ? body + row * wy[static_cast<size_t>(r)] : row * wy[0];
      }
      return body;
    }
    return tir::let_index(x0, to_index(fx), tir::let_index(y0, to_index(fy), body));
  });
  const char* mode_name = mode == GridSampleMode::kBilinear  ? "bilinear"
                          : mode == GridSampleMode::kNearest ? "nearest"
                                                             : "bicubic";
  return injective_op(str_cat("grid_sample_", mode_name, "_", static_cast<int>(padding),
                              align_corners ? "_ac_" : "_", dtype_suffix(x.dtype)),
                      {in, g}, out);
}

}  // namespace dynvm::ops
