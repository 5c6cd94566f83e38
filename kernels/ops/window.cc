// Sliding-window geometry shared by conv and pool (see window.h).
#include "kernels/ops/window.h"

#include <utility>

#include "kernels/arith/simplify.h"
#include "vm/error.h"

namespace dynvm::ops {

std::vector<int64_t> spatial_values(const std::vector<int64_t>& values, size_t rank,
                                    int64_t fallback, int64_t min_value, const std::string& op,
                                    const char* what) {
  if (values.empty()) return std::vector<int64_t>(rank, fallback);
  if (values.size() != rank) {
    user_error(op, ": ", what, " has ", values.size(), " values, want ", rank);
  }
  for (int64_t v : values) {
    if (v < min_value) user_error(op, ": ", what, " must be >= ", min_value, ", got ", v);
  }
  return values;
}

arith::Expr window_output_dim(const arith::Expr& in, const Window& w, size_t d) {
  int64_t span = w.dilations[d] * (w.kernel[d] - 1) + 1;
  return arith::simplify(
      arith::floordiv(in + (w.pad_begin(d) + w.pad_end(d) - span), w.strides[d]) + 1);
}

te::TensorRef pad_spatial(const te::TensorRef& x, const Window& w, double pad_value,
                          const arith::Expr& extra_end) {
  bool any = !extra_end.is_int_imm() || extra_end.int_value() != 0;
  for (int64_t p : w.pads) any |= p != 0;
  if (!any) return x;
  const std::vector<arith::Expr>& in = x->shape();
  std::vector<arith::Expr> shape = {in[0], in[1]};
  for (size_t d = 0; d < w.rank(); ++d) {
    arith::Expr extent = in[2 + d] + (w.pad_begin(d) + w.pad_end(d));
    if (d + 1 == w.rank()) extent = arith::simplify(extent + extra_end);
    shape.push_back(extent);
  }
  shape.insert(shape.end(), in.begin() + 2 + w.rank(), in.end());  // lanes: unpadded
  return te::compute("Pad", shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> idx = {i[0], i[1]};
    arith::Expr inside = arith::make_bool(true);
    for (size_t d = 0; d < w.rank(); ++d) {
      arith::Expr pos = i[2 + d] - w.pad_begin(d);
      const arith::Expr& extent = in[2 + d];
      inside =
          arith::logical_and(inside, arith::logical_and(arith::ge(pos, 0), arith::lt(pos, extent)));
      idx.push_back(arith::max(arith::min(pos, extent - 1), 0));
    }
    idx.insert(idx.end(), i.begin() + 2 + w.rank(), i.end());
    tir::Expr v = te::read(x, idx);
    return tir::select(tir::index_value(inside, tir::boolean()), v,
                       tir::make_const(v.type(), pad_value));
  });
}

namespace {

// Input row and column of tap (r, c) at output index i.
std::pair<arith::Expr, arith::Expr> tap_position(const te::Indices& i, const Window& w, int64_t r,
                                                 int64_t c) {
  return {i[2] * w.strides[0] + (r * w.dilations[0] - w.pad_begin(0)),
          i[3] * w.strides[1] + (c * w.dilations[1] - w.pad_begin(1))};
}

}  // namespace

arith::Expr window_tap_inside(const te::TensorRef& x, const te::Indices& i, const Window& w,
                              int64_t r, int64_t c) {
  const auto [y, col] = tap_position(i, w, r, c);
  return arith::logical_and(arith::logical_and(arith::ge(y, 0), arith::lt(y, x->shape()[2])),
                            arith::logical_and(arith::ge(col, 0), arith::lt(col, x->shape()[3])));
}

tir::Expr window_tap(const te::TensorRef& x, const te::Indices& i, const Window& w, int64_t r,
                     int64_t c, double pad_value) {
  const auto [y, col] = tap_position(i, w, r, c);
  const arith::Expr& h = x->shape()[2];
  const arith::Expr& wd = x->shape()[3];
  std::vector<arith::Expr> idx{i[0], i[1], arith::max(arith::min(y, h - 1), 0),
                               arith::max(arith::min(col, wd - 1), 0)};
  idx.insert(idx.end(), i.begin() + 4, i.end());  // a blocked tensor's lane
  tir::Expr v = te::read(x, idx);
  return tir::select(tir::index_value(window_tap_inside(x, i, w, r, c), tir::boolean()), v,
                     tir::make_const(v.type(), pad_value));
}

void check_output_dims(const std::string& op, const std::vector<arith::Expr>& shape) {
  for (size_t d = 2; d < shape.size(); ++d) {
    if (shape[d].is_int_imm() && shape[d].int_value() < 1) {
      user_error(op, ": output dim ", d, " is ", shape[d].int_value(),
                 " (window larger than input)");
    }
  }
}

std::vector<int64_t> constant_dims(const TensorType& t, size_t first, const std::string& op,
                                   const char* what) {
  std::vector<int64_t> out;
  for (size_t d = first; d < t.shape.size(); ++d) {
    if (!t.shape[d].is_int_imm()) {
      user_error(op, ": ", what, " must be constant (symbolic dim ", d, ")");
    }
    out.push_back(t.shape[d].int_value());
  }
  return out;
}

void check_float_input(const TensorType& t, const std::string& op, const char* what) {
  if (t.dtype != vm::DType::kFloat32 && t.dtype != vm::DType::kFloat64) {
    user_error(op, ": ", what, " must be f32 or f64, got ", vm::dtype_name(t.dtype));
  }
}

te::Stage& accumulate_at(te::Schedule& s, const te::TensorRef& acc, te::Stage& out,
                         const te::IterVarRef& at) {
  te::Stage& sa = s[acc];
  sa.compute_at(out, at);
  std::vector<te::IterVarRef> order;
  for (size_t r = 0; r < sa.num_reduce_axes(); ++r) order.push_back(sa.reduce_axis(r));
  for (size_t d = 0; d < sa.num_axes(); ++d) order.push_back(sa.axis(d));
  sa.reorder(order);
  sa.vectorize(sa.axis(sa.num_axes() - 1));
  return sa;
}

}  // namespace dynvm::ops
