// Channel-blocked convolutions and the layout changes around them (see conv_blocked.h).
#include "kernels/ops/conv_blocked.h"

#include <functional>
#include <string>
#include <utility>

#include "kernels/arith/simplify.h"
#include "kernels/ops/schedules.h"
#include "kernels/ops/window.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using te::Indices;
using te::TensorRef;

arith::Expr I(int64_t v) { return arith::make_int(v); }

// Channel blocks enough to share among the threads as a parallel loop.
constexpr int64_t kManyBlocks = 8;

// A blocked tensor's channel blocks and spatial dims, checked.
struct BlockedShape {
  arith::Expr n, h, w;
  int64_t blocks = 0;
};

BlockedShape blocked_shape(const TensorType& xb, const char* op) {
  check_float_input(xb, op, "X");
  const auto& s = xb.shape;
  if (s.size() != 5 || !s[4].is_int_imm() || s[4].int_value() != kChannelBlock ||
      !s[1].is_int_imm() || s[1].int_value() < 1) {
    user_error(op, ": X must be [N, channel blocks, H, W, ", kChannelBlock, "]");
  }
  return {s[0], s[2], s[3], s[1].int_value()};
}

// The ow_block positions x oc_block output blocks register tile of the pointwise conv.
std::vector<KnobSpec> pointwise_knobs(int64_t out_blocks, const std::vector<arith::Expr>& out) {
  // 8 positions x 2 blocks: 16 accumulators, each broadcast input lane feeding two FMAs
  // (measured 114 GFLOP/s at 56x56, 64 -> 64 channels, as the NCHW flat template).
  const int64_t oc_default = out_blocks % 2 == 0 ? 2 : 1;
  return {{"oc_block", {1, 2, 4}, oc_default},
          {"ow_block", {4, 8, 16}, 8},
          reduction_knobs(out).front()};  // parallel
}

// The instance of a blocked conv computing Y: its name, inputs (the epilogue's after W and B)
// and output; the caller adds knobs and the schedule.
OpInstance blocked_conv_op(std::string name, const TensorRef& X, const TensorRef& W,
                           const TensorRef& B, const TensorRef& Y, const FusedEpilogue* e) {
  OpInstance op;
  op.name = std::move(name) + "_" + dtype_suffix(X->dtype());
  op.inputs = {X, W};
  if (B) op.inputs.push_back(B);
  if (e != nullptr) {
    op.name += e->name;
    op.inputs.insert(op.inputs.end(), e->inputs.begin(), e->inputs.end());
  }
  op.outputs = {Y};
  return op;
}

OpInstance depthwise(const BlockedShape& g, const TensorRef& X, const TensorRef& W,
                     const TensorRef& B, const BlockedConvAttrs& a, const FusedEpilogue* e) {
  const int64_t kh = a.kernel[0], kw = a.kernel[1];
  Window win{a.kernel, a.strides, a.pads, a.dilations};
  const arith::Expr oh = window_output_dim(g.h, win, 0), ow = window_output_dim(g.w, win, 1);
  // The weights staged per channel block (compute_at its loop): with every tap written out,
  // their indices are constants and the kh*kw vectors stay in registers; read from W, they
  // were reloaded for every output position (one zmm load per cycle on Zen 4).
  TensorRef WL = te::compute("WLocal", W->shape(), [&](const Indices& i) {
    return te::read(W, {i[0], i[1], i[2], i[3]});
  });
  // The padded input, inlined: each tap reads `inside ? X[clamped] : 0`, a select that
  // loop_partition removes from the interior rows and columns.
  auto tap = [&](const Indices& i, int64_t r, int64_t c) {
    const arith::Expr y = i[2] * win.strides[0] + (r * win.dilations[0] - win.pad_begin(0));
    const arith::Expr x = i[3] * win.strides[1] + (c * win.dilations[1] - win.pad_begin(1));
    const arith::Expr inside =
        arith::logical_and(arith::logical_and(arith::ge(y, 0), arith::lt(y, g.h)),
                           arith::logical_and(arith::ge(x, 0), arith::lt(x, g.w)));
    tir::Expr v = te::read(X, {i[0], i[1], arith::max(arith::min(y, g.h - 1), 0),
                               arith::max(arith::min(x, g.w - 1), 0), i[4]});
    v = tir::select(tir::index_value(inside, tir::boolean()), v, tir::make_const(v.type(), 0.0));
    return v * te::read(WL, {i[1], I(r), I(c), i[4]});
  };
  TensorRef Y =
      te::compute("Y", {g.n, I(g.blocks), oh, ow, I(kChannelBlock)}, [&](const Indices& i) {
        tir::Expr y = B ? te::read(B, {i[1], i[4]}) : tap(i, 0, 0);
        for (int64_t r = 0; r < kh; ++r) {
          for (int64_t c = 0; c < kw; ++c) {
            if (B || r > 0 || c > 0) y = y + tap(i, r, c);
          }
        }
        return e != nullptr ? e->apply(y, i) : y;
      });
  OpInstance op = blocked_conv_op("conv_blocked_dw" + std::to_string(kh) + "x" + std::to_string(kw),
                                  X, W, B, Y, e);
  op.knobs = {reduction_knobs(Y->shape()).front()};  // parallel
  op.schedule = [Y, WL, specs = op.knobs, blocks = g.blocks](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({Y});
    te::Stage& so = s[Y];
    so.vectorize(so.axis(4));
    te::IterVarRef at = so.fuse(so.axis(0), so.axis(1));
    if (knob_value(specs, knobs, "parallel") != 0) {
      // Few blocks (40 channels: 3) split unevenly among threads: the rows run in parallel
      // then, each staging the block's weights (kh*kw vectors, against a row of outputs).
      if (blocks < kManyBlocks) at = so.axis(2);
      so.parallel(at);
    }
    te::Stage& sw = s[WL];
    sw.compute_at(so, at);
    sw.vectorize(sw.axis(3));
    return s;
  };
  return op;
}

OpInstance pointwise(const BlockedShape& g, const TensorRef& X, const TensorRef& W,
                     const TensorRef& B, int64_t in_channels, const FusedEpilogue* e) {
  const int64_t out_blocks = W->shape()[0].int_value();
  const std::vector<arith::Expr> shape{g.n, I(out_blocks), g.h, g.w, I(kChannelBlock)};
  // The sum runs over the real input channels only: one axis k read at block k / 16, lane
  // k % 16 (the padded lanes of the last block would add zeros: 48 of 40 channels).
  const bool padded = in_channels > 0 && in_channels < g.blocks * kChannelBlock;
  te::IterVar ib = te::reduce_axis(g.blocks, "ib"), il = te::reduce_axis(kChannelBlock, "il");
  te::IterVar k = te::reduce_axis(in_channels, "k");
  TensorRef C = te::compute("Conv", shape, [&](const Indices& i) {
    if (padded) {
      const arith::Expr kb = arith::floordiv(k.var, kChannelBlock);
      const arith::Expr kl = arith::floormod(k.var, kChannelBlock);
      return te::sum(te::read(X, {i[0], kb, i[2], i[3], kl}) * te::read(W, {i[1], kb, kl, i[4]}),
                     {k});
    }
    return te::sum(
        te::read(X, {i[0], ib.var, i[2], i[3], il.var}) * te::read(W, {i[1], ib.var, il.var, i[4]}),
        {ib, il});
  });
  TensorRef Y = te::compute("Y", shape, [&](const Indices& i) {
    tir::Expr y = te::read(C, {i[0], i[1], i[2], i[3], i[4]});
    if (B) y = y + te::read(B, {i[1], i[4]});
    return e != nullptr ? e->apply(y, i) : y;
  });
  OpInstance op = blocked_conv_op("conv_blocked_pw", X, W, B, Y, e);
  op.knobs = pointwise_knobs(out_blocks, shape);
  op.schedule = [Y, C, specs = op.knobs, out_blocks](const KnobValues& knobs) {
    const int64_t oc_block = knob_value(specs, knobs, "oc_block");
    const int64_t ow_block = knob_value(specs, knobs, "ow_block");
    if (oc_block <= 0 || ow_block <= 0)
      user_error("conv_blocked: oc_block and ow_block must be > 0");
    te::Schedule s = te::create_schedule({Y});
    te::Stage& so = s[Y];
    auto [obo, obi] = so.split(so.axis(1), oc_block);
    auto [xo, xi] = so.split(so.axis(3), ow_block);
    so.reorder({so.axis(0), obo, so.axis(2), xo, obi, xi, so.axis(4)});
    so.vectorize(so.axis(4));
    so.unroll(obi);
    so.unroll(xi);
    if (knob_value(specs, knobs, "parallel") != 0) {
      // Enough output blocks: (n, block) in parallel; else the rows (a 24-channel layer has
      // one block pair, and would run on one thread).
      if ((out_blocks + oc_block - 1) / oc_block >= 4) {
        so.parallel(so.fuse(so.axis(0), obo));
      } else {
        so.parallel(so.axis(2));
      }
    }
    te::Stage& sa = accumulate_at(s, C, so, xo);
    sa.unroll(sa.axis(1));
    sa.unroll(sa.axis(3));
    return s;
  };
  return op;
}

OpInstance conv_blocked_with(const TensorType& xb, const TensorType& w,
                             const std::optional<TensorType>& bias, const BlockedConvAttrs& a,
                             const FusedEpilogue* e) {
  const char* op = "conv_blocked";
  const BlockedShape g = blocked_shape(xb, op);
  if (w.dtype != xb.dtype) user_error(op, ": W's dtype differs from X's");
  std::vector<int64_t> wd = constant_dims(w, 0, op, "W's dims");
  if (a.kernel.size() != 2) user_error(op, ": a 2-D kernel is required");
  const std::vector<int64_t> strides = spatial_values(a.strides, 2, 1, 1, op, "strides");
  const std::vector<int64_t> pads = spatial_values(a.pads, 4, 0, 0, op, "pads");
  const std::vector<int64_t> dilations = spatial_values(a.dilations, 2, 1, 1, op, "dilations");
  int64_t out_blocks = 0;
  if (a.depthwise) {
    if (wd != std::vector<int64_t>{g.blocks, a.kernel[0], a.kernel[1], kChannelBlock}) {
      user_error(op, ": depthwise W must be [", g.blocks, ", ", a.kernel[0], ", ", a.kernel[1],
                 ", ", kChannelBlock, "]");
    }
    out_blocks = g.blocks;
  } else {
    const bool unit = a.kernel == std::vector<int64_t>{1, 1} &&
                      strides == std::vector<int64_t>{1, 1} && pads == std::vector<int64_t>(4, 0);
    if (!unit)
      user_error(op, ": a blocked conv is depthwise or pointwise (1x1, stride 1, no pads)");
    if (wd.size() != 4 || wd[1] != g.blocks || wd[2] != kChannelBlock || wd[3] != kChannelBlock) {
      user_error(op, ": pointwise W must be [out blocks, ", g.blocks, ", ", kChannelBlock, ", ",
                 kChannelBlock, "]");
    }
    out_blocks = wd[0];
  }
  if (bias && (bias->dtype != xb.dtype || constant_dims(*bias, 0, op, "B's dims") !=
                                              std::vector<int64_t>{out_blocks, kChannelBlock})) {
    user_error(op, ": B must be [", out_blocks, ", ", kChannelBlock, "] of X's dtype");
  }
  TensorRef X = te::placeholder("X", xb.shape, xb.dtype);
  TensorRef W = te::placeholder("W", w.shape, w.dtype);
  TensorRef B = bias ? te::placeholder("B", bias->shape, bias->dtype) : nullptr;
  if (!a.depthwise) return pointwise(g, X, W, B, a.in_channels, e);
  BlockedConvAttrs checked = a;
  checked.strides = strides;
  checked.pads = pads;
  checked.dilations = dilations;
  return depthwise(g, X, W, B, checked, e);
}

// A layout change: stage "Tile" reads X (`read`, at Y's indices) and Y copies it, so that a
// schedule (`place`, given Y's stage and the tile's) can transpose 16 x 16 tiles through
// registers. Knob: parallel.
OpInstance layout_change(const std::string& name, const TensorRef& X,
                         const std::vector<arith::Expr>& shape,
                         const std::function<tir::Expr(const Indices&)>& read,
                         std::function<void(te::Stage& y, te::Stage& tile, bool parallel)> place) {
  TensorRef T = te::compute("Tile", shape, read);
  TensorRef Y = te::compute("Y", shape, [&](const Indices& i) {
    return te::read(T, std::vector<arith::Expr>(i.begin(), i.end()));
  });
  OpInstance op;
  op.name = name + "_" + dtype_suffix(X->dtype());
  op.inputs = {X};
  op.outputs = {Y};
  op.knobs = {reduction_knobs(shape).front()};  // parallel
  op.schedule = [Y, T, specs = op.knobs, place = std::move(place)](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({Y});
    place(s[Y], s[T], knob_value(specs, knobs, "parallel") != 0);
    return s;
  };
  return op;
}

}  // namespace

OpInstance to_blocked(const TensorType& x) {
  check_float_input(x, "to_blocked", "X");
  if (x.shape.size() != 4 || !x.shape[1].is_int_imm()) {
    user_error("to_blocked: X must be [N, C, H, W] with static C");
  }
  const int64_t c = x.shape[1].int_value();
  TensorRef X = te::placeholder("X", x.shape, x.dtype);
  auto read = [&](const Indices& i) {
    const arith::Expr ch = i[1] * kChannelBlock + i[4];
    tir::Expr v = te::read(X, {i[0], arith::min(ch, I(c - 1)), i[2], i[3]});
    if (c % kChannelBlock == 0) return v;
    return tir::select(tir::index_value(arith::lt(ch, I(c)), tir::boolean()), v,
                       tir::make_const(v.type(), 0.0));
  };
  const std::vector<arith::Expr> shape{x.shape[0], I(channel_blocks(c)), x.shape[2], x.shape[3],
                                       I(kChannelBlock)};
  // A 16 x 16 tile transposed through registers: 16 contiguous loads along a row of X
  // (strided stores into the tile), 16 contiguous stores of 16 channels into Y. Vectorized
  // along the channels, each vector gathered 16 planes apart: 155 us for [1, 16, 112, 112].
  return layout_change("to_blocked", X, shape, read, [](te::Stage& y, te::Stage& t, bool par) {
    auto [wo, wi] = y.split(y.axis(3), kChannelBlock);
    y.vectorize(y.axis(4));
    y.unroll(wi);
    // The rows in parallel, alone: fused with the batch and blocks, their symbolic extent
    // divides the index, and the tile's region is no longer provably one tile.
    if (par) y.parallel(y.axis(2));
    t.compute_at(y, wo);
    t.reorder({t.axis(0), t.axis(1), t.axis(2), t.axis(4), t.axis(3)});
    t.vectorize(t.axis(3));
    t.unroll(t.axis(4));
  });
}

OpInstance from_blocked(const TensorType& xb, int64_t channels) {
  const BlockedShape g = blocked_shape(xb, "from_blocked");
  if (channels < 1 || channel_blocks(channels) != g.blocks) {
    user_error("from_blocked: ", channels, " channels do not fill ", g.blocks, " blocks");
  }
  TensorRef X = te::placeholder("X", xb.shape, xb.dtype);
  const std::vector<arith::Expr> shape{g.n, I(channels), g.h, g.w};
  auto read = [&](const Indices& i) {
    return te::read(X, {i[0], arith::floordiv(i[1], kChannelBlock), i[2], i[3],
                        arith::floormod(i[1], kChannelBlock)});
  };
  // to_blocked's tile the other way: 16 loads of 16 channels, 16 stores along a row.
  return layout_change("from_blocked", X, shape, read, [](te::Stage& y, te::Stage& t, bool par) {
    auto [co, ci] = y.split(y.axis(1), kChannelBlock);
    auto [wo, wi] = y.split(y.axis(3), kChannelBlock);
    y.reorder({y.axis(0), co, y.axis(2), wo, ci, wi});
    y.vectorize(wi);
    y.unroll(ci);
    if (par) y.parallel(y.axis(2));  // as to_blocked
    t.compute_at(y, wo);
    t.reorder({t.axis(0), t.axis(2), t.axis(3), t.axis(1)});
    t.vectorize(t.axis(1));
    t.unroll(t.axis(3));
  });
}

OpInstance conv_blocked(const TensorType& xb, const TensorType& w,
                        const std::optional<TensorType>& bias, const BlockedConvAttrs& attrs) {
  return with_epilogue_builder([xb, w, bias, attrs](const FusedEpilogue* e) {
    return conv_blocked_with(xb, w, bias, attrs, e);
  });
}

}  // namespace dynvm::ops
