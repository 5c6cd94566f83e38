// Convolution builders and conv's register-tiled schedule template (see conv.h).
#include "kernels/ops/conv.h"

#include <algorithm>
#include <functional>
#include <string>
#include <tuple>
#include <utility>

#include "kernels/arith/analyzer.h"
#include "kernels/arith/simplify.h"
#include "kernels/ops/schedules.h"
#include "kernels/ops/window.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using te::Indices;
using te::TensorRef;

// The shortest hop (stride) at which a conv whose window spans several hops copies its
// overlapping patches (is_patchwise): each input element is copied kernel / stride times.
constexpr int64_t kFramingHop = 8;

// Channels, groups and the window of a conv or conv_transpose, checked.
struct ConvGeometry {
  size_t rank = 0;  // spatial dims: 1 or 2 (conv_transpose: 1 to 3)
  Window window;
  int64_t groups = 1;
  int64_t c_in = 0, c_out = 0;
  int64_t c_in_per_group = 0, c_out_per_group = 0;
};

// What both builders check alike; `transpose` reads w as [C_in, C_out/groups, k...].
ConvGeometry conv_geometry(const std::string& op, const TensorType& x, const TensorType& w,
                           const std::optional<TensorType>& bias, const ConvAttrs& attrs,
                           bool transpose) {
  // int32 too: ConvInteger's accumulation (frontends/onnx/expand_integer.h).
  if (x.dtype != vm::DType::kInt32) check_float_input(x, op, "X");
  // Both are 1-D to 3-D (conv's 3-D template is its 2-D one with a loop over depths).
  const size_t max_rank = 5;
  if (x.shape.size() < 3 || x.shape.size() > max_rank) {
    user_error(op, ": X must be [N, C, spatial...] with 1 to ", max_rank - 2,
               " spatial dims, got rank ", x.shape.size());
  }
  if (w.dtype != x.dtype) user_error(op, ": W's dtype differs from X's");
  if (w.shape.size() != x.shape.size()) user_error(op, ": W must have X's rank");
  ConvGeometry g;
  g.rank = x.shape.size() - 2;
  std::vector<int64_t> wd = constant_dims(w, 0, op, "W's dims");
  g.c_in = constant_dims(TensorType{x.dtype, {x.shape[1]}}, 0, op, "X's channels")[0];
  g.groups = attrs.groups;
  if (g.groups < 1 || g.c_in % g.groups != 0) {
    user_error(op, ": groups (", g.groups, ") must be >= 1 and divide C_in (", g.c_in, ")");
  }
  g.c_in_per_group = g.c_in / g.groups;
  if (transpose) {
    if (wd[0] != g.c_in) user_error(op, ": W's dim 0 (", wd[0], ") must be C_in (", g.c_in, ")");
    g.c_out_per_group = wd[1];
    g.c_out = wd[1] * g.groups;
  } else {
    if (wd[1] != g.c_in_per_group) {
      user_error(op, ": W's dim 1 (", wd[1], ") must be C_in/groups (", g.c_in_per_group, ")");
    }
    if (wd[0] % g.groups != 0) {
      user_error(op, ": groups (", g.groups, ") must divide C_out (", wd[0], ")");
    }
    g.c_out = wd[0];
    g.c_out_per_group = wd[0] / g.groups;
  }
  if (g.c_out < 1) user_error(op, ": no output channels");
  Window& win = g.window;
  win.kernel.assign(wd.begin() + 2, wd.end());
  for (int64_t k : win.kernel) {
    if (k < 1) user_error(op, ": kernel sizes must be >= 1, got ", k);
  }
  win.strides = spatial_values(attrs.strides, g.rank, 1, 1, op, "strides");
  win.pads = spatial_values(attrs.pads, 2 * g.rank, 0, 0, op, "pads");
  win.dilations = spatial_values(attrs.dilations, g.rank, 1, 1, op, "dilations");
  if (bias) {
    if (bias->dtype != x.dtype) user_error(op, ": B's dtype differs from X's");
    if (bias->shape.size() != 1 || !bias->shape[0].is_int_imm() ||
        bias->shape[0].int_value() != g.c_out) {
      user_error(op, ": B must be [", g.c_out, "]");
    }
  }
  return g;
}

std::string op_name(const char* base, const ConvGeometry& g, vm::DType t) {
  return base + std::to_string(g.rank) + "d_" + tir::to_string(tir::DataType{t, 1});
}

// The largest of `options` that divides n, else 1.
int64_t largest_divisor(int64_t n, std::initializer_list<int64_t> options) {
  for (int64_t f : options) {
    if (n % f == 0) return f;
  }
  return 1;
}

// A symbolic output width is computed in blocks of this many columns (one zmm of f32).
constexpr int64_t kWidthMultiple = 16;

// Channel blocks enough to share among the threads as the parallel loop (conv_schedule).
constexpr int64_t kManyBlocks = 8;

std::vector<KnobSpec> conv_knobs(const ConvGeometry& g, const std::vector<arith::Expr>& out) {
  // Defaults for AVX-512 f32: one zmm of output columns (wider blocks make LLVM split odd
  // vector types and measured 2-8x slower) times 16 output channels keeps 16 accumulators
  // in registers, each input vector reused 16 times; the weights are broadcast operands.
  // A static width below 16 is taken whole.
  int64_t oc_default = largest_divisor(g.c_out, {16, 12, 8, 6, 4, 2});
  int64_t ow_default = kWidthMultiple;
  const arith::Expr& ow = out.back();
  if (ow.is_int_imm() && ow.int_value() < ow_default) ow_default = ow.int_value();
  int64_t oh_default = 1;
  if (g.c_in_per_group == 1 && g.c_out_per_group == 1) {
    // Depthwise: no input vector is shared between output channels, so 16 of them only
    // multiply the row pointers (16 channels x kh rows, beyond the registers with symbolic
    // strides); 4 channels x 2 rows shares each input row between the two output rows that
    // read it. Measured on 192-channel 5x5 (6x10 to 24x40) and 32-channel 3x3 stride-2
    // layers: 10-30% faster than 16 x 1 in dynamic builds, the same or better in static ones.
    oc_default = largest_divisor(g.c_out, {4, 2});
    oh_default = 2;
  }
  // Blocks of 6 and 12 too: the default takes them where 16 does not divide the channels
  // (Silero's 258-channel STFT conv ran in blocks of 2, where 6 serve each input vector to
  // three times as many channels; 72 and 120 channels take 12 where they took 8), and the
  // shipped cost model ranks 12 for that conv (with a guarded tail, like 8 and 16 on
  // channel counts they do not divide): Silero at batch 1, 1.16 -> 1.05x its static
  // build's time.
  return {{"oc_block", {1, 2, 4, 6, 8, 12, 16}, oc_default},
          {"ow_block", {4, 8, 16}, ow_default},
          {"oh_block", {1, 2, 4}, oh_default},
          {"unroll_kw", {0, 1}, 1},
          reduction_knobs(out).front()};  // parallel
}

// The stages a conv instance schedules: `tiled` is the register-tiled convolution (the
// output itself, or the rounded-width "Conv" stage), `acc` the reduction computed at its
// tiles (null: cache_write makes one; set: the "Conv" stage a bias follows), `copy` the
// output when it is a separate elementwise stage over `tiled`, `pad` the padded input.
struct ConvStages {
  TensorRef out, tiled, acc, copy, pad;
  // `pad` split by width phase, read by `tiled` instead of `pad` (then inlined into it), or
  // null; computed per block of rows, vectorized along each phase's columns.
  TensorRef phases;
  // The padded input computed per block of output rows (each output channel reads one
  // input channel: a depthwise conv) instead of whole at the root.
  bool pad_per_rows = false;
};

te::Schedule conv_schedule(const ConvStages& st, const std::vector<KnobSpec>& specs,
                           const KnobValues& knobs) {
  int64_t oc_block = knob_value(specs, knobs, "oc_block");
  int64_t ow_block = knob_value(specs, knobs, "ow_block");
  int64_t oh_block = knob_value(specs, knobs, "oh_block");
  bool unroll_kw = knob_value(specs, knobs, "unroll_kw") != 0;
  bool parallel = knob_value(specs, knobs, "parallel") != 0;
  if (oc_block <= 0 || ow_block <= 0 || oh_block <= 0) {
    user_error("conv: oc_block, ow_block and oh_block must be > 0");
  }

  te::Schedule s = te::create_schedule({st.out});
  TensorRef acc = st.acc ? st.acc : s.cache_write(st.tiled, "local");
  // The pad copy stays scalar: loop_partition splits it at the borders, and its interior,
  // a plain copy, is vectorized by LLVM without the 16-wide tails a vector split leaves
  // (measured: 1-wide 334 us, 16-wide 476 us on a 240-channel 5x5 depthwise at 12x80).
  const bool pad_at_root = st.pad && !(st.pad_per_rows && st.tiled->shape().size() == 4);
  if (pad_at_root) schedule_injective(s, st.pad, 1, parallel);
  if (st.copy) schedule_injective(s, st.copy, kWidthMultiple, parallel);

  te::Stage& so = s[st.tiled];
  const size_t rank = so.num_axes();
  // 3-D convs ([N, C, D, H, W]) tile H and W like a 2-D conv's rows and columns, each depth
  // a loop around the rows.
  const bool has_rows = rank >= 4;
  const te::IterVarRef depth = rank == 5 ? so.axis(2) : te::IterVarRef();
  auto [oco, oci] = so.split(so.axis(1), oc_block);
  auto [owo, owi] = so.split(so.axis(rank - 1), ow_block);
  std::vector<te::IterVarRef> order{so.axis(0), oco};
  te::IterVarRef rows, ohi;
  if (has_rows) std::tie(rows, ohi) = so.split(so.axis(rank - 2), oh_block);
  if (depth) order.push_back(depth);
  if (has_rows) order.push_back(rows);
  order.insert(order.end(), {owo, oci});
  if (has_rows) order.push_back(ohi);
  order.push_back(owi);
  so.reorder(order);
  so.vectorize(owi);
  so.unroll(oci);
  if (has_rows) so.unroll(ohi);
  if (parallel) {
    // A fused loop whose inner extents are symbolic decomposes its index by them, and bound
    // inference cannot prove the accumulator's region in range there: guarded updates stay
    // in memory (measured 10x slower). So (n, oc block, row) fuse into one parallel loop
    // when the rows are static (a static output, or PP-OCR's fixed height with a symbolic
    // batch and width: the batch is the outermost, so only constants divide the index);
    // with symbolic rows, the rows (1-D: channel blocks) run in parallel inside serial batch
    // and channel-block loops. Rows alone split unevenly where there are few of them: 3
    // rows on 2 threads ran PP-OCRv4 rec's convs 1.4-1.8x slower than the static build.
    //
    // With symbolic rows and many channel blocks (depthwise layers: 48 blocks of 4 of 192
    // channels), (n, oc block) fuse into the parallel loop instead and the rows run inside:
    // one parallel loop per kernel, where the rows alone made one per channel block, each
    // too short to split (PP-OCRv4 det's 5x5 depthwise layers ran no faster on 2 threads).
    const std::vector<arith::Expr>& shape = so.tensor()->shape();
    const bool static_rows =
        !has_rows || (shape[rank - 2].is_int_imm() && (!depth || shape[2].is_int_imm()));
    const bool many_blocks =
        shape[1].is_int_imm() && (shape[1].int_value() + oc_block - 1) / oc_block >= kManyBlocks;
    if (static_rows) {
      te::IterVarRef outer = so.fuse(so.axis(0), oco);
      if (depth) outer = so.fuse(outer, depth);
      if (has_rows) outer = so.fuse(outer, rows);
      so.parallel(outer);
      if (has_rows) rows = outer;
    } else if (many_blocks) {
      so.parallel(so.fuse(so.axis(0), oco));
    } else if (depth) {
      so.parallel(depth);  // a 3-D conv's depths: more of them than channel blocks
    } else {
      so.parallel(rows);
    }
  }
  // A strided depthwise conv's few multiply-adds per input element do not pay for a padded
  // copy of the whole input: the rows a block of output rows reads, for its channels, are
  // padded at that block (4 channels x 5 rows x the padded width at a 3x3 stride-2 layer:
  // 9 KB on the stack) and read from the cache by every column tile (a MobileNet block's
  // 64-channel 112x112 layer: 585 -> 430 us).
  if (st.phases) {
    s[st.pad].compute_inline();
    te::Stage& sp = s[st.phases];
    sp.compute_at(so, rows);
    sp.vectorize(sp.split(sp.axis(sp.num_axes() - 1), kWidthMultiple).second);
  } else if (st.pad && !pad_at_root) {
    s[st.pad].compute_at(so, rows);
  }

  te::Stage& sa = accumulate_at(s, acc, so, owo);
  sa.unroll(sa.axis(1));
  if (has_rows) sa.unroll(sa.axis(rank - 2));
  if (unroll_kw) sa.unroll(sa.reduce_axis(sa.num_reduce_axes() - 1));
  return s;
}

// Y = conv + bias[channel], or conv itself.
TensorRef add_bias(const TensorRef& conv, const TensorRef& bias) {
  if (!bias) return conv;
  return te::compute("Y", conv->shape(), [&](const Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    return te::read(conv, idx) + te::read(bias, {i[1]});
  });
}

}  // namespace

namespace {

// A 1x1 (1-D or 2-D) convolution with unit strides and no pads reads each output position's
// own input position: the spatial dims are one axis of (h*)w contiguous elements.
bool is_pointwise(const ConvGeometry& g) {
  if (g.rank != 1 && g.rank != 2) return false;
  for (size_t d = 0; d < g.rank; ++d) {
    const Window& w = g.window;
    if (w.kernel[d] != 1 || w.strides[d] != 1 || w.dilations[d] != 1 || w.pad_begin(d) != 0 ||
        w.pad_end(d) != 0) {
      return false;
    }
  }
  return true;
}

// The instance's name, inputs (epilogue's included) and knobs, shared by both forms.
OpInstance conv_instance(const ConvGeometry& g, const TensorRef& X, const TensorRef& W,
                         const TensorRef& B, const TensorRef& Y,
                         const std::vector<arith::Expr>& out_shape, const FusedEpilogue* epilogue,
                         vm::DType dtype) {
  OpInstance inst;
  inst.name = op_name("conv", g, dtype);
  inst.inputs = {X, W};
  if (B) inst.inputs.push_back(B);
  if (epilogue != nullptr) {
    inst.name += epilogue->name;
    inst.inputs.insert(inst.inputs.end(), epilogue->inputs.begin(), epilogue->inputs.end());
  }
  inst.outputs = {Y};
  inst.knobs = conv_knobs(g, out_shape);
  return inst;
}

// A convolution computed as a matrix product over its flattened output positions:
// Acc[n, o, p] = sum_k S[n, k, spatial(p)] * weight(o, k), where S holds every position's
// K inputs as K rows of contiguous positions (S is X itself for a pointwise conv, or the
// patches stage of a conv whose kernel fits its stride), spatial(p) recombines into the
// flat index (a contiguous read) and weight(o, k) is one (broadcast) weight. The register
// tile runs along the flat axis: one masked tail per channel block instead of one per row.
struct FlatConv {
  // The reduction's dims per group: {C/G} over X itself, {C, k...} over patches.
  std::vector<int64_t> k_dims;
  // The source at (n, reduction indices, output position...) (the first index offset to
  // the group's channels), and the weight at (o, reduction indices).
  using Ks = std::vector<arith::Expr>;
  std::function<tir::Expr(const arith::Expr&, const Ks&, const Ks&)> input;
  std::function<tir::Expr(const arith::Expr&, const Ks&)> weight;
  TensorRef patches;  // a stage computed at the root before the product, or null
  // Whether `patches` is the padded input ([n, c, w]) rather than a copy of patches: its
  // rows are then copied as conv_schedule copies its pads.
  bool patches_are_padded_rows = false;
};

// The flat template's register tile over stage `so` ([n, c, positions...]): `positions`
// (its output positions as one axis) in blocks of ow_block vector lanes, oc_block channels
// unrolled around them, `acc` accumulated at each tile; in parallel, (batch, channel block)
// when there are blocks enough to share, else the position blocks.
void tile_flat_positions(te::Schedule& s, te::Stage& so, const TensorRef& acc,
                         const te::IterVarRef& positions, int64_t oc_block, int64_t ow_block,
                         bool parallel) {
  auto [oco, oci] = so.split(so.axis(1), oc_block);
  auto [po, pi] = so.split(positions, ow_block);
  so.reorder({so.axis(0), oco, po, oci, pi});
  so.vectorize(pi);
  so.unroll(oci);
  if (parallel) {
    const arith::Expr& channels = so.tensor()->shape()[1];
    const bool many_blocks =
        channels.is_int_imm() && (channels.int_value() + oc_block - 1) / oc_block >= kManyBlocks;
    so.parallel(many_blocks ? so.fuse(so.axis(0), oco) : po);
  }
  te::Stage& sa = accumulate_at(s, acc, so, po);
  sa.unroll(sa.axis(1));
}

OpInstance flat_conv(const ConvGeometry& g, const FlatConv& fc, const TensorRef& X,
                     const TensorRef& W, const TensorRef& B,
                     const std::vector<arith::Expr>& out_shape, const FusedEpilogue* epilogue,
                     vm::DType dtype) {
  const arith::Expr& w = out_shape.back();
  const arith::Expr flat = g.rank == 2 ? arith::simplify(out_shape[2] * w) : w;
  std::vector<te::IterVar> rk;
  for (size_t d = 0; d < fc.k_dims.size(); ++d) {
    rk.push_back(te::reduce_axis(fc.k_dims[d], "rk" + std::to_string(d)));
  }
  TensorRef acc = te::compute("Acc", {out_shape[0], out_shape[1], flat}, [&](const Indices& i) {
    FlatConv::Ks ks, source_ks;
    for (const te::IterVar& r : rk) ks.push_back(r.var);
    source_ks = ks;
    if (g.groups > 1) {
      source_ks[0] = arith::floordiv(i[1], g.c_out_per_group) * fc.k_dims[0] + source_ks[0];
    }
    FlatConv::Ks position = {i[2]};
    if (g.rank == 2) position = {arith::floordiv(i[2], w), arith::floormod(i[2], w)};
    return te::sum(fc.input(i[0], source_ks, position) * fc.weight(i[1], ks), rk);
  });
  TensorRef Y = te::compute("Y", out_shape, [&](const Indices& i) {
    tir::Expr y = te::read(acc, {i[0], i[1], g.rank == 2 ? i[2] * w + i[3] : i[2]});
    if (B) y = y + te::read(B, {i[1]});
    return epilogue != nullptr ? epilogue->apply(y, i) : y;
  });
  OpInstance inst = conv_instance(g, X, W, B, Y, out_shape, epilogue, dtype);
  inst.schedule = [Y, acc, patches = fc.patches, padded_rows = fc.patches_are_padded_rows,
                   specs = inst.knobs](const KnobValues& knobs) {
    const int64_t oc_block = knob_value(specs, knobs, "oc_block");
    const int64_t ow_block = knob_value(specs, knobs, "ow_block");
    if (oc_block <= 0 || ow_block <= 0) user_error("conv: oc_block and ow_block must be > 0");
    const bool parallel = knob_value(specs, knobs, "parallel") != 0;
    te::Schedule s = te::create_schedule({Y});
    if (patches && padded_rows) {
      schedule_injective(s, patches, 1, parallel);  // scalar: see conv_schedule
    } else if (patches) {
      // Loops (n, c, first tap) fused in parallel, constants but n: no index decomposed by
      // a symbolic output dim per row of positions (one per row made the copy 1/3 of a ViT
      // patch embedding's time).
      te::Stage& sp = s[patches];
      if (parallel) sp.parallel(sp.fuse(sp.fuse(sp.axis(0), sp.axis(1)), sp.axis(2)));
    }
    te::Stage& so = s[Y];
    te::IterVarRef positions = so.num_axes() == 4 ? so.fuse(so.axis(2), so.axis(3)) : so.axis(2);
    tile_flat_positions(s, so, acc, positions, oc_block, ow_block, parallel);
    return s;
  };
  return inst;
}

// A pointwise convolution over a symbolic width: X already holds each channel's h*w
// positions contiguously (PP-OCRv4 at W=100 runs its 240- and 480-channel layers at w=25:
// tiles of 16 along the rows computed 32 of every 25 columns). No copy in or out: before, a
// rounded flat copy of X, a rounded workspace and a copy out each cost a pass over memory
// (a 16 -> 32 layer at 80x120: 190 -> 100 us).
OpInstance pointwise_conv(const ConvGeometry& g, const TensorRef& X, const TensorRef& W,
                          const TensorRef& B, const std::vector<arith::Expr>& out_shape,
                          const FusedEpilogue* epilogue, vm::DType dtype) {
  FlatConv fc;
  fc.k_dims = {g.c_in_per_group};
  fc.input = [&X](const arith::Expr& n, const FlatConv::Ks& k, FlatConv::Ks at) {
    at.insert(at.begin(), {n, k[0]});
    return te::read(X, at);
  };
  fc.weight = [&W, rank = g.rank](const arith::Expr& o, const FlatConv::Ks& k) {
    std::vector<arith::Expr> at = {o, k[0]};
    at.resize(2 + rank, arith::make_int(0));
    return te::read(W, at);
  };
  return flat_conv(g, fc, X, W, B, out_shape, epilogue, dtype);
}

// A 1-D conv of unit stride (not pointwise, not depthwise) over a symbolic width: its one
// row of output positions is the flat axis, so it runs as the flat template over the padded
// input, Y[n, o, p] = sum_{c, k} P[n, c, p + k*d] * W[o, c, k], in place with one masked
// tail per channel block. The rounded form computed 16-column-rounded rows into a
// workspace and copied them out (kernels/ops/conv.h has the TCN it was measured on).
bool is_unit_stride_1d(const ConvGeometry& g) {
  return g.rank == 1 && g.c_in_per_group > 1 && g.window.strides[0] == 1 && !is_pointwise(g);
}

OpInstance padded_row_conv(const ConvGeometry& g, const TensorRef& X, const TensorRef& W,
                           const TensorRef& B, const std::vector<arith::Expr>& out_shape,
                           const FusedEpilogue* epilogue, vm::DType dtype) {
  FlatConv fc;
  fc.patches = pad_spatial(X, g.window, 0.0);
  fc.patches_are_padded_rows = true;
  fc.k_dims = {g.c_in_per_group, g.window.kernel[0]};
  fc.input = [P = fc.patches, d = g.window.dilations[0]](
                 const arith::Expr& n, const FlatConv::Ks& k, const FlatConv::Ks& at) {
    return te::read(P, {n, k[0], at[0] + k[1] * d});
  };
  fc.weight = [&W](const arith::Expr& o, const FlatConv::Ks& k) {
    return te::read(W, {o, k[0], k[1]});
  };
  return flat_conv(g, fc, X, W, B, out_shape, epilogue, dtype);
}

// A kernel that fits in its stride, or a framing conv's window of a few long hops (an STFT as
// a conv: Silero VAD's 256 taps every 128 samples over 4-6 frames, whose output rows are too
// short for vectors along them: 45 us of its 100).
bool fits_patches(int64_t kernel, int64_t stride) {
  return kernel <= stride || (stride >= kFramingHop && kernel <= 4 * stride);
}

// A conv whose kernel fits in its stride in every dim, without pads or dilation (a ViT's
// or a ConvNeXt's patch embedding, kernel = stride = 16 or 4; a ResNet's 1x1 stride-2
// shortcut) reads each input element at most once. Its patches are copied once into
// Patches[n, c, t_0, t_1, y, x] = X[n, c, y*s_0 + t_0, x*s_1 + t_1] (no larger than X),
// and the conv is a pointwise one over them, reduced over (c, t_0, t_1) with W in its own
// layout: before, each vector of output columns gathered its inputs stride elements apart
// (ViT-style patch embedding, 3 -> 96 channels at 224x224: 2.58 -> 0.35 ms).
bool is_patchwise(const ConvGeometry& g) {
  if (g.groups != 1) return false;
  const Window& w = g.window;
  bool strided = false;
  for (size_t d = 0; d < g.rank; ++d) {
    if (!fits_patches(w.kernel[d], w.strides[d]) || w.dilations[d] != 1 || w.pad_begin(d) != 0 ||
        w.pad_end(d) != 0) {
      return false;
    }
    strided |= w.strides[d] > 1;
  }
  return strided;
}

OpInstance patch_conv(const ConvGeometry& g, const TensorRef& X, const TensorRef& W,
                      const TensorRef& B, const std::vector<arith::Expr>& out_shape,
                      const FusedEpilogue* epilogue, vm::DType dtype) {
  const Window& win = g.window;
  // Patches[n, c, t..., y...] = X[n, c, y*s + t, ...]: W's row order (c, t...), each row
  // the output's positions.
  std::vector<arith::Expr> shape = {out_shape[0], arith::make_int(g.c_in)};
  FlatConv fc;
  fc.k_dims = {g.c_in};
  for (int64_t k : win.kernel) {
    shape.push_back(arith::make_int(k));
    fc.k_dims.push_back(k);
  }
  shape.insert(shape.end(), out_shape.begin() + 2, out_shape.end());
  fc.patches = te::compute("Patches", shape, [&](const Indices& i) {
    std::vector<arith::Expr> xi = {i[0], i[1]};
    for (size_t d = 0; d < g.rank; ++d) {
      xi.push_back(i[2 + g.rank + d] * win.strides[d] + i[2 + d]);
    }
    return te::read(X, xi);
  });
  fc.input = [&fc](const arith::Expr& n, const FlatConv::Ks& k, const FlatConv::Ks& at) {
    FlatConv::Ks pi = {n};
    pi.insert(pi.end(), k.begin(), k.end());
    pi.insert(pi.end(), at.begin(), at.end());
    return te::read(fc.patches, pi);
  };
  fc.weight = [&W](const arith::Expr& o, const FlatConv::Ks& k) {
    FlatConv::Ks wi = {o};
    wi.insert(wi.end(), k.begin(), k.end());
    return te::read(W, wi);
  };
  return flat_conv(g, fc, X, W, B, out_shape, epilogue, dtype);
}

// A 2-D conv of unit strides (not pointwise, not depthwise) computed along the padded
// input's flat rows: with Wp the padded width, output position p = oh*Wp + ow reads
// P[.., p + kh*Wp + kw], so the register tile of 16 positions runs across row ends. The
// Wp - Wout columns past each row's end are computed and dropped (2 of 58 at a 56-wide
// 3x3 layer), where a symbolic width's 16-column tiles along each row compute 64 of every
// 56 (and 16 of every 7 at a 7-wide one) into a rounded workspace. Static widths keep
// their rows: their tails take narrower vectors, which cost Zen 4 less (measured: flat
// 130 -> 137 us at 56 wide, 186 -> 238 at 7). "Conv" is that workspace, [n, c_out, Hout*Wp]; Y
// copies its columns out (with bias and epilogue). P has one more row of zeros at its end for the
// last row's dropped columns, whose taps reach up to kw - 1 elements past its rows.
bool is_unit_stride_2d(const ConvGeometry& g) {
  if (g.rank != 2 || g.c_in_per_group == 1 || is_pointwise(g)) return false;
  for (size_t d = 0; d < g.rank; ++d) {
    if (g.window.strides[d] != 1) return false;
  }
  return true;
}

OpInstance padded_flat_conv(const ConvGeometry& g, const TensorRef& X, const TensorRef& W,
                            const TensorRef& B, const std::vector<arith::Expr>& out_shape,
                            const FusedEpilogue* epilogue, vm::DType dtype) {
  const Window& win = g.window;
  Window rows = win;
  rows.pads[g.rank] += 1;  // one more row at the end of the first spatial dim
  TensorRef P = pad_spatial(X, rows, 0.0, arith::make_int(0));
  const arith::Expr pitch = P->shape().back();
  const arith::Expr flat = arith::simplify(out_shape[2] * pitch);
  te::IterVar rc = te::reduce_axis(g.c_in_per_group, "rc");
  te::IterVar rh = te::reduce_axis(win.kernel[0], "rk0");
  te::IterVar rw = te::reduce_axis(win.kernel[1], "rk1");
  TensorRef C = te::compute("Conv", {out_shape[0], out_shape[1], flat}, [&](const Indices& i) {
    arith::Expr c = rc.var;
    if (g.groups > 1) c = arith::floordiv(i[1], g.c_out_per_group) * g.c_in_per_group + c;
    const arith::Expr& p = i[2];
    tir::Expr x = te::read(P, {i[0], c, arith::floordiv(p, pitch) + rh.var * win.dilations[0],
                               arith::floormod(p, pitch) + rw.var * win.dilations[1]});
    return te::sum(x * te::read(W, {i[1], rc.var, rh.var, rw.var}), {rc, rh, rw});
  });
  TensorRef Y = te::compute("Y", out_shape, [&](const Indices& i) {
    tir::Expr y = te::read(C, {i[0], i[1], i[2] * pitch + i[3]});
    if (B) y = y + te::read(B, {i[1]});
    return epilogue != nullptr ? epilogue->apply(y, i) : y;
  });
  OpInstance inst = conv_instance(g, X, W, B, Y, out_shape, epilogue, dtype);
  inst.name += "_flat_rows";
  inst.schedule = [Y, C, P, specs = inst.knobs](const KnobValues& knobs) {
    const int64_t oc_block = knob_value(specs, knobs, "oc_block");
    const int64_t ow_block = knob_value(specs, knobs, "ow_block");
    if (oc_block <= 0 || ow_block <= 0) user_error("conv: oc_block and ow_block must be > 0");
    const bool parallel = knob_value(specs, knobs, "parallel") != 0;
    te::Schedule s = te::create_schedule({Y});
    schedule_injective(s, P, 1, parallel);  // scalar: see conv_schedule
    schedule_injective(s, Y, kWidthMultiple, parallel);
    TensorRef acc = s.cache_write(C, "local");
    te::Stage& sc = s[C];
    tile_flat_positions(s, sc, acc, sc.axis(2), oc_block, ow_block, parallel);
    return s;
  };
  return inst;
}

// For residue dispatch (kernels/dispatch), when the output width is rounded: the factor of
// the symbolic input width that makes the output width a multiple of kWidthMultiple (16
// times the stride, when the padding keeps ceil(w / stride) columns), so that the variant
// for such widths tiles the output directly, with no rounded workspace and no copy out.
// Empty when the input width is not a bare dim or no such factor exists.
std::vector<std::pair<arith::Var, int64_t>> width_multiples(const TensorType& x,
                                                            const Window& win) {
  const arith::Expr& in = x.shape.back();
  const size_t d = x.shape.size() - 3;
  if (in.kind() != arith::ExprKind::kVar) return {};
  const int64_t factor = kWidthMultiple * win.strides[d];
  arith::Var q("q");
  arith::Analyzer an;
  an.bind(q, 1, arith::kPosInf);
  if (!an.provably_divisible(window_output_dim(arith::Expr(q) * factor, win, d), kWidthMultiple)) {
    return {};
  }
  return {{arith::Var(in), factor}};
}

OpInstance conv_with(const TensorType& x, const TensorType& w,
                     const std::optional<TensorType>& bias, const ConvAttrs& attrs,
                     const FusedEpilogue* epilogue) {
  const std::string op = "conv";
  ConvGeometry g = conv_geometry(op, x, w, bias, attrs, false);
  for (int64_t p : attrs.output_padding) {
    if (p != 0) user_error("conv: output_padding is for conv_transpose");
  }
  const Window& win = g.window;
  std::vector<arith::Expr> out_shape = {x.shape[0], arith::make_int(g.c_out)};
  for (size_t d = 0; d < g.rank; ++d)
    out_shape.push_back(window_output_dim(x.shape[2 + d], win, d));
  check_output_dims(op, out_shape);

  // A symbolic output width is computed rounded up to kWidthMultiple columns (the padded
  // input gets the matching extra zeros) into a workspace, then copied out: every width
  // block is then a full vector (before masked tails, a symbolic tail ran scalar: 4x
  // slower at width 56). Static widths keep their (vectorized, constant-length) tail.
  // A depthwise conv of unit stride computes its output in place instead, the last width
  // block a masked tail: no copy out (MobileNet's 72-channel 56x56 layer 142 -> 125 us,
  // 480-channel 14x14 112 -> 95 us). Strided ones keep the workspace: in place ran 4-12%
  // faster there but doubled their compile time (row and width tails of per-row pads).
  const arith::Expr width = out_shape.back();
  const bool round_width = !width.is_int_imm() && !arith::provably_divisible(width, kWidthMultiple);
  const bool in_place = g.c_in_per_group == 1 && g.c_out_per_group == 1 && win.strides.back() == 1;
  const bool rounded_copy = round_width && !in_place;
  const std::vector<std::pair<arith::Var, int64_t>> multiples =
      round_width ? width_multiples(x, win) : std::vector<std::pair<arith::Var, int64_t>>{};
  std::vector<arith::Expr> conv_shape = out_shape;
  arith::Expr extra_input = arith::make_int(0);
  if (rounded_copy) {
    conv_shape.back() = arith::simplify(
        arith::floordiv(width + (kWidthMultiple - 1), kWidthMultiple) * kWidthMultiple);
    extra_input = arith::simplify((conv_shape.back() - width) * win.strides.back());
  }

  TensorRef X = te::placeholder("X", x.shape, x.dtype);
  TensorRef W = te::placeholder("W", w.shape, w.dtype);
  TensorRef B = bias ? te::placeholder("B", bias->shape, bias->dtype) : nullptr;
  if (is_patchwise(g)) return patch_conv(g, X, W, B, out_shape, epilogue, x.dtype);
  // The 1-D forms below compute their one row in place, so a variant for widths of whole
  // vectors would save one masked tail per channel block and cost a second kernel; over
  // 2-D positions the variant (the NCHW template, rows in place) is kept.
  if (round_width && is_pointwise(g)) {
    OpInstance inst = pointwise_conv(g, X, W, B, out_shape, epilogue, x.dtype);
    if (g.rank == 2) inst.preferred_multiples = multiples;
    return inst;
  }
  if (round_width && is_unit_stride_1d(g)) {
    return padded_row_conv(g, X, W, B, out_shape, epilogue, x.dtype);
  }
  if (round_width && is_unit_stride_2d(g)) {
    OpInstance inst = padded_flat_conv(g, X, W, B, out_shape, epilogue, x.dtype);
    inst.preferred_multiples = multiples;  // their variants tile the rows in place
    return inst;
  }
  // Stride 2 and up: a block of 2 output rows then pads 5 input rows for 4 new ones; at
  // stride 1, 4 rows for 2, and the root copy measured faster.
  const bool pad_per_rows = g.c_in_per_group == 1 && g.rank == 2 && win.strides[0] >= 2;
  // Such a depthwise conv of a static width and stride s along it reads its padded rows by
  // width phase: Q[.., h, phase, j] = P[.., h, j * s + phase] (P inlined: Q is the one
  // copy, its interior vector loads of s-strided X between the borders loop_partition
  // splits off), so that tap kw of 16 output columns is one contiguous vector (phase kw mod
  // s, from column ow + kw div s) instead of two loads and a permute per tap. P's
  // expression reaches s - 1 zero columns further for the last phase's row. Measured on
  // MobileNet-style 3x3 stride-2 layers, static: 64 channels at 112x112 187 -> 154 us,
  // 240 at 28x28 92 -> 50, 672 at 14x14 76 -> 41. Over a symbolic width the copy's tails
  // (one per row and phase, their bounds symbolic) cost more than the permutes saved
  // (247 -> 269 us at 112x112), so those keep the strided reads.
  const int64_t sw = win.strides.back();
  const bool split_phases =
      pad_per_rows && sw >= 2 && win.dilations.back() == 1 && x.shape.back().is_int_imm();
  TensorRef P = pad_spatial(X, win, 0.0,
                            split_phases ? arith::simplify(extra_input + (sw - 1)) : extra_input);
  TensorRef Q;  // P by width phase, or null
  if (split_phases) {
    // P reaches s - 1 columns past the padded width: every phase gets ceil(width / s).
    std::vector<arith::Expr> q_shape = P->shape();
    const arith::Expr columns = arith::simplify(arith::floordiv(q_shape.back(), sw));
    q_shape.back() = arith::make_int(sw);
    q_shape.push_back(columns);
    Q = te::compute("PadPhases", q_shape, [&](const Indices& i) {
      std::vector<arith::Expr> idx(i.begin(), i.end() - 2);
      idx.push_back(i.back() * sw + i[i.size() - 2]);
      return te::read(P, idx);
    });
  }
  te::IterVar rc = te::reduce_axis(g.c_in_per_group, "rc");
  std::vector<te::IterVar> rk;
  for (size_t d = 0; d < g.rank; ++d)
    rk.push_back(te::reduce_axis(win.kernel[d], "rk" + std::to_string(d)));
  const bool separate_output = B || rounded_copy || epilogue != nullptr;
  TensorRef C = te::compute(separate_output ? "Conv" : "Y", conv_shape, [&](const Indices& i) {
    arith::Expr c = rc.var;
    if (g.groups > 1) c = arith::floordiv(i[1], g.c_out_per_group) * g.c_in_per_group + c;
    std::vector<arith::Expr> xi = {i[0], c};
    std::vector<arith::Expr> wi = {i[1], rc.var};
    std::vector<te::IterVar> axes = {rc};
    for (size_t d = 0; d < g.rank; ++d) {
      const arith::Var& tap = rk[d].var;
      if (Q && d + 1 == g.rank) {
        xi.push_back(arith::floormod(tap, sw));
        xi.push_back(i[2 + d] + arith::floordiv(tap, sw));
      } else {
        xi.push_back(i[2 + d] * win.strides[d] + tap * win.dilations[d]);
      }
      wi.push_back(tap);
      axes.push_back(rk[d]);
    }
    return te::sum(te::read(Q ? Q : P, xi) * te::read(W, wi), axes);
  });
  TensorRef Y = C;
  if (separate_output) {
    Y = te::compute("Y", out_shape, [&](const Indices& i) {
      std::vector<arith::Expr> idx(i.begin(), i.end());
      tir::Expr y = te::read(C, idx);
      if (B) y = y + te::read(B, {i[1]});
      return epilogue != nullptr ? epilogue->apply(y, i) : y;
    });
  }

  OpInstance inst = conv_instance(g, X, W, B, Y, out_shape, epilogue, x.dtype);
  ConvStages stages;
  stages.out = Y;
  stages.pad = P == X ? nullptr : P;
  stages.phases = Q;
  stages.pad_per_rows = pad_per_rows;
  if (rounded_copy) {
    stages.tiled = C;  // at the root, into a workspace; Y copies (and adds the bias)
    stages.copy = Y;
  } else {
    stages.tiled = Y;
    if (separate_output) stages.acc = C;  // computed at Y's tiles; bias, epilogue when storing
  }
  inst.schedule = [stages, specs = inst.knobs](const KnobValues& knobs) {
    return conv_schedule(stages, specs, knobs);
  };
  inst.preferred_multiples = multiples;
  return inst;
}

// A transposed convolution of unit dilation, computed by output phase. Per spatial dim
// (stride s, kernel k, pad_begin pb), output o = p*s + t meets the taps r(t) + s*j,
// r(t) = (t + pb) mod s, j in [0, J), J = ceil(k / s), through input p + delta(t) - j,
// delta(t) = (t + pb) floordiv s (taps past k weigh 0, inputs out of range read the
// zero-padded input P, J - 1 in front). Stage "Acc" is [n, o, p_0, t_0, ..., t_last,
// p_last] (the last position innermost):
//   Acc[n, o, .., p, t, ..] = sum_c sum_j P[n, c, .., p + delta(t) - j + J - 1, ..]
//                                        * W[c, o, .., r(t) + s*j, ..]
// and Y reads it at (o floordiv s, o mod s) and adds the bias. Y's schedule splits each
// output dim by its stride into (position, phase), so that the register tile is oc_block
// channels x every phase x 16 positions computed at Y's tile: once the phases are
// unrolled, delta and r are constants, each input vector is loaded once per (c, j) for
// oc_block * phases accumulators (they differ only in the weight), and Y's stores are s
// apart (kernels/codegen: one masked contiguous store). Kernel == stride with no pads (the
// upsampling ConvTranspose of detection and segmentation heads) is J = 1, delta = 0, no
// padded input: one tap per output. Before, other shapes (a vocoder's k = 2s, a GAN's k =
// 4, s = 2, p = 1) took the gather form, a select per tap and no vectors: HiFi-GAN-style
// 32 -> 16 channels, k = 8, s = 4 over 400 positions ran at 0.6 GFLOP/s (5.6 ms).
OpInstance conv_transpose_phases(const ConvGeometry& g, const TensorRef& X, const TensorRef& W,
                                 const TensorRef& B, const std::vector<arith::Expr>& out_shape,
                                 const std::vector<int64_t>& grow, vm::DType dtype) {
  const Window& win = g.window;
  const size_t r = g.rank;
  // Per dim: J taps per phase and the zero padding P needs.
  std::vector<int64_t> taps_per_phase(r);
  Window pad_window{win.kernel, win.strides, std::vector<int64_t>(2 * r, 0), win.dilations};
  bool one_tap = true;
  for (size_t d = 0; d < r; ++d) {
    const int64_t s = win.strides[d], pb = win.pad_begin(d);
    taps_per_phase[d] = (win.kernel[d] + s - 1) / s;
    const int64_t max_delta = (s - 1 + pb) / s;
    // Positions p run to ceil(O / s) - 1 and read up to p + max_delta + J - 1 in P, whose
    // extent is the input's + (J - 1) + end: O = (I - 1)*s + grow, so the end is constant.
    const int64_t ceil_grow = grow[d] > 0 ? (grow[d] + s - 1) / s : -((-grow[d]) / s);
    const int64_t end = std::max<int64_t>(0, ceil_grow - 1 + max_delta);
    pad_window.pads[d] = taps_per_phase[d] - 1;
    pad_window.pads[r + d] = end;
    one_tap &= taps_per_phase[d] == 1 && pb == 0;
  }
  TensorRef P = pad_spatial(X, pad_window, 0.0, arith::make_int(0));
  std::vector<arith::Expr> acc_shape = {out_shape[0], out_shape[1]};
  std::vector<arith::Expr> positions(r);
  for (size_t d = 0; d < r; ++d) {
    positions[d] =
        arith::simplify(arith::floordiv(out_shape[2 + d] + (win.strides[d] - 1), win.strides[d]));
  }
  for (size_t d = 0; d + 1 < r; ++d) {
    acc_shape.push_back(positions[d]);
    acc_shape.push_back(arith::make_int(win.strides[d]));
  }
  acc_shape.push_back(arith::make_int(win.strides[r - 1]));
  acc_shape.push_back(positions[r - 1]);
  te::IterVar rc = te::reduce_axis(g.c_in_per_group, "rc");
  std::vector<te::IterVar> rj;
  for (size_t d = 0; d < r; ++d) {
    if (taps_per_phase[d] > 1)
      rj.push_back(te::reduce_axis(taps_per_phase[d], "rj" + std::to_string(d)));
  }
  TensorRef A = te::compute("Acc", acc_shape, [&](const Indices& i) {
    arith::Expr c = arith::floordiv(i[1], g.c_out_per_group) * g.c_in_per_group + rc.var;
    std::vector<arith::Expr> xi = {i[0], c};
    std::vector<arith::Expr> wi = {c, arith::floormod(i[1], g.c_out_per_group)};
    arith::Expr tap_in_kernel = arith::make_bool(true);
    bool taps_past_kernel = false;
    size_t next_j = 0;
    for (size_t d = 0; d < r; ++d) {
      const arith::Var& p = d + 1 < r ? i[2 + 2 * d] : i[2 * r + 1];
      const arith::Var& t = d + 1 < r ? i[3 + 2 * d] : i[2 * r];
      const int64_t s = win.strides[d], pb = win.pad_begin(d);
      arith::Expr j = taps_per_phase[d] > 1 ? arith::Expr(rj[next_j++].var) : arith::make_int(0);
      arith::Expr delta = arith::floordiv(t + pb, s);
      arith::Expr tap = arith::floormod(t + pb, s) + j * s;
      xi.push_back(p + delta - j + (taps_per_phase[d] - 1));
      if (taps_per_phase[d] * s > win.kernel[d]) {
        taps_past_kernel = true;
        tap_in_kernel = arith::logical_and(tap_in_kernel, arith::lt(tap, win.kernel[d]));
        tap = arith::min(tap, win.kernel[d] - 1);
      }
      wi.push_back(tap);
    }
    tir::Expr w = te::read(W, wi);
    if (taps_past_kernel) {
      w = tir::select(tir::index_value(tap_in_kernel, tir::boolean()), w,
                      tir::make_const(w.type(), 0.0));
    }
    std::vector<te::IterVar> axes = {rc};
    axes.insert(axes.end(), rj.begin(), rj.end());
    return te::sum(te::read(P, xi) * w, axes);
  });
  TensorRef Y = te::compute("Y", out_shape, [&](const Indices& i) {
    std::vector<arith::Expr> ai = {i[0], i[1]};
    for (size_t d = 0; d + 1 < r; ++d) {
      ai.push_back(arith::floordiv(i[2 + d], win.strides[d]));
      ai.push_back(arith::floormod(i[2 + d], win.strides[d]));
    }
    ai.push_back(arith::floormod(i[1 + r], win.strides[r - 1]));
    ai.push_back(arith::floordiv(i[1 + r], win.strides[r - 1]));
    tir::Expr y = te::read(A, ai);
    return B ? y + te::read(B, {i[1]}) : y;
  });
  OpInstance inst;
  inst.name = op_name("conv_transpose", g, dtype) + (one_tap ? "_one_tap" : "_phases");
  inst.inputs = {X, W};
  if (B) inst.inputs.push_back(B);
  inst.outputs = {Y};
  inst.knobs = reduction_knobs(out_shape);
  int64_t taps = 1;
  for (size_t d = 0; d < r; ++d) taps *= win.strides[d];
  // The most channels, halving from 16 / taps, that divide C_out.
  int64_t oc_block = 1;
  for (int64_t b = 16 / std::min<int64_t>(taps, 16); b > 1; b /= 2) {
    if (g.c_out % b == 0) {
      oc_block = b;
      break;
    }
  }
  std::vector<int64_t> strides = win.strides;
  TensorRef pad = P == X ? nullptr : P;
  inst.schedule = [Y, A, pad, oc_block, strides, specs = inst.knobs](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({Y});
    const bool parallel = knob_value(specs, knobs, "parallel") != 0;
    if (pad) schedule_injective(s, pad, 1, parallel);
    te::Stage& sy = s[Y];
    const size_t rank = strides.size();
    auto [oo, oi] = sy.split(sy.axis(1), oc_block);
    std::vector<te::IterVarRef> positions, taps_axes;
    for (size_t d = 0; d < rank; ++d) {
      auto [p, t] = sy.split(sy.axis(2 + d), strides[d]);
      positions.push_back(p);
      taps_axes.push_back(t);
    }
    auto [outer, lanes] = sy.split(positions.back(), kWidthMultiple);
    // n, o.outer, the other positions, the last position's blocks | o.inner, taps, lanes.
    std::vector<te::IterVarRef> order{sy.axis(0), oo};
    order.insert(order.end(), positions.begin(), positions.end() - 1);
    order.insert(order.end(), {outer, oi});
    order.insert(order.end(), taps_axes.begin(), taps_axes.end());
    order.push_back(lanes);
    sy.reorder(order);
    sy.vectorize(lanes);
    sy.unroll(oi);
    for (const te::IterVarRef& t : taps_axes) sy.unroll(t);
    // Rows in parallel (1-D: the channel blocks), inside the serial batch loop: a fused
    // loop over symbolic extents would keep the accumulator out of registers.
    if (parallel) sy.parallel(rank > 1 ? positions.front() : oo);
    // The accumulator at Y's tile: the reduction outermost, then (o, taps, lanes), whose
    // extents there are oc_block, the strides and 16.
    te::Stage& sa = s[A];
    sa.compute_at(sy, outer);
    std::vector<te::IterVarRef> acc_order;
    for (size_t k = 0; k < sa.num_reduce_axes(); ++k) acc_order.push_back(sa.reduce_axis(k));
    for (size_t d = 0; d < sa.num_axes(); ++d) acc_order.push_back(sa.axis(d));
    sa.reorder(acc_order);
    for (size_t k = 1; k < sa.num_reduce_axes(); ++k) sa.unroll(sa.reduce_axis(k));
    for (size_t d = 1; d + 1 < sa.num_axes(); ++d) sa.unroll(sa.axis(d));
    sa.vectorize(sa.axis(sa.num_axes() - 1));
    return s;
  };
  return inst;
}

}  // namespace

OpInstance conv(const TensorType& x, const TensorType& w, const std::optional<TensorType>& bias,
                const ConvAttrs& attrs) {
  return with_epilogue_builder(
      [x, w, bias, attrs](const FusedEpilogue* e) { return conv_with(x, w, bias, attrs, e); });
}

OpInstance conv_transpose(const TensorType& x, const TensorType& w,
                          const std::optional<TensorType>& bias, const ConvAttrs& attrs) {
  const std::string op = "conv_transpose";
  ConvGeometry g = conv_geometry(op, x, w, bias, attrs, true);
  const Window& win = g.window;
  std::vector<int64_t> out_pad =
      spatial_values(attrs.output_padding, g.rank, 0, 0, op, "output_padding");
  std::vector<arith::Expr> out_shape = {x.shape[0], arith::make_int(g.c_out)};
  std::vector<int64_t> grows;
  for (size_t d = 0; d < g.rank; ++d) {
    if (out_pad[d] >= std::max(win.strides[d], win.dilations[d])) {
      user_error(op, ": output_padding must be below the stride or the dilation");
    }
    int64_t grow =
        out_pad[d] + win.dilations[d] * (win.kernel[d] - 1) + 1 - win.pad_begin(d) - win.pad_end(d);
    grows.push_back(grow);
    out_shape.push_back(arith::simplify((x.shape[2 + d] - 1) * win.strides[d] + grow));
  }
  check_output_dims(op, out_shape);

  TensorRef X = te::placeholder("X", x.shape, x.dtype);
  TensorRef W = te::placeholder("W", w.shape, w.dtype);
  TensorRef B = bias ? te::placeholder("B", bias->shape, bias->dtype) : nullptr;
  bool unit_dilation = true;
  for (size_t d = 0; d < g.rank; ++d) unit_dilation &= win.dilations[d] == 1;
  if (unit_dilation) return conv_transpose_phases(g, X, W, B, out_shape, grows, x.dtype);
  te::IterVar rc = te::reduce_axis(g.c_in_per_group, "rc");
  std::vector<te::IterVar> rk;
  for (size_t d = 0; d < g.rank; ++d)
    rk.push_back(te::reduce_axis(win.kernel[d], "rk" + std::to_string(d)));
  // Output position o meets input position i through kernel tap k when
  // o + pad_begin = i*s + k*d: i = (o + pad_begin - k*d) / s when that divides and is in range.
  TensorRef C = te::compute(B ? "Conv" : "Y", out_shape, [&](const Indices& i) {
    arith::Expr group = arith::floordiv(i[1], g.c_out_per_group);
    arith::Expr c = group * g.c_in_per_group + rc.var;
    std::vector<arith::Expr> xi = {i[0], c};
    std::vector<arith::Expr> wi = {c, arith::floormod(i[1], g.c_out_per_group)};
    std::vector<te::IterVar> axes = {rc};
    arith::Expr hit = arith::make_bool(true);
    for (size_t d = 0; d < g.rank; ++d) {
      int64_t s = win.strides[d];
      arith::Expr t = i[2 + d] + win.pad_begin(d) - rk[d].var * win.dilations[d];
      arith::Expr pos = arith::floordiv(t, s);
      const arith::Expr& extent = x.shape[2 + d];
      arith::Expr ok = arith::logical_and(arith::ge(t, 0), arith::lt(pos, extent));
      if (s > 1) ok = arith::logical_and(ok, arith::eq(arith::floormod(t, s), 0));
      hit = arith::logical_and(hit, ok);
      xi.push_back(arith::max(arith::min(pos, extent - 1), 0));
      wi.push_back(rk[d].var);
      axes.push_back(rk[d]);
    }
    tir::Expr term = te::read(X, xi) * te::read(W, wi);
    return te::sum(
        tir::select(tir::index_value(hit, tir::boolean()), term, tir::make_const(term.type(), 0.0)),
        axes);
  });
  TensorRef Y = add_bias(C, B);

  OpInstance inst;
  inst.name = op_name("conv_transpose", g, x.dtype);
  inst.inputs = {X, W};
  if (B) inst.inputs.push_back(B);
  inst.outputs = {Y};
  inst.knobs = reduction_knobs(out_shape);
  inst.schedule = [Y, C, B, specs = inst.knobs](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({Y});
    bool parallel = knob_value(specs, knobs, "parallel") != 0;
    int64_t unroll = knob_value(specs, knobs, "unroll");
    if (!B) {
      schedule_reduction(s, Y, parallel, unroll);
      return s;
    }
    // One output element at a time: the reduction is computed where the bias is added.
    te::Stage& so = s[Y];
    te::IterVarRef rows = so.axis(0);
    for (size_t d = 1; d + 1 < so.num_axes(); ++d) rows = so.fuse(rows, so.axis(d));
    if (parallel) so.parallel(rows);
    s[C].compute_at(so, so.axis(so.num_axes() - 1));
    if (unroll > 1) {
      te::Stage& sc = s[C];
      auto [outer, inner] = sc.split(sc.reduce_axis(sc.num_reduce_axes() - 1), unroll);
      sc.unroll(inner);
    }
    return s;
  };
  return inst;
}

}  // namespace dynvm::ops
