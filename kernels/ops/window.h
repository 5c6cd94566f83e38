// Sliding-window geometry shared by conv.cc and pool.cc: per-spatial-dim attributes with
// their ONNX defaults, output sizes as arith expressions, and the padded copy of an input
// that lets a window's reads index affinely (so its loops vectorize).
#pragma once

#include <string>
#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

// One window per spatial dim, every field filled (pads: begins then ends).
struct Window {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> pads;
  std::vector<int64_t> dilations;
  size_t rank() const { return kernel.size(); }
  int64_t pad_begin(size_t d) const { return pads[d]; }
  int64_t pad_end(size_t d) const { return pads[rank() + d]; }
};

// `values` for `rank` spatial dims: empty gives `fallback` everywhere; otherwise `rank`
// values (`2 * rank` for pads) each >= `min_value`, else a UserError naming op and what.
std::vector<int64_t> spatial_values(const std::vector<int64_t>& values, size_t rank,
                                    int64_t fallback, int64_t min_value, const std::string& op,
                                    const char* what);

// floordiv(in + pad_begin + pad_end - dilation*(kernel-1) - 1, stride) + 1.
arith::Expr window_output_dim(const arith::Expr& in, const Window& w, size_t d);

// x ([N, C, spatial..., lanes...]: a blocked tensor's lanes pass through) with the window's pads
// around its spatial dims, `pad_value` outside, and `extra_end` more elements after the last dim
// (conv's rounded-up width); x itself when there is nothing to add. The reads are clamped into
// range: select evaluates both of its sides.
te::TensorRef pad_spatial(const te::TensorRef& x, const Window& w, double pad_value,
                          const arith::Expr& extra_end = arith::make_int(0));

// Tap (r, c) of a 2-D `win` at output index i ([n, c, oh, ow], or a blocked tensor's [n, block,
// oh, ow, lane]) of X: the padded input inlined, `inside ? X[clamped] : pad_value`, a select
// that loop_partition removes from the interior rows and columns. The reads of windowed ops
// whose taps are written out (no reduction loop): blocked depthwise convs, pools.
tir::Expr window_tap(const te::TensorRef& x, const te::Indices& i, const Window& w, int64_t r,
                     int64_t c, double pad_value);
// Whether that tap is inside X.
arith::Expr window_tap_inside(const te::TensorRef& x, const te::Indices& i, const Window& w,
                              int64_t r, int64_t c);

// A UserError naming op when a static dim of `shape` from 2 on is below 1: the window does
// not fit the input at all.
void check_output_dims(const std::string& op, const std::vector<arith::Expr>& shape);

// The dims of `t` from `first` on as constants, else a UserError naming op and what.
std::vector<int64_t> constant_dims(const TensorType& t, size_t first, const std::string& op,
                                   const char* what);

// f32 / f64 only, else a UserError.
// The register accumulator `acc` of a windowed op computed at loop `at` of output stage
// `out`: its reduction (window) loops outermost, its data loops inside, the last one
// vectorized. Returns the stage for op-specific unrolling.
te::Stage& accumulate_at(te::Schedule& s, const te::TensorRef& acc, te::Stage& out,
                         const te::IterVarRef& at);

void check_float_input(const TensorType& t, const std::string& op, const char* what);

}  // namespace dynvm::ops
