// Type relations of the neural-network operators: MatMul / Gemm, Conv / ConvTranspose,
// pooling, normalizations, Softmax, reductions, ArgMax / ArgMin, LSTM / GRU / RNN,
// Resize and CumSum. Spatial output dims are arith expressions of the input dims, e.g.
// `(w + 2 - 3) floordiv 2 + 1` simplified.
#include <algorithm>
#include <cmath>

#include "compiler/op/families.h"
#include "kernels/ops/conv_blocked.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

using Facts = std::vector<ValueFacts>;

Dim window_out(const OpContext& ctx, const Dim& in, int64_t kernel, int64_t stride,
               int64_t dilation, int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  Dim span = ctx.sub(ctx.add(in, Dim(pad_begin + pad_end)), Dim(dilation * (kernel - 1) + 1));
  if (ceil_mode) span = ctx.add(span, Dim(stride - 1));
  Dim out = ctx.add(ctx.floordiv(span, Dim(stride)), Dim(1));
  // ceil_mode: a window that would start past the input and its begin pad is dropped, so
  // at most floordiv(in + pad_begin - 1, stride) + 1 windows; the cap can matter only when
  // the stride is larger than the window's span less the end pad (kernels/ops/pool.h).
  if (ceil_mode && stride > dilation * (kernel - 1) + 1 - pad_end) {
    if (!in.is_const() || !out.is_const()) {
      ctx.fail("ceil_mode with stride ", stride, " on the symbolic dim ", to_string(in),
               " (a window past the input may be dropped)");
    }
    out = Dim(std::min(out.value(), (in.value() + pad_begin - 1) / stride + 1));
  }
  return out;
}

// Spatial dims of a windowed op (Conv, pools) with ONNX's auto_pad / pads / strides /
// dilations over the spatial axes of x (rank 2 + n).
std::vector<Dim> window_dims(const OpContext& ctx, const std::vector<Dim>& x,
                             const std::vector<int64_t>& kernel, bool ceil_mode) {
  const size_t n = kernel.size();
  if (x.size() != n + 2) ctx.fail("input rank ", x.size(), " does not match a ", n, "-D window");
  std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dilations = ctx.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (strides.size() != n || dilations.size() != n || pads.size() != 2 * n) {
    ctx.fail("strides, dilations or pads do not match the ", n, " spatial dims");
  }
  std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  std::vector<Dim> out;
  for (size_t k = 0; k < n; ++k) {
    if (strides[k] < 1 || dilations[k] < 1) ctx.fail("strides and dilations must be positive");
    const Dim& in = x[k + 2];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out.push_back(ctx.floordiv(ctx.add(in, Dim(strides[k] - 1)), Dim(strides[k])));
    } else if (auto_pad == "VALID") {
      out.push_back(window_out(ctx, in, kernel[k], strides[k], dilations[k], 0, 0, ceil_mode));
    } else if (auto_pad == "NOTSET") {
      out.push_back(window_out(ctx, in, kernel[k], strides[k], dilations[k], pads[k], pads[k + n],
                               ceil_mode));
    } else {
      ctx.fail("unknown auto_pad '", auto_pad, "'");
    }
  }
  return out;
}

std::vector<int64_t> const_dims(const OpContext& ctx, const std::vector<Dim>& dims, size_t begin,
                                const char* what) {
  std::vector<int64_t> out;
  for (size_t k = begin; k < dims.size(); ++k) {
    if (!dims[k].is_const()) ctx.fail(what, " must be static, got ", to_string(dims[k]));
    out.push_back(dims[k].value());
  }
  return out;
}

Facts conv_op(OpContext& ctx) {
  const std::vector<Dim>& x = ctx.dims(0);
  const std::vector<Dim>& w = ctx.dims(1);
  if (w.size() != x.size()) ctx.fail("weights rank ", w.size(), " != input rank ", x.size());
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape", const_dims(ctx, w, 2, "kernel size"));
  std::vector<Dim> out{x[0], w[0]};
  for (const Dim& d : window_dims(ctx, x, kernel, false)) out.push_back(d);
  return {tensor_facts(ctx.dtype(0), out)};
}

Facts conv_transpose_op(OpContext& ctx) {
  const std::vector<Dim>& x = ctx.dims(0);
  const std::vector<Dim>& w = ctx.dims(1);
  const size_t n = x.size() - 2;
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape", const_dims(ctx, w, 2, "kernel size"));
  std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dilations = ctx.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> output_padding = ctx.attr_ints("output_padding", std::vector<int64_t>(n, 0));
  if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n) {
    ctx.fail("attributes do not match the ", n, " spatial dims");
  }
  int64_t group = ctx.attr_int("group", 1);
  if (!w[1].is_const()) ctx.fail("weights' output channels must be static");
  std::vector<Dim> out{x[0], Dim(w[1].value() * group)};
  std::vector<int64_t> shape = ctx.attr_ints("output_shape", {});
  // SAME_UPPER / SAME_LOWER: the output is in * stride (the pads are derived from it).
  std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  for (size_t k = 0; k < n; ++k) {
    if (!shape.empty()) {
      out.emplace_back(shape[shape.size() - n + k]);
      continue;
    }
    if (same) {
      out.push_back(ctx.mul(x[k + 2], Dim(strides[k])));
      continue;
    }
    Dim d = ctx.mul(ctx.sub(x[k + 2], Dim(1)), Dim(strides[k]));
    d = ctx.add(
        d, Dim(output_padding[k] + (kernel[k] - 1) * dilations[k] + 1 - pads[k] - pads[k + n]));
    out.push_back(d);
  }
  return {tensor_facts(ctx.dtype(0), out)};
}

Facts pool_op(OpContext& ctx) {
  const std::vector<Dim>& x = ctx.dims(0);
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape", {});
  if (kernel.empty()) ctx.fail("kernel_shape is required");
  std::vector<Dim> out{x[0], x[1]};
  for (const Dim& d : window_dims(ctx, x, kernel, ctx.attr_int("ceil_mode", 0) != 0))
    out.push_back(d);
  // MaxPool's optional second output, Indices: where each maximum is in X.
  if (ctx.attr_int("num_outputs", 1) == 2) {
    return {tensor_facts(ctx.dtype(0), out), tensor_facts(vm::DType::kInt64, out)};
  }
  return {tensor_facts(ctx.dtype(0), out)};
}

// MaxUnpool(X, I, output_shape?): the shape given (a value, possibly read at run time), else
// each spatial dim (in - 1) * stride - pads + kernel.
Facts max_unpool_op(OpContext& ctx) {
  if (ctx.dtype(1) != vm::DType::kInt64) ctx.fail("indices must be int64");
  if (ctx.has_input(2)) {
    std::optional<std::vector<Dim>> shape = ctx.values(2);
    if (!shape || shape->size() != ctx.rank(0)) ctx.fail("output_shape must have x's rank");
    return {tensor_facts(ctx.dtype(0), *shape)};
  }
  const std::vector<Dim>& x = ctx.dims(0);
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape", {});
  const size_t n = kernel.size();
  if (n == 0 || x.size() != n + 2) ctx.fail("kernel_shape must give one size per spatial dim");
  std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (strides.size() != n || pads.size() != 2 * n) ctx.fail("strides or pads do not match");
  std::vector<Dim> out{x[0], x[1]};
  for (size_t k = 0; k < n; ++k) {
    out.push_back(ctx.add(ctx.mul(ctx.sub(x[k + 2], Dim(1)), Dim(strides[k])),
                          Dim(kernel[k] - pads[k] - pads[k + n])));
  }
  return {tensor_facts(ctx.dtype(0), out)};
}

Facts global_pool_op(OpContext& ctx) {
  std::vector<Dim> out = ctx.dims(0);
  if (out.size() < 3) ctx.fail("input must be [N, C, spatial...]");
  for (size_t k = 2; k < out.size(); ++k) out[k] = Dim(1);
  return {tensor_facts(ctx.dtype(0), out)};
}

// numpy matmul: 1-D operands are promoted and the added dim removed again; batch dims
// broadcast.
Facts matmul_op(OpContext& ctx) {
  std::vector<Dim> a = ctx.dims(0), b = ctx.dims(1);
  if (a.empty() || b.empty()) ctx.fail("MatMul operands must have rank >= 1");
  if (ctx.dtype(0) != ctx.dtype(1)) ctx.fail("operands have different dtypes");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), Dim(1));
  if (b_vec) b.push_back(Dim(1));
  const Dim& ka = a[a.size() - 1];
  const Dim& kb = b[b.size() - 2];
  if (ka.is_const() && kb.is_const() && ka.value() != kb.value()) {
    ctx.fail("inner dims differ: ", ka.value(), " and ", kb.value());
  }
  std::vector<Dim> batch = broadcast_dims(ctx, std::vector<Dim>(a.begin(), a.end() - 2),
                                          std::vector<Dim>(b.begin(), b.end() - 2));
  std::vector<Dim> out = batch;
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  return {tensor_facts(ctx.dtype(0), out)};
}

// dynvm.MatMulPackedB(A, Bp) {n}: a MatMul whose constant B pack_weights packed into
// column panels [ceil(n/16), K, 16]; the output is A's shape with n columns.
Facts matmul_packed_b_op(OpContext& ctx) {
  std::vector<Dim> out = ctx.dims(0);
  if (out.size() < 2 || ctx.dims(1).size() != 3) ctx.fail("A must have rank >= 2, Bp rank 3");
  if (ctx.dtype(0) != ctx.dtype(1)) ctx.fail("operands have different dtypes");
  out.back() = Dim(ctx.attr_int("n", 0));
  return {tensor_facts(ctx.dtype(0), out)};
}

// The channel-blocked layout of compiler/passes/block_channels (kernels/ops/conv_blocked.h):
// dynvm.ToBlocked(X [N, C, H, W]) -> [N, ceil(C/16), H, W, 16]; dynvm.FromBlocked(Xb)
// {channels} -> [N, channels, H, W]; dynvm.ConvBlocked(Xb, W[, B]) {kernel_shape, strides,
// pads, dilations, depthwise, channels} -> [N, ceil(channels/16), OH, OW, 16] (a dense one's
// X may be NCHW).
Facts to_blocked_op(OpContext& ctx) {
  const std::vector<Dim>& x = ctx.dims(0);
  if (x.size() != 4 || !x[1].is_const()) ctx.fail("X must be [N, C, H, W] with a static C");
  return {tensor_facts(ctx.dtype(0), {x[0], Dim(ops::channel_blocks(x[1].value())), x[2], x[3],
                                      Dim(ops::kChannelBlock)})};
}

std::vector<Dim> blocked_input(OpContext& ctx) {
  const std::vector<Dim>& x = ctx.dims(0);
  if (x.size() != 5 || !x[4].is_const() || x[4].value() != ops::kChannelBlock) {
    ctx.fail("X must be [N, channel blocks, H, W, ", ops::kChannelBlock, "]");
  }
  return x;
}

Facts from_blocked_op(OpContext& ctx) {
  const std::vector<Dim> x = blocked_input(ctx);
  const int64_t channels = ctx.attr_int("channels", 0);
  if (!x[1].is_const() || ops::channel_blocks(channels) != x[1].value() || channels < 1) {
    ctx.fail(channels, " channels do not fill the input's blocks");
  }
  return {tensor_facts(ctx.dtype(0), {x[0], Dim(channels), x[2], x[3]})};
}

Facts conv_blocked_op(OpContext& ctx) {
  // A dense conv also reads an NCHW X (a stem's few channels).
  const std::vector<Dim> x = ctx.dims(0).size() == 4 && ctx.attr_int("depthwise", 0) == 0
                                 ? ctx.dims(0)
                                 : blocked_input(ctx);
  const int64_t channels = ctx.attr_int("channels", 0);
  if (channels < 1) ctx.fail("channels must be positive");
  std::vector<Dim> out{x[0], Dim(ops::channel_blocks(channels))};
  const std::vector<Dim> nchw{x[0], x[1], x[2], x[3]};
  for (const Dim& d : window_dims(ctx, nchw, ctx.attr_ints("kernel_shape", {}), false)) {
    out.push_back(d);
  }
  out.push_back(Dim(ops::kChannelBlock));
  return {tensor_facts(ctx.dtype(0), out)};
}

// dynvm.MaxPoolBlocked / dynvm.AveragePoolBlocked(Xb) {kernel_shape, strides, pads,
// dilations[, count_include_pad]}: pools over the blocked layout, [N, CB, OH, OW, 16].
Facts pool_blocked_op(OpContext& ctx) {
  const std::vector<Dim> x = blocked_input(ctx);
  std::vector<Dim> out{x[0], x[1]};
  for (const Dim& d :
       window_dims(ctx, {x[0], x[1], x[2], x[3]}, ctx.attr_ints("kernel_shape", {}), false)) {
    out.push_back(d);
  }
  out.push_back(x[4]);
  return {tensor_facts(ctx.dtype(0), out)};
}

// dynvm.Attention(Q, Kt, V[, mask]) {scale}: softmax(scale * Q Kt + mask) V, the chain
// compiler/passes/fuse_attention folds into one kernel. Q [..., Lq, D], Kt [..., D, Lk],
// V [..., Lk, Dv] of one rank, batch dims broadcast; the output is [batch..., Lq, Dv].
Facts attention_op(OpContext& ctx) {
  const std::vector<Dim>& q = ctx.dims(0);
  const std::vector<Dim>& kt = ctx.dims(1);
  const std::vector<Dim>& v = ctx.dims(2);
  if (q.size() < 2 || kt.size() != q.size() || v.size() != q.size()) {
    ctx.fail("Q, Kt and V must have one rank >= 2");
  }
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (ctx.dtype(i) != ctx.dtype(0)) ctx.fail("operands have different dtypes");
  }
  auto batch = [](const std::vector<Dim>& d) { return std::vector<Dim>(d.begin(), d.end() - 2); };
  std::vector<Dim> out = broadcast_dims(ctx, broadcast_dims(ctx, batch(q), batch(kt)), batch(v));
  out.push_back(q[q.size() - 2]);
  out.push_back(v.back());
  return {tensor_facts(ctx.dtype(0), out)};
}

Facts gemm_op(OpContext& ctx) {
  const std::vector<Dim>& a = ctx.dims(0);
  const std::vector<Dim>& b = ctx.dims(1);
  if (a.size() != 2 || b.size() != 2) ctx.fail("A and B must be 2-D");
  Dim m = ctx.attr_int("transA", 0) ? a[1] : a[0];
  Dim n = ctx.attr_int("transB", 0) ? b[0] : b[1];
  return {tensor_facts(ctx.dtype(0), {m, n})};
}

// Reductions: axes from the (constant) second input after normalization; all axes when
// absent (unless noop_with_empty_axes).
Facts reduce_op(OpContext& ctx) {
  const std::vector<Dim>& x = ctx.dims(0);
  std::vector<bool> reduced(x.size(), false);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.has_input(1)) {
    std::optional<std::vector<Dim>> values = ctx.values(1);
    axes = ctx.const_ints(1);
    if (!axes && values && !values->empty()) {
      // Axes read at run time: a reduced dim is 1 (the ONNX importer turns keepdims=0 into
      // a Squeeze of the result at the same axes).
      if (ctx.attr_int("keepdims", 1) == 0) {
        ctx.fail("keepdims=0 with axes read at run time (the importer squeezes instead)");
      }
      std::vector<arith::Expr> at = run_time_axes(ctx, *values, static_cast<int64_t>(x.size()));
      std::vector<Dim> out;
      for (size_t k = 0; k < x.size(); ++k) {
        if (x[k].is_any()) ctx.fail("dim ", k, " of the input is not known");
        out.push_back(
            ctx.simplify(arith::select(is_one_of(at, static_cast<int64_t>(k)), 1, x[k].expr())));
      }
      return {tensor_facts(ctx.dtype(0), out)};
    }
    if (!axes) ctx.fail("axes must be a constant");
  }
  if (!axes || axes->empty()) {
    if (ctx.attr_int("noop_with_empty_axes", 0) == 0) reduced.assign(x.size(), true);
  } else {
    for (int64_t a : *axes) reduced[ctx.axis(a, x.size())] = true;
  }
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  std::vector<Dim> out;
  for (size_t k = 0; k < x.size(); ++k) {
    if (!reduced[k]) {
      out.push_back(x[k]);
    } else if (keepdims) {
      out.emplace_back(1);
    }
  }
  return {tensor_facts(ctx.dtype(0), out)};
}

Facts arg_reduce_op(OpContext& ctx) {
  std::vector<Dim> x = ctx.dims(0);
  size_t axis = ctx.axis(ctx.attr_int("axis", 0), x.size());
  if (ctx.attr_int("keepdims", 1) != 0) {
    x[axis] = Dim(1);
  } else {
    x.erase(x.begin() + static_cast<int64_t>(axis));
  }
  return {tensor_facts(vm::DType::kInt64, x)};
}

Facts same_as_input(OpContext& ctx) { return {tensor_facts(ctx.dtype(0), ctx.dims(0))}; }

Facts softmax_op(OpContext& ctx) {
  ctx.axis(ctx.attr_int("axis", -1), ctx.rank(0));
  return same_as_input(ctx);
}

Facts layer_norm_op(OpContext& ctx) {
  const std::vector<Dim>& x = ctx.dims(0);
  size_t axis = ctx.axis(ctx.attr_int("axis", -1), x.size());
  Facts out{tensor_facts(ctx.dtype(0), x)};
  std::vector<Dim> stats(x.begin(), x.begin() + static_cast<int64_t>(axis));
  stats.resize(x.size(), Dim(1));
  out.push_back(tensor_facts(vm::DType::kFloat32, stats));  // Mean
  out.push_back(tensor_facts(vm::DType::kFloat32, stats));  // InvStdDev
  return out;
}

// LSTM / GRU / RNN, layout 0: X [seq, batch, input] -> Y [seq, dirs, batch, hidden],
// Y_h [dirs, batch, hidden] (and Y_c for LSTM); layout 1 (batch first): X [batch, seq, input]
// -> Y [batch, seq, dirs, hidden], Y_h [batch, dirs, hidden].
Facts recurrent_op(OpContext& ctx, int outputs) {
  const std::vector<Dim>& x = ctx.dims(0);
  if (x.size() != 3) ctx.fail("X must be 3-D");
  const int64_t layout = ctx.attr_int("layout", 0);
  if (layout != 0 && layout != 1) ctx.fail("layout must be 0 or 1, not ", layout);
  int64_t hidden = ctx.attr_int("hidden_size", -1);
  if (hidden < 1) ctx.fail("hidden_size is required");
  std::string direction = ctx.attr_string("direction", "forward");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    ctx.fail("unknown direction '", direction, "'");
  }
  if (layout == 1) {
    Facts out{tensor_facts(ctx.dtype(0), {x[0], x[1], Dim(dirs), Dim(hidden)})};
    for (int k = 1; k < outputs; ++k)
      out.push_back(tensor_facts(ctx.dtype(0), {x[0], Dim(dirs), Dim(hidden)}));
    return out;
  }
  Facts out{tensor_facts(ctx.dtype(0), {x[0], Dim(dirs), x[1], Dim(hidden)})};
  for (int k = 1; k < outputs; ++k)
    out.push_back(tensor_facts(ctx.dtype(0), {Dim(dirs), x[1], Dim(hidden)}));
  return out;
}

// dynvm.LstmSequence(xw [steps, batch, dirs * 4 h], rt [dirs, h, 4 h], h0, c0 [dirs, batch, h],
// peepholes [dirs, 3 h]?) {direction} -> y [steps, dirs, batch, h], c_last [dirs, batch, h];
// dynvm.GruSequence(xw [steps, batch, dirs * 3 h], rt [dirs, h, 3 h], h0, rb [dirs, 3 h]?) -> y;
// dynvm.RnnSequence(xw [steps, batch, dirs * h], rt [dirs, h, h], h0) -> y
// (kernels/ops/recurrent.h; compiler/passes/recurrent_cell.cc makes them). The operands' checks
// are the kernel builders'; here the dims that fix the outputs: xw's steps and batch, rt's
// directions and hidden size.
Facts recurrent_sequence_op(OpContext& ctx, int64_t blocks, int outputs) {
  const std::vector<Dim>& x = ctx.dims(0);
  const std::vector<Dim>& rt = ctx.dims(1);
  if (rt.size() != 3 || !rt[0].is_const() || !rt[1].is_const()) {
    ctx.fail("rt must be [dirs, hidden, gates * hidden]");
  }
  const int64_t dirs = rt[0].value(), hidden = rt[1].value();
  if (x.size() != 3 || (x[2].is_const() && x[2].value() != dirs * blocks * hidden)) {
    ctx.fail("xw must be [steps, batch, ", dirs, " * ", blocks, " * ", hidden, "]");
  }
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.dtype(i) != ctx.dtype(0)) ctx.fail("operands have different dtypes");
  }
  // The states' batch is xw's (the kernel checks that they agree).
  Facts out{tensor_facts(ctx.dtype(0), {x[0], Dim(dirs), x[1], Dim(hidden)})};
  if (outputs == 2) out.push_back(tensor_facts(ctx.dtype(0), {Dim(dirs), x[1], Dim(hidden)}));
  return out;
}

// dynvm.LstmCell(gates [batch, 4 h], c [batch, h], peepholes [3 h]?) -> h', c' and
// dynvm.GruCell(xw [batch, 3 h], hr [batch, 3 h], h [batch, h]) -> h' (kernels/ops/recurrent.h;
// compiler/passes/recurrent_*.cc make them): the state's type, once per output.
Facts recurrent_cell_op(OpContext& ctx, int64_t blocks, std::vector<size_t> gates, size_t state,
                        int outputs) {
  const std::vector<Dim>& s = ctx.dims(state);
  if (s.size() != 2 || !s[1].is_const()) ctx.fail("the state must be [batch, hidden]");
  const int64_t hidden = s[1].value();
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.dtype(i) != ctx.dtype(state)) ctx.fail("operands have different dtypes");
  }
  for (size_t i : gates) {
    const std::vector<Dim>& g = ctx.dims(i);
    if (g.size() != 2 || !g[1].is_const() || g[1].value() != blocks * hidden) {
      ctx.fail("gate inputs must be [batch, ", blocks, " * ", hidden, "]");
    }
  }
  if (blocks == 4 && ctx.num_inputs() == 3) {
    const std::vector<Dim>& p = ctx.dims(2);
    if (p.size() != 1 || !p[0].is_const() || p[0].value() != 3 * hidden) {
      ctx.fail("peepholes must be [3 * ", hidden, "]");
    }
  }
  return Facts(static_cast<size_t>(outputs), tensor_facts(ctx.dtype(state), s));
}

// True when optional input i is given: present and not an empty tensor (exporters pass an
// empty `scales` next to `sizes`).
bool given(const OpContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return false;
  const std::vector<Dim>& d = ctx.dims(i);
  return !(d.size() == 1 && d[0].is_const() && d[0].value() == 0);
}

// floor(d * scale) per dim for constant f32 scales: exact for integer scales and their
// reciprocals on symbolic dims, computed on static ones; nullopt (with `why`) otherwise.
std::optional<std::vector<Dim>> scaled_dims(const OpContext& ctx, std::vector<Dim> x,
                                            const vm::Tensor& scales, std::string* why) {
  if (scales.numel() != static_cast<int64_t>(x.size())) {
    ctx.fail("scales has ", scales.numel(), " entries for rank ", x.size());
  }
  for (size_t k = 0; k < x.size(); ++k) {
    const double s = scales.data_as<float>()[k];
    if (!(s > 0)) ctx.fail("scale ", s, " must be positive");
    if (x[k].is_const()) {
      x[k] = Dim(static_cast<int64_t>(std::floor(static_cast<double>(x[k].value()) * s)));
    } else if (s == std::floor(s)) {
      x[k] = ctx.mul(x[k], Dim(static_cast<int64_t>(s)));
    } else if (1.0 / s == std::floor(1.0 / s)) {
      x[k] = ctx.floordiv(x[k], Dim(static_cast<int64_t>(1.0 / s)));
    } else {
      *why = str_cat("scale ", s, " on the symbolic dim ", to_string(x[k]),
                     " (only integer scales and their reciprocals keep a symbolic dim exact)");
      return std::nullopt;
    }
  }
  return x;
}

bool const_f32(const ValueFacts& f) {
  return f.constant.defined() && f.constant.dtype() == vm::DType::kFloat32;
}

// Resize(X, roi, scales, sizes[, output sizes]). Sizes are read as values (run-time symbols
// when only the run time knows them); constant scales give exact dims; scales read at run
// time take the output sizes the importer computes next to the Resize
// (dynvm.ResizeOutputSizes, its fifth input).
Facts resize_op(OpContext& ctx) {
  std::vector<Dim> x = ctx.dims(0);
  if (ctx.attrs().count("axes")) ctx.fail("the axes attribute is not supported yet");
  if (ctx.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch") {
    ctx.fail("keep_aspect_ratio_policy other than stretch is not supported yet");
  }
  if (ctx.attr_int("antialias", 0) != 0) ctx.fail("antialias is not supported yet");
  if (given(ctx, 3)) {
    std::optional<std::vector<Dim>> sizes = ctx.values(3);
    if (!sizes || sizes->size() != x.size()) ctx.fail("sizes must have one entry per dim");
    for (size_t k = 0; k < x.size(); ++k) {
      Dim& out = (*sizes)[k];
      if (out.is_any()) continue;
      if (ctx.equal(out, x[k]).is_const() && ctx.equal(out, x[k]).value() == 1) {
        out = x[k];  // kept (the kernel reads that dim straight through)
        continue;
      }
      ctx.require(arith::ge(out.expr(), 0), "size ", k, " is negative");
      if (!x[k].is_any()) {
        ctx.require(arith::logical_or(arith::gt(x[k].expr(), 0), arith::eq(out.expr(), 0)),
                    "input dim ", k, " is empty but its size is not 0");
      }
    }
    return {tensor_facts(ctx.dtype(0), *sizes)};
  }
  if (!given(ctx, 2)) ctx.fail("needs scales or sizes");
  std::string why;
  if (const_f32(ctx.input(2))) {
    std::optional<std::vector<Dim>> out = scaled_dims(ctx, x, ctx.input(2).constant, &why);
    if (!out) ctx.fail(why);
    return {tensor_facts(ctx.dtype(0), *out)};
  }
  std::optional<std::vector<Dim>> out;
  if (ctx.has_input(4)) out = ctx.values(4);
  if (!out || out->size() != x.size()) {
    ctx.fail("scales read at run time need their output sizes (dynvm.ResizeOutputSizes)");
  }
  for (size_t k = 0; k < x.size(); ++k) {
    if ((*out)[k].is_any()) continue;
    ctx.require(arith::ge((*out)[k].expr(), 0), "scale ", k,
                " is not positive and finite (or the output is too large)");
  }
  return {tensor_facts(ctx.dtype(0), *out)};
}

// dynvm.ResizeOutputSizes(X, scales): floor(X's dims * scales) as an i64 vector, -1 for a
// scale that is not positive and finite. The importer binds one next to every Resize whose
// scales are not constants; where they turn out constant (folded), the value is known here
// and nothing computes it.
Facts resize_output_sizes_op(OpContext& ctx) {
  const std::vector<Dim>& x = ctx.dims(0);
  std::optional<std::vector<Dim>> value;
  std::string why;
  if (const_f32(ctx.input(1))) value = scaled_dims(ctx, x, ctx.input(1).constant, &why);
  return {tensor_facts(vm::DType::kInt64, {Dim(static_cast<int64_t>(x.size()))}, value)};
}

// dynvm.AxisExtents(x, axis): [outer, n, inner], the products of x's dims before, at and
// after an axis only the run time knows (selects over its symbol), with a run-time check
// that it is in range. The importer views a CumSum over such an axis as a scan over the
// middle axis of x reshaped to these extents.
Facts axis_extents_op(OpContext& ctx) {
  const std::vector<Dim>& x = ctx.dims(0);
  const auto rank = static_cast<int64_t>(x.size());
  std::optional<std::vector<Dim>> axis = ctx.values(1);
  if (!axis || axis->size() != 1 || (*axis)[0].is_any()) ctx.fail("the axis must be one integer");
  const arith::Expr a = (*axis)[0].expr();
  ctx.require(arith::logical_and(arith::ge(a, -rank), arith::lt(a, rank)),
              "the axis is out of range for rank ", rank);
  const arith::Expr at = arith::select(arith::lt(a, 0), a + rank, a);
  Dim outer(1), n(1), inner(1);
  for (int64_t k = 0; k < rank; ++k) {
    const Dim& d = x[static_cast<size_t>(k)];
    if (d.is_any()) ctx.fail("dim ", k, " is unknown");
    auto pick = [&](const arith::Expr& cond) {
      return ctx.simplify(Dim(arith::select(cond, d.expr(), 1)));
    };
    outer = ctx.mul(outer, pick(arith::gt(at, k)));
    n = ctx.mul(n, pick(arith::eq(at, k)));
    inner = ctx.mul(inner, pick(arith::lt(at, k)));
  }
  return {tensor_facts(vm::DType::kInt64, {Dim(3)}, std::vector<Dim>{outer, n, inner})};
}

}  // namespace

void register_nn_ops() {
  register_op({"Conv", ShapeRule::kFromInputDims, 2, 3, conv_op});
  register_op({"ConvTranspose", ShapeRule::kFromInputDims, 2, 3, conv_transpose_op});
  register_op({"MaxPool", ShapeRule::kFromInputDims, 1, 1, pool_op});
  register_op({"AveragePool", ShapeRule::kFromInputDims, 1, 1, pool_op});
  register_op({"GlobalAveragePool", ShapeRule::kFromInputDims, 1, 1, global_pool_op});
  register_op({"MaxUnpool", ShapeRule::kFromInputValues, 2, 3, max_unpool_op});
  register_op({"GlobalMaxPool", ShapeRule::kFromInputDims, 1, 1, global_pool_op});
  register_op({"MatMul", ShapeRule::kFromInputDims, 2, 2, matmul_op});
  register_op({"dynvm.MatMulPackedB", ShapeRule::kFromInputDims, 2, 2, matmul_packed_b_op});
  register_op({"Gemm", ShapeRule::kFromInputDims, 2, 3, gemm_op});
  register_op({"dynvm.Attention", ShapeRule::kFromInputDims, 3, 4, attention_op});
  register_op({"dynvm.ToBlocked", ShapeRule::kFromInputDims, 1, 1, to_blocked_op});
  register_op({"dynvm.FromBlocked", ShapeRule::kFromInputDims, 1, 1, from_blocked_op});
  register_op({"dynvm.ConvBlocked", ShapeRule::kFromInputDims, 2, 3, conv_blocked_op});
  register_op({"dynvm.MaxPoolBlocked", ShapeRule::kFromInputDims, 1, 1, pool_blocked_op});
  register_op({"dynvm.AveragePoolBlocked", ShapeRule::kFromInputDims, 1, 1, pool_blocked_op});
  for (const char* op :
       {"ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
        "ReduceProd", "ReduceSum", "ReduceSumSquare", "ReduceLogSum"}) {
    register_op({op, ShapeRule::kFromInputDims, 1, 2, reduce_op});
  }
  register_op({"ArgMax", ShapeRule::kFromInputDims, 1, 1, arg_reduce_op});
  register_op({"ArgMin", ShapeRule::kFromInputDims, 1, 1, arg_reduce_op});
  register_op({"Softmax", ShapeRule::kFromInputDims, 1, 1, softmax_op});
  register_op({"LogSoftmax", ShapeRule::kFromInputDims, 1, 1, softmax_op});
  register_op({"BatchNormalization", ShapeRule::kFromInputDims, 5, 5, same_as_input});
  register_op({"LayerNormalization", ShapeRule::kFromInputDims, 2, 3, layer_norm_op});
  register_op({"CumSum", ShapeRule::kFromInputDims, 2, 2, same_as_input});
  register_op({"dynvm.AxisExtents", ShapeRule::kFromInputValues, 2, 2, axis_extents_op});
  register_op(
      {"LSTM", ShapeRule::kFromInputDims, 3, 8, [](OpContext& c) { return recurrent_op(c, 3); }});
  register_op(
      {"GRU", ShapeRule::kFromInputDims, 3, 6, [](OpContext& c) { return recurrent_op(c, 2); }});
  register_op(
      {"RNN", ShapeRule::kFromInputDims, 3, 6, [](OpContext& c) { return recurrent_op(c, 2); }});
  register_op({"dynvm.LstmCell", ShapeRule::kFromInputDims, 2, 3,
               [](OpContext& c) { return recurrent_cell_op(c, 4, {0}, 1, 2); }});
  register_op({"dynvm.GruCell", ShapeRule::kFromInputDims, 3, 3, [](OpContext& c) {
                 return recurrent_cell_op(c, 3, {0, 1}, 2, 1);
               }});
  register_op({"dynvm.LstmSequence", ShapeRule::kFromInputDims, 4, 5,
               [](OpContext& c) { return recurrent_sequence_op(c, 4, 2); }});
  register_op({"dynvm.GruSequence", ShapeRule::kFromInputDims, 3, 4,
               [](OpContext& c) { return recurrent_sequence_op(c, 3, 1); }});
  register_op({"dynvm.RnnSequence", ShapeRule::kFromInputDims, 3, 3,
               [](OpContext& c) { return recurrent_sequence_op(c, 1, 1); }});
  register_op({"Resize", ShapeRule::kFromInputValues, 1, 5, resize_op});
  register_op(
      {"dynvm.ResizeOutputSizes", ShapeRule::kFromInputValues, 2, 2, resize_output_sizes_op});
}

}  // namespace dynvm::compiler
