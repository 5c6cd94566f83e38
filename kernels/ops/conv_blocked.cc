// Channel-blocked convolutions and the layout changes around them (see conv_blocked.h).
#include "kernels/ops/conv_blocked.h"

#include <functional>
#include <string>
#include <utility>

#include "kernels/arith/simplify.h"
#include "kernels/ops/conv_winograd.h"
#include "kernels/ops/schedules.h"
#include "kernels/ops/window.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using te::Indices;
using te::TensorRef;

arith::Expr I(int64_t v) { return arith::make_int(v); }

// The dense conv's widest register tile (positions).
constexpr int64_t kMaxTile = 8;

// The ow_block positions x oc_block output blocks register tile of the dense conv.
std::vector<KnobSpec> dense_knobs(int64_t out_blocks, const std::vector<arith::Expr>& out) {
  // 8 positions x 2 blocks: 16 accumulators, each broadcast input lane feeding two FMAs
  // (measured 114 GFLOP/s at 56x56, 64 -> 64 channels, as the NCHW flat template).
  // A static width takes a tile that divides it where one does (7 at 7 and 14 wide).
  const int64_t oc_default = out_blocks % 2 == 0 ? 2 : 1;
  int64_t ow_default = kMaxTile;
  const arith::Expr& ow = out[3];
  for (int64_t t : {kMaxTile, int64_t{7}, int64_t{6}}) {
    if (ow.is_int_imm() && ow.int_value() % t == 0) {
      ow_default = t;
      break;
    }
  }
  return {{"oc_block", {1, 2, 4}, oc_default},
          {"ow_block", {4, 6, 7, kMaxTile}, ow_default},
          reduction_knobs(out).front()};  // parallel
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
  auto tap = [&](const Indices& i, int64_t r, int64_t c) {
    return window_tap(X, i, win, r, c, 0.0) * te::read(WL, {i[1], I(r), I(c), i[4]});
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
      if (blocks < kManyChannelBlocks) at = so.axis(2);
      so.parallel(at);
    }
    te::Stage& sw = s[WL];
    sw.compute_at(so, at);
    sw.vectorize(sw.axis(3));
    return s;
  };
  return op;
}

// A dense conv (pointwise the 1x1 case; groups of whole blocks): Y[n, ob, oh, ow, o] = sum
// over input channel c (of ob's group) and tap (r, t) of In(n, c, oh*s + r*d, ow*s + t*d) *
// W[ob, c, r, t, o], In the
// input padded at the root (blocked: a copy vectorized along the lanes; NCHW: a stem's few
// channels, scalar). Each input value is broadcast into a register tile of oc_block output
// blocks x ow_block positions: the reads of a strided or symbolic-width window are scalars, so
// no vector runs along a row (no rounded width, no strided loads, 7 of 7 positions computed
// at a 7-wide map). Over a blocked input whose channels fill their blocks, c is two axes
// (block, lane) with the lane innermost; otherwise one axis read at c / 16, c % 16 (the padded
// lanes of the last block skipped: 40 of 48).
OpInstance dense(const TensorType& xt, const TensorRef& X, const TensorRef& W, const TensorRef& B,
                 const BlockedConvAttrs& a, const FusedEpilogue* e) {
  const bool blocked_in = xt.shape.size() == 5;
  const std::vector<int64_t> wd =
      constant_dims(TensorType{W->dtype(), W->shape()}, 0, "conv_blocked", "W's dims");
  const int64_t out_blocks = wd[0], c_in = wd[1];
  Window win{a.kernel, a.strides, a.pads, a.dilations};
  const arith::Expr& n = xt.shape[0];
  const arith::Expr oh = window_output_dim(xt.shape[2], win, 0);
  const arith::Expr ow = window_output_dim(xt.shape[3], win, 1);
  const std::vector<arith::Expr> shape{n, I(out_blocks), oh, ow, I(kChannelBlock)};
  // Over a symbolic width the accumulator's row reaches kMaxTile - 1 positions past the
  // output (and the padded input the columns they read), so that the last tile of a row is
  // a full one in registers, its extra positions computed and not stored: clipped to the
  // row, its extent was symbolic and its accumulators stayed in memory (128 -> 256
  // channels, 3x3 stride 2 at 14 wide, tiles of 8: 1540 us, 1000 at tiles of 7). Only where
  // the input is copied anyway to pad it: a ResNet's 1x1 stride-2 shortcut copied for its
  // extra columns alone ran 58 us against 31 in NCHW.
  bool has_pads = false;
  for (int64_t p : win.pads) has_pads |= p != 0;
  // A strided conv over a symbolic width runs its tiles along the output's positions
  // flattened (oh * ow + ow over the image), so that a row's last tile continues on the next
  // row instead of being a partial one or one rounded past the row: at 10 wide, tiles of 8
  // made 8 + 8 for 10 (RegNet-style 1x1 stride-2 shortcut, 160 -> 384 at 20x20, batch 4: 685
  // -> 430 us, static 432). The accumulator's positions reach kMaxTile - 1 past the image,
  // clamped to its last position where they read, so that the last tile is a full one; only
  // its real positions are stored. Each position's row and column cost a division per tile,
  // which unit-stride convs over wide maps and stems (short sums) do not earn back: 1x1 at
  // 80 wide ran 1.27x slower flat, so they keep the rows.
  const bool flat = !ow.is_int_imm() && win.strides[1] > 1 && blocked_in;
  const bool round_width = !flat && !ow.is_int_imm() && has_pads;
  std::vector<arith::Expr> conv_shape = shape;
  arith::Expr extra_columns = I(0);
  if (round_width) {
    conv_shape[3] = arith::simplify(ow + (kMaxTile - 1));
    extra_columns = I((kMaxTile - 1) * win.strides[1]);
  }
  const arith::Expr positions = arith::simplify(oh * ow);
  if (flat) {
    conv_shape = {n, I(out_blocks), arith::simplify(positions + (kMaxTile - 1)), I(kChannelBlock)};
  }
  const TensorRef P = pad_spatial(X, win, 0.0, extra_columns);
  const bool full_blocks = blocked_in && c_in % kChannelBlock == 0;
  te::IterVar ib = te::reduce_axis(c_in / kChannelBlock, "ib");
  te::IterVar il = te::reduce_axis(kChannelBlock, "il");
  te::IterVar k = te::reduce_axis(c_in, "k");
  te::IterVar rh = te::reduce_axis(a.kernel[0], "rh"), rw = te::reduce_axis(a.kernel[1], "rw");
  // The sum for output (image, block ob, row r, column q, lane o).
  auto conv_at = [&](const arith::Expr& image, const arith::Expr& ob, const arith::Expr& r,
                     const arith::Expr& q, const arith::Expr& o) {
    const arith::Expr y = r * win.strides[0] + rh.var * win.dilations[0];
    const arith::Expr x = q * win.strides[1] + rw.var * win.dilations[1];
    if (full_blocks) {
      const arith::Expr c = ib.var * kChannelBlock + il.var;
      // A group's input blocks follow each other: output block ob reads those of group
      // ob / (out_blocks / groups).
      arith::Expr block = ib.var;
      if (a.groups > 1) {
        block = arith::floordiv(ob, out_blocks / a.groups) * (c_in / kChannelBlock) + ib.var;
      }
      return te::sum(
          te::read(P, {image, block, y, x, il.var}) * te::read(W, {ob, c, rh.var, rw.var, o}),
          {ib, rh, rw, il});
    }
    std::vector<arith::Expr> xi{image, k.var, y, x};
    if (blocked_in) {
      xi = {image, arith::floordiv(k.var, kChannelBlock), y, x,
            arith::floormod(k.var, kChannelBlock)};
    }
    return te::sum(te::read(P, xi) * te::read(W, {ob, k.var, rh.var, rw.var, o}), {k, rh, rw});
  };
  TensorRef C = te::compute("Conv", conv_shape, [&](const Indices& i) {
    if (!flat) return conv_at(i[0], i[1], i[2], i[3], i[4]);
    const arith::Expr at = arith::min(i[2], positions - 1);
    return conv_at(i[0], i[1], arith::floordiv(at, ow), arith::floormod(at, ow), i[3]);
  });
  TensorRef Y = te::compute("Y", shape, [&](const Indices& i) {
    tir::Expr y = flat ? te::read(C, {i[0], i[1], i[2] * ow + i[3], i[4]})
                       : te::read(C, {i[0], i[1], i[2], i[3], i[4]});
    if (B) y = y + te::read(B, {i[1], i[4]});
    return e != nullptr ? e->apply(y, i) : y;
  });
  std::string name = "conv_blocked_" + std::to_string(a.kernel[0]) + "x" +
                     std::to_string(a.kernel[1]) + (blocked_in ? "" : "_from_nchw");
  OpInstance op = blocked_conv_op(name, X, W, B, Y, e);
  op.knobs = dense_knobs(out_blocks, shape);
  const TensorRef pad = P == X ? nullptr : P;
  op.schedule = [Y, C, pad, blocked_in, flat, specs = op.knobs,
                 out_blocks](const KnobValues& knobs) {
    const int64_t oc_block = knob_value(specs, knobs, "oc_block");
    const int64_t ow_block = knob_value(specs, knobs, "ow_block");
    if (oc_block <= 0 || ow_block <= 0)
      user_error("conv_blocked: oc_block and ow_block must be > 0");
    const bool parallel = knob_value(specs, knobs, "parallel") != 0;
    te::Schedule s = te::create_schedule({Y});
    // The blocked copy one vector of lanes at a time; NCHW's scalar, as conv.cc's.
    if (pad) schedule_injective(s, pad, blocked_in ? kChannelBlock : 1, parallel);
    te::Stage& so = s[Y];
    auto [obo, obi] = so.split(so.axis(1), oc_block);
    te::IterVarRef columns = flat ? so.fuse(so.axis(2), so.axis(3)) : so.axis(3);
    auto [xo, xi] = so.split(columns, ow_block);
    if (flat) {
      so.reorder({so.axis(0), obo, xo, obi, xi, so.axis(so.num_axes() - 1)});
    } else {
      so.reorder({so.axis(0), obo, so.axis(2), xo, obi, xi, so.axis(4)});
    }
    so.vectorize(so.axis(so.num_axes() - 1));
    so.unroll(obi);
    // Flat, the stores of the last tile run as a loop: unrolled, specialize_extents made a
    // copy of the whole tile (its sum included) per remainder, doubling a ResNet's compile
    // time (4.2 -> 9.4 s) for one tile an image; LLVM unrolls the constant-trip loop of the
    // full tiles all the same (10.07 against 10.10 ms).
    if (!flat) so.unroll(xi);
    if (parallel) {
      // Enough output blocks: (n, block) in parallel; else the rows (a 24-channel layer has
      // one block pair, and would run on one thread), outermost: one parallel loop per call,
      // not one per image and block group (a small ResNet at 2x3x160x320 on 2 threads:
      // 1.164-1.168 -> 1.156-1.157 ms, alternating runs).
      if ((out_blocks + oc_block - 1) / oc_block >= 4) {
        so.parallel(so.fuse(so.axis(0), obo));
      } else if (flat) {
        // The tiles stand for the rows, outermost; a unit loop inside (n, block) is where the
        // accumulator is computed (a longer run of tiles there left a tail loop that ran 12%
        // slower).
        auto [chunk, tile] = so.split(xo, 1);
        so.reorder({chunk, so.axis(0), obo, tile});
        so.parallel(chunk);
        xo = tile;
      } else {
        so.reorder({so.axis(2), so.axis(0), obo});
        so.parallel(so.axis(2));
      }
    }
    te::Stage& sa = accumulate_at(s, C, so, xo);
    sa.unroll(sa.axis(1));
    sa.unroll(sa.axis(flat ? 2 : 3));
    return s;
  };
  return op;
}

OpInstance conv_blocked_with(const TensorType& x, const TensorType& w,
                             const std::optional<TensorType>& bias, const BlockedConvAttrs& a,
                             const FusedEpilogue* e) {
  const char* op = "conv_blocked";
  if (w.dtype != x.dtype) user_error(op, ": W's dtype differs from X's");
  std::vector<int64_t> wd = constant_dims(w, 0, op, "W's dims");
  if (a.kernel.size() != 2 || a.kernel[0] < 1 || a.kernel[1] < 1) {
    user_error(op, ": a 2-D kernel of positive sizes is required");
  }
  BlockedConvAttrs checked = a;
  checked.strides = spatial_values(a.strides, 2, 1, 1, op, "strides");
  checked.pads = spatial_values(a.pads, 4, 0, 0, op, "pads");
  checked.dilations = spatial_values(a.dilations, 2, 1, 1, op, "dilations");
  if (a.winograd != 0 && !a.depthwise) return conv_winograd(x, w, bias, checked, e);
  int64_t out_blocks = 0;
  std::optional<BlockedShape> g;
  if (a.depthwise || x.shape.size() != 4) g = blocked_shape(x, op);
  if (a.depthwise) {
    if (wd != std::vector<int64_t>{g->blocks, a.kernel[0], a.kernel[1], kChannelBlock}) {
      user_error(op, ": depthwise W must be [", g->blocks, ", ", a.kernel[0], ", ", a.kernel[1],
                 ", ", kChannelBlock, "]");
    }
    out_blocks = g->blocks;
  } else {
    if (!g) check_float_input(x, op, "X");
    if (!g && !x.shape[1].is_int_imm()) user_error(op, ": an NCHW X needs static channels");
    const int64_t channels = g ? 0 : x.shape[1].int_value();
    if (a.groups < 1) user_error(op, ": groups must be >= 1");
    if (a.groups > 1 &&
        (!g || wd.size() != 5 || wd[1] % kChannelBlock != 0 || wd[0] % a.groups != 0)) {
      user_error(op, ": groups take a blocked X and whole blocks of input and output channels");
    }
    const bool fits = wd.size() == 5 && wd[1] >= 1 && wd[2] == a.kernel[0] &&
                      wd[3] == a.kernel[1] && wd[4] == kChannelBlock &&
                      (g ? channel_blocks(wd[1] * a.groups) == g->blocks : wd[1] == channels);
    if (!fits) {
      user_error(op, ": dense W must be [out blocks, input channels (of a group), ", a.kernel[0],
                 ", ", a.kernel[1], ", ", kChannelBlock, "] matching X's channels");
    }
    out_blocks = wd[0];
  }
  check_blocked_bias(bias, x, out_blocks, op);
  TensorRef X = te::placeholder("X", x.shape, x.dtype);
  TensorRef W = te::placeholder("W", w.shape, w.dtype);
  TensorRef B = bias ? te::placeholder("B", bias->shape, bias->dtype) : nullptr;
  Window win{checked.kernel, checked.strides, checked.pads, checked.dilations};
  std::vector<arith::Expr> out{x.shape[0], I(out_blocks)};
  for (size_t d = 0; d < 2; ++d) out.push_back(window_output_dim(x.shape[2 + d], win, d));
  check_output_dims(op, out);
  if (!a.depthwise) return dense(x, X, W, B, checked, e);
  return depthwise(*g, X, W, B, checked, e);
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

void check_blocked_bias(const std::optional<TensorType>& bias, const TensorType& x,
                        int64_t out_blocks, const char* op) {
  if (bias && (bias->dtype != x.dtype || constant_dims(*bias, 0, op, "B's dims") !=
                                             std::vector<int64_t>{out_blocks, kChannelBlock})) {
    user_error(op, ": B must be [", out_blocks, ", ", kChannelBlock, "] of X's dtype");
  }
}

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

BlockedShape blocked_shape(const TensorType& xb, const std::string& op) {
  check_float_input(xb, op, "X");
  const auto& s = xb.shape;
  if (s.size() != 5 || !s[4].is_int_imm() || s[4].int_value() != kChannelBlock ||
      !s[1].is_int_imm() || s[1].int_value() < 1) {
    user_error(op, ": X must be [N, channel blocks, H, W, ", kChannelBlock, "]");
  }
  return {s[0], s[2], s[3], s[1].int_value()};
}

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
