// Bindings of the neural-network operators: MatMul (2-D, and 3-D batches; with B packed by
// compiler/passes/pack_weights, dynvm.MatMulPackedB), dynvm.Attention
// (compiler/passes/fuse_attention), Gemm, Conv and
// ConvTranspose (auto_pad and output_shape resolved into pads from the kernel's static
// input dims), pools, reductions, ArgMax / ArgMin, Softmax / LogSoftmax, Layer- and
// BatchNormalization (inference), CumSum and Resize. Constant inputs that steer the
// computation (reduction axes, CumSum's axis, Resize's scales or sizes) are part of the
// key. LSTM, GRU and RNN have no builder yet.
#include <algorithm>
#include <cmath>

#include "compiler/op/bind_families.h"
#include "kernels/ops/attention.h"
#include "kernels/ops/batch_norm.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/conv_blocked.h"
#include "kernels/ops/cumsum.h"
#include "kernels/ops/matmul.h"
#include "kernels/ops/matmul_nd.h"
#include "kernels/ops/norm.h"
#include "kernels/ops/pool.h"
#include "kernels/ops/pool_blocked.h"
#include "kernels/ops/recurrent.h"
#include "kernels/ops/reduce.h"
#include "kernels/ops/resize.h"
#include "kernels/ops/scatter.h"

namespace dynvm::compiler {
namespace {

size_t input_rank(const BindContext& ctx, size_t i) {
  const Type& t = ctx.input(i).type;
  if (!t.is_tensor()) ctx.fail("input ", i, " is not a tensor");
  return t->dims.size();
}

KernelBinding bind_matmul(const BindContext& ctx) {
  const size_t ra = input_rank(ctx, 0), rb = input_rank(ctx, 1);
  const vm::DType dtype = ctx.input(0).type->dtype;
  const bool is_float = dtype == vm::DType::kFloat32 || dtype == vm::DType::kFloat64;
  if (ra < 2 || rb < 2 || !is_float) {
    // A vector operand and integers (MatMulInteger's int32): numpy semantics, general
    // schedule.
    return kernel_binding(ctx, "MatMul", "nd", {0, 1},
                          [](const auto& t) { return ops::matmul_nd(t[0], t[1]); });
  }
  // Matrices, batched with any number of broadcast batch dims (4-D attention included):
  // the register-tiled template.
  const bool plain = ra == 2 && rb == 2;
  return kernel_binding(ctx, "MatMul", plain ? "2d" : "batched", {0, 1}, [](const auto& t) {
    return t[0].shape.size() == 2 && t[1].shape.size() == 2 ? ops::matmul(t[0], t[1])
                                                            : ops::batch_matmul(t[0], t[1]);
  });
}

KernelBinding bind_matmul_packed_b(const BindContext& ctx) {
  const int64_t n = attr_int(ctx.attrs(), "n", 0, ctx.where());
  return kernel_binding(ctx, "MatMulPackedB", "n=" + std::to_string(n), {0, 1},
                        [n](const auto& t) { return ops::matmul_packed_b(t[0], t[1], n); });
}

KernelBinding bind_attention(const BindContext& ctx) {
  const double scale = attr_float(ctx.attrs(), "scale", 1.0, ctx.where());
  return kernel_binding(ctx, "Attention", key_float(ctx, "scale", 1.0), present_inputs(ctx),
                        [scale](const auto& t) {
                          std::optional<ops::TensorType> mask;
                          if (t.size() == 4) mask = t[3];
                          return ops::attention(t[0], t[1], t[2], mask, scale);
                        });
}

KernelBinding bind_gemm(const BindContext& ctx) {
  ops::GemmAttrs attrs;
  attrs.trans_a = attr_int(ctx.attrs(), "transA", 0, ctx.where()) != 0;
  attrs.trans_b = attr_int(ctx.attrs(), "transB", 0, ctx.where()) != 0;
  attrs.alpha = attr_float(ctx.attrs(), "alpha", 1.0, ctx.where());
  attrs.beta = attr_float(ctx.attrs(), "beta", 1.0, ctx.where());
  std::vector<size_t> args = present_inputs(ctx);
  std::string parts = key_int(ctx, "transA", 0) + ";" + key_int(ctx, "transB", 0) + ";" +
                      key_float(ctx, "alpha", 1.0) + ";" + key_float(ctx, "beta", 1.0);
  return kernel_binding(ctx, "Gemm", parts, args, [attrs](const auto& t) {
    std::optional<ops::TensorType> c;
    if (t.size() == 3) c = t[2];
    return ops::gemm(t[0], t[1], c, attrs);
  });
}

int64_t static_dim(const arith::Expr& e, const char* what) {
  if (!e.is_int_imm()) user_error(what, " needs static spatial dims");
  return e.int_value();
}

// ONNX SAME_UPPER / SAME_LOWER: the output is ceil(in / stride) and the total padding is
// split with the odd element at the end (upper) or the beginning (lower).
std::vector<int64_t> same_pads(const ops::TensorType& x, const std::vector<int64_t>& kernel,
                               const std::vector<int64_t>& strides,
                               const std::vector<int64_t>& dilations, bool upper) {
  const size_t n = kernel.size();
  std::vector<int64_t> pads(2 * n, 0);
  for (size_t k = 0; k < n; ++k) {
    const int64_t in = static_dim(x.shape.at(k + 2), "auto_pad SAME");
    const int64_t s = strides.empty() ? 1 : strides[k];
    const int64_t d = dilations.empty() ? 1 : dilations[k];
    const int64_t out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + (kernel[k] - 1) * d + 1 - in);
    pads[k] = upper ? total / 2 : total - total / 2;
    pads[k + n] = total - pads[k];
  }
  return pads;
}

std::string window_key(const BindContext& ctx) {
  return "strides=" + key_ints(attr_ints(ctx.attrs(), "strides", {}, ctx.where())) +
         ";pads=" + key_ints(attr_ints(ctx.attrs(), "pads", {}, ctx.where())) +
         ";dilations=" + key_ints(attr_ints(ctx.attrs(), "dilations", {}, ctx.where())) + ";" +
         key_string(ctx, "auto_pad", "NOTSET") + ";";
}

std::string auto_pad_of(const BindContext& ctx) {
  std::string auto_pad = attr_string(ctx.attrs(), "auto_pad", "NOTSET", ctx.where());
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    ctx.fail("unknown auto_pad '", auto_pad, "'");
  }
  return auto_pad;
}

KernelBinding bind_conv(const BindContext& ctx) {
  ops::ConvAttrs attrs;
  attrs.strides = attr_ints(ctx.attrs(), "strides", {}, ctx.where());
  attrs.pads = attr_ints(ctx.attrs(), "pads", {}, ctx.where());
  attrs.dilations = attr_ints(ctx.attrs(), "dilations", {}, ctx.where());
  attrs.groups = attr_int(ctx.attrs(), "group", 1, ctx.where());
  const std::string auto_pad = auto_pad_of(ctx);
  std::string parts = window_key(ctx) + key_int(ctx, "group", 1);
  return kernel_binding(ctx, "Conv", parts, present_inputs(ctx), [attrs, auto_pad](const auto& t) {
    ops::ConvAttrs a = attrs;
    std::vector<int64_t> kernel;
    for (size_t k = 2; k < t[1].shape.size(); ++k) {
      kernel.push_back(static_dim(t[1].shape[k], "Conv's kernel"));
    }
    if (auto_pad == "VALID") a.pads.assign(2 * kernel.size(), 0);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      a.pads = same_pads(t[0], kernel, a.strides, a.dilations, auto_pad == "SAME_UPPER");
    }
    std::optional<ops::TensorType> bias;
    if (t.size() == 3) bias = t[2];
    return ops::conv(t[0], t[1], bias, a);
  });
}

// The channel-blocked layout's ops (compiler/passes/block_channels).
KernelBinding bind_conv_blocked(const BindContext& ctx) {
  ops::BlockedConvAttrs attrs;
  attrs.kernel = attr_ints(ctx.attrs(), "kernel_shape", {}, ctx.where());
  attrs.strides = attr_ints(ctx.attrs(), "strides", {}, ctx.where());
  attrs.pads = attr_ints(ctx.attrs(), "pads", {}, ctx.where());
  attrs.dilations = attr_ints(ctx.attrs(), "dilations", {}, ctx.where());
  attrs.depthwise = attr_int(ctx.attrs(), "depthwise", 0, ctx.where()) != 0;
  attrs.groups = attr_int(ctx.attrs(), "group", 1, ctx.where());
  attrs.winograd = attr_int(ctx.attrs(), "winograd", 0, ctx.where());
  std::string parts = "kernel=" + key_ints(attrs.kernel) + ";" + window_key(ctx) +
                      key_int(ctx, "depthwise", 0) + ";" + key_int(ctx, "group", 1);
  if (attrs.winograd != 0) parts += ";" + key_int(ctx, "winograd", 0);
  return kernel_binding(ctx, "ConvBlocked", parts, present_inputs(ctx), [attrs](const auto& t) {
    std::optional<ops::TensorType> bias;
    if (t.size() == 3) bias = t[2];
    return ops::conv_blocked(t[0], t[1], bias, attrs);
  });
}

// MaxPool's and AveragePool's attributes (blocked or not).
ops::PoolAttrs pool_attrs(const BindContext& ctx) {
  ops::PoolAttrs attrs;
  attrs.kernel_shape = attr_ints(ctx.attrs(), "kernel_shape", {}, ctx.where());
  attrs.strides = attr_ints(ctx.attrs(), "strides", {}, ctx.where());
  attrs.pads = attr_ints(ctx.attrs(), "pads", {}, ctx.where());
  attrs.dilations = attr_ints(ctx.attrs(), "dilations", {}, ctx.where());
  attrs.count_include_pad = attr_int(ctx.attrs(), "count_include_pad", 0, ctx.where()) != 0;
  attrs.ceil_mode = attr_int(ctx.attrs(), "ceil_mode", 0, ctx.where()) != 0;
  return attrs;
}

KernelBinding bind_pool_blocked(const BindContext& ctx, bool max) {
  const ops::PoolAttrs attrs = pool_attrs(ctx);
  std::string parts = window_key(ctx) + "kernel_shape=" + key_ints(attrs.kernel_shape) + ";" +
                      key_int(ctx, "count_include_pad", 0);
  return kernel_binding(
      ctx, max ? "MaxPoolBlocked" : "AveragePoolBlocked", parts, {0}, [attrs, max](const auto& t) {
        return max ? ops::max_pool_blocked(t[0], attrs) : ops::average_pool_blocked(t[0], attrs);
      });
}

// ConvTranspose: output_shape (or SAME auto_pad, whose output is in * stride) fixes the
// total padding, split as ONNX says.
KernelBinding bind_conv_transpose(const BindContext& ctx) {
  ops::ConvAttrs attrs;
  attrs.strides = attr_ints(ctx.attrs(), "strides", {}, ctx.where());
  attrs.pads = attr_ints(ctx.attrs(), "pads", {}, ctx.where());
  attrs.dilations = attr_ints(ctx.attrs(), "dilations", {}, ctx.where());
  attrs.groups = attr_int(ctx.attrs(), "group", 1, ctx.where());
  attrs.output_padding = attr_ints(ctx.attrs(), "output_padding", {}, ctx.where());
  const std::vector<int64_t> output_shape = attr_ints(ctx.attrs(), "output_shape", {}, ctx.where());
  const std::string auto_pad = auto_pad_of(ctx);
  std::string parts = window_key(ctx) + key_int(ctx, "group", 1) +
                      ";output_padding=" + key_ints(attrs.output_padding) +
                      ";output_shape=" + key_ints(output_shape);
  return kernel_binding(
      ctx, "ConvTranspose", parts, present_inputs(ctx),
      [attrs, auto_pad, output_shape](const auto& t) {
        ops::ConvAttrs a = attrs;
        const size_t n = t[0].shape.size() - 2;
        if (auto_pad == "VALID") a.pads.assign(2 * n, 0);
        if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
          a.pads.assign(2 * n, 0);
          for (size_t k = 0; k < n; ++k) {
            const int64_t in = static_dim(t[0].shape[k + 2], "ConvTranspose's output_shape");
            const int64_t kk = static_dim(t[1].shape.at(k + 2), "ConvTranspose's kernel");
            const int64_t s = a.strides.empty() ? 1 : a.strides[k];
            const int64_t d = a.dilations.empty() ? 1 : a.dilations[k];
            if (a.output_padding.empty()) a.output_padding.assign(n, 0);
            const int64_t op = a.output_padding[k];
            const int64_t out =
                output_shape.empty() ? in * s : output_shape[output_shape.size() - n + k];
            const int64_t total = s * (in - 1) + op + (kk - 1) * d + 1 - out;
            if (total < 0) {  // a larger output: the extra rows / columns come at the end
              a.output_padding[k] = op - total;
              continue;
            }
            if (auto_pad == "SAME_UPPER") {
              a.pads[k] = total / 2;
              a.pads[k + n] = total - total / 2;
            } else {
              a.pads[k] = total - total / 2;
              a.pads[k + n] = total / 2;
            }
          }
        }
        std::optional<ops::TensorType> bias;
        if (t.size() == 3) bias = t[2];
        return ops::conv_transpose(t[0], t[1], bias, a);
      });
}

KernelBinding bind_pool(const BindContext& ctx, bool max) {
  const ops::PoolAttrs attrs = pool_attrs(ctx);
  const bool indices = ctx.outputs().size() > 1;
  const bool column_major = attr_int(ctx.attrs(), "storage_order", 0, ctx.where()) != 0;
  const std::string auto_pad = auto_pad_of(ctx);
  std::string parts = window_key(ctx) + "kernel_shape=" + key_ints(attrs.kernel_shape) + ";" +
                      key_int(ctx, "count_include_pad", 0) + ";" + key_int(ctx, "ceil_mode", 0) +
                      (indices ? ";indices;" + key_int(ctx, "storage_order", 0) : "");
  return kernel_binding(ctx, max ? "MaxPool" : "AveragePool", parts, {0},
                        [attrs, auto_pad, max, indices, column_major](const auto& t) {
                          ops::PoolAttrs a = attrs;
                          if (auto_pad == "VALID") a.pads.assign(2 * a.kernel_shape.size(), 0);
                          if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
                            a.pads = same_pads(t[0], a.kernel_shape, a.strides, a.dilations,
                                               auto_pad == "SAME_UPPER");
                          }
                          if (indices) return ops::max_pool_with_indices(t[0], a, column_major);
                          return max ? ops::max_pool(t[0], a) : ops::average_pool(t[0], a);
                        });
}

void bind_reduce(const std::string& name, ops::ReduceKind kind) {
  register_binding(name, [name, kind](const BindContext& ctx) {
    const ValueFacts* given = ctx.has_input(1) ? &ctx.input(1) : nullptr;
    if (given != nullptr && !given->constant.defined() && !given->value &&
        !(given->type.is_tensor() && given->type->dims.size() == 1 &&
          given->type->dims[0].is_const() && given->type->dims[0].value() == 0)) {
      // Axes read at run time: the output's dims (1 where reduced) say which, the kernel
      // binds them from its output (keepdims form, ops::reduce_to).
      std::string key;
      std::vector<arith::Expr> shape = output_shape(ctx, 0, &key);
      return kernel_binding(ctx, name, "run_time" + key, {0}, [kind, shape](const auto& t) {
        return ops::reduce_to(kind, t[0], shape);
      });
    }
    std::vector<int64_t> axes;
    if (ctx.has_input(1)) axes = ctx.const_ints(1, "the reduction axes");
    if (axes.empty() && attr_int(ctx.attrs(), "noop_with_empty_axes", 0, ctx.where()) != 0) {
      return view_binding(LoweringKind::kAlias);
    }
    const bool keepdims = attr_int(ctx.attrs(), "keepdims", 1, ctx.where()) != 0;
    std::string parts = "axes=" + key_ints(axes) + ";keepdims=" + (keepdims ? "1" : "0");
    return kernel_binding(ctx, name, parts, {0}, [kind, axes, keepdims](const auto& t) {
      return ops::reduce(kind, t[0], axes, keepdims);
    });
  });
}

KernelBinding bind_arg_reduce(const BindContext& ctx, bool max) {
  const int64_t axis = attr_int(ctx.attrs(), "axis", 0, ctx.where());
  const bool keepdims = attr_int(ctx.attrs(), "keepdims", 1, ctx.where()) != 0;
  const bool last = attr_int(ctx.attrs(), "select_last_index", 0, ctx.where()) != 0;
  std::string parts = "axis=" + std::to_string(axis) + ";keepdims=" + (keepdims ? "1" : "0") +
                      ";select_last_index=" + (last ? "1" : "0");
  return kernel_binding(ctx, max ? "ArgMax" : "ArgMin", parts, {0}, [=](const auto& t) {
    return max ? ops::argmax(t[0], axis, keepdims, last) : ops::argmin(t[0], axis, keepdims, last);
  });
}

// Softmax / LogSoftmax. Before opset 13 (coerce_to_2d, set by the importer) the input is
// flattened to 2-D at `axis` and normalized over every dim from `axis` on; that equals the
// one-axis kernel only when no dim after `axis` is other than a static 1.
KernelBinding bind_softmax(const BindContext& ctx, bool log) {
  const char* name = log ? "LogSoftmax" : "Softmax";
  const auto rank = static_cast<int64_t>(input_rank(ctx, 0));
  int64_t axis = attr_int(ctx.attrs(), "axis", -1, ctx.where());
  if (axis < -rank || axis >= rank) ctx.fail(name, " axis ", axis, " is out of range");
  if (axis < 0) axis += rank;
  if (attr_int(ctx.attrs(), "coerce_to_2d", 0, ctx.where()) != 0) {
    const std::vector<Dim>& dims = ctx.input(0).type->dims;
    for (int64_t k = axis + 1; k < rank; ++k) {
      const Dim& d = dims[static_cast<size_t>(k)];
      if (!d.is_const() || d.value() != 1) {
        ctx.fail(name, " over the flattened dims ", axis, "..", rank - 1,
                 " (opset < 13 semantics) is not yet computable");
      }
    }
  }
  return kernel_binding(ctx, name, "axis=" + std::to_string(axis), {0}, [axis, log](const auto& t) {
    return log ? ops::log_softmax(t[0], axis) : ops::softmax(t[0], axis);
  });
}

// LayerNormalization: one kernel computes Y and, when the call wants them, Mean and
// InvStdDev, typed f32 by the type relation (stash_type 1, the default).
KernelBinding bind_layer_norm(const BindContext& ctx) {
  const size_t num_outputs = ctx.outputs().size();
  if (num_outputs > 1 && attr_int(ctx.attrs(), "stash_type", 1, ctx.where()) != 1) {
    ctx.fail("Mean / InvStdDev with a stash_type other than 1 (float) are not yet computable");
  }
  const int64_t axis = attr_int(ctx.attrs(), "axis", -1, ctx.where());
  const double epsilon = attr_float(ctx.attrs(), "epsilon", 1e-5, ctx.where());
  std::string parts = "axis=" + std::to_string(axis) + ";" + key_float(ctx, "epsilon", 1e-5) +
                      ";outputs=" + std::to_string(num_outputs);
  return kernel_binding(ctx, "LayerNormalization", parts, present_inputs(ctx),
                        [axis, epsilon, num_outputs](const auto& t) {
                          std::optional<ops::TensorType> bias;
                          if (t.size() == 3) bias = t[2];
                          return ops::layer_norm(t[0], t[1], bias, axis, epsilon, num_outputs);
                        });
}

KernelBinding bind_batch_norm(const BindContext& ctx) {
  if (attr_int(ctx.attrs(), "training_mode", 0, ctx.where()) != 0) {
    ctx.fail("training_mode=1 is not computable (inference only)");
  }
  if (ctx.outputs().size() > 1)
    ctx.fail("BatchNormalization's training outputs are not computable");
  const double epsilon = attr_float(ctx.attrs(), "epsilon", 1e-5, ctx.where());
  return kernel_binding(
      ctx, "BatchNormalization", key_float(ctx, "epsilon", 1e-5), {0, 1, 2, 3, 4},
      [epsilon](const auto& t) { return ops::batch_norm(t[0], t[1], t[2], t[3], t[4], epsilon); });
}

KernelBinding bind_cumsum(const BindContext& ctx) {
  std::vector<int64_t> axis = ctx.const_ints(1, "CumSum's axis");
  if (axis.size() != 1) ctx.fail("CumSum's axis must be one element");
  const bool exclusive = attr_int(ctx.attrs(), "exclusive", 0, ctx.where()) != 0;
  const bool reverse = attr_int(ctx.attrs(), "reverse", 0, ctx.where()) != 0;
  std::string parts = "axis=" + std::to_string(axis[0]) + ";exclusive=" + (exclusive ? "1" : "0") +
                      ";reverse=" + (reverse ? "1" : "0");
  const int64_t a = axis[0];
  return kernel_binding(ctx, "CumSum", parts, {0}, [a, exclusive, reverse](const auto& t) {
    return ops::cumsum(t[0], a, exclusive, reverse);
  });
}

// True when optional input i is given: present and not an empty tensor.
bool given(const BindContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return false;
  const Type& t = ctx.input(i).type;
  return !(t.is_tensor() && t->dims.size() == 1 && t->dims[0].is_const() &&
           t->dims[0].value() == 0);
}

// Every element a constant.
bool all_const(const ValueFacts& f) {
  if (f.constant.defined()) return true;
  return f.value &&
         std::all_of(f.value->begin(), f.value->end(), [](const Dim& d) { return d.is_const(); });
}

// Resize: constant f32 scales, or constant sizes of an input with static dims, specialize
// the kernel on them (ops::resize). Otherwise (scales or sizes read at run time, sizes of a
// symbolic input) the output's dims come from the type, bound from the output argument,
// and the kernel reads the scales or divides out by in (ops::resize_at_run_time). roi is
// a kernel argument for tf_crop_and_resize only.
KernelBinding bind_resize(const BindContext& ctx) {
  ops::ResizeAttrs attrs;
  const std::string mode = attr_string(ctx.attrs(), "mode", "nearest", ctx.where());
  const std::string coord =
      attr_string(ctx.attrs(), "coordinate_transformation_mode", "half_pixel", ctx.where());
  const std::string nearest =
      attr_string(ctx.attrs(), "nearest_mode", "round_prefer_floor", ctx.where());
  attrs.mode = ops::resize_mode_from_string(mode);
  attrs.coordinate_transformation_mode = ops::coordinate_transform_from_string(coord);
  attrs.nearest_mode = ops::nearest_mode_from_string(nearest);
  attrs.cubic_coeff_a = attr_float(ctx.attrs(), "cubic_coeff_a", -0.75, ctx.where());
  attrs.exclude_outside = attr_int(ctx.attrs(), "exclude_outside", 0, ctx.where()) != 0;
  attrs.extrapolation_value = attr_float(ctx.attrs(), "extrapolation_value", 0, ctx.where());
  const bool crop =
      attrs.coordinate_transformation_mode == ops::CoordinateTransform::kTfCropAndResize;
  if (crop && !given(ctx, 1)) ctx.fail("tf_crop_and_resize needs roi");
  std::string parts = "mode=" + mode + ";coord=" + coord + ";nearest=" + nearest;
  if (attrs.mode == ops::ResizeMode::kCubic) {
    parts += str_cat(";a=", key_floats({attrs.cubic_coeff_a}), ";exclude=", attrs.exclude_outside);
  }
  if (crop) parts += ";extrapolation=" + key_floats({attrs.extrapolation_value});
  std::vector<size_t> args{0};
  if (crop) args.push_back(1);
  const bool by_sizes = given(ctx, 3);
  if (!by_sizes && !given(ctx, 2)) ctx.fail("Resize needs scales or sizes");
  const ValueFacts& operand = ctx.input(by_sizes ? 3 : 2);
  const Type& x = ctx.input(0).type;
  const bool static_input = x.is_tensor() && std::all_of(x->dims.begin(), x->dims.end(),
                                                         [](const Dim& d) { return d.is_const(); });
  const bool specialized =
      by_sizes ? all_const(operand) && static_input
               : operand.constant.defined() && operand.constant.dtype() == vm::DType::kFloat32;
  if (!specialized) {
    ops::ResizeAtRunTime run_time;
    std::string key;
    run_time.shape = output_shape(ctx, 0, &key);
    const std::vector<Dim>& out = ctx.outputs()[0]->dims;
    for (size_t d = 0; d < out.size(); ++d) {
      run_time.kept.push_back(d < x->dims.size() && x->dims[d].same_as(out[d]));
    }
    if (!by_sizes) args.push_back(2);
    std::vector<bool> kept = run_time.kept;
    std::string kept_key;
    for (bool k : kept) kept_key += k ? '1' : '0';
    return kernel_binding(
        ctx, "Resize", str_cat("run_time;", parts, ";kept=", kept_key, ";scales=", !by_sizes, key),
        args, [attrs, run_time, crop, by_sizes](const auto& t) mutable {
          run_time.scales = by_sizes ? nullptr : &t.back();
          return ops::resize_at_run_time(t[0], attrs, crop ? &t[1] : nullptr, run_time);
        });
  }
  if (by_sizes) {
    attrs.sizes = ctx.const_ints(3, "Resize's sizes");
  } else {
    for (double s : ctx.const_floats(2, "Resize's scales")) {
      attrs.scales.push_back(static_cast<float>(s));
    }
  }
  std::vector<double> scales(attrs.scales.begin(), attrs.scales.end());
  parts += ";scales=" + key_floats(scales) + ";sizes=" + key_ints(attrs.sizes);
  return kernel_binding(ctx, "Resize", parts, args, [attrs, crop](const auto& t) {
    return ops::resize(t[0], attrs, crop ? &t[1] : nullptr);
  });
}

}  // namespace

void register_nn_bindings() {
  register_binding("MatMul", bind_matmul);
  register_binding("dynvm.MatMulPackedB", bind_matmul_packed_b);
  register_binding("dynvm.Attention", bind_attention);
  register_binding("dynvm.LstmCell", [](const BindContext& ctx) {
    return kernel_binding(ctx, "LstmCell", "", present_inputs(ctx), [](const auto& t) {
      std::optional<ops::TensorType> peepholes;
      if (t.size() == 3) peepholes = t[2];
      return ops::lstm_cell(t[0], t[1], peepholes);
    });
  });
  register_binding("dynvm.GruCell", [](const BindContext& ctx) {
    return kernel_binding(ctx, "GruCell", "", {0, 1, 2},
                          [](const auto& t) { return ops::gru_cell(t[0], t[1], t[2]); });
  });
  // The sequence kernels: the direction is part of the workload.
  auto direction = [](const BindContext& ctx) {
    return attr_string(ctx.attrs(), "direction", "forward", ctx.where());
  };
  register_binding("dynvm.LstmSequence", [direction](const BindContext& ctx) {
    const std::string d = direction(ctx);
    return kernel_binding(ctx, "LstmSequence", "direction=" + d, present_inputs(ctx),
                          [d](const auto& t) {
                            std::optional<ops::TensorType> peepholes;
                            if (t.size() == 5) peepholes = t[4];
                            return ops::lstm_sequence(t[0], t[1], t[2], t[3], peepholes, d);
                          });
  });
  register_binding("dynvm.GruSequence", [direction](const BindContext& ctx) {
    const std::string d = direction(ctx);
    const bool lbr = attr_int(ctx.attrs(), "linear_before_reset", 1, ctx.where()) != 0;
    return kernel_binding(ctx, "GruSequence",
                          str_cat("direction=", d, ";linear_before_reset=", lbr ? 1 : 0),
                          present_inputs(ctx), [d, lbr](const auto& t) {
                            std::optional<ops::TensorType> rb;
                            if (t.size() == 4) rb = t[3];
                            return ops::gru_sequence(t[0], t[1], t[2], rb, d, lbr);
                          });
  });
  register_binding("dynvm.RnnSequence", [direction](const BindContext& ctx) {
    const std::string d = direction(ctx);
    return kernel_binding(ctx, "RnnSequence", "direction=" + d, {0, 1, 2},
                          [d](const auto& t) { return ops::rnn_sequence(t[0], t[1], t[2], d); });
  });
  register_binding("Gemm", bind_gemm);
  register_binding("Conv", bind_conv);
  register_binding("dynvm.ConvBlocked", bind_conv_blocked);
  register_binding("dynvm.MaxPoolBlocked",
                   [](const BindContext& ctx) { return bind_pool_blocked(ctx, true); });
  register_binding("dynvm.AveragePoolBlocked",
                   [](const BindContext& ctx) { return bind_pool_blocked(ctx, false); });
  register_binding("dynvm.ToBlocked", [](const BindContext& ctx) {
    return kernel_binding(ctx, "ToBlocked", "", {0},
                          [](const auto& t) { return ops::to_blocked(t[0]); });
  });
  register_binding("dynvm.FromBlocked", [](const BindContext& ctx) {
    const int64_t channels = attr_int(ctx.attrs(), "channels", 0, ctx.where());
    return kernel_binding(ctx, "FromBlocked", key_int(ctx, "channels", 0), {0},
                          [channels](const auto& t) { return ops::from_blocked(t[0], channels); });
  });
  register_binding("ConvTranspose", bind_conv_transpose);
  register_binding("MaxPool", [](const BindContext& ctx) { return bind_pool(ctx, true); });
  register_binding("AveragePool", [](const BindContext& ctx) { return bind_pool(ctx, false); });
  register_binding("GlobalAveragePool", [](const BindContext& ctx) {
    return kernel_binding(ctx, "GlobalAveragePool", "", {0},
                          [](const auto& t) { return ops::global_average_pool(t[0]); });
  });
  register_binding("MaxUnpool", [](const BindContext& ctx) {
    std::string key;
    std::vector<arith::Expr> shape = output_shape(ctx, 0, &key);
    const std::vector<int64_t> kernel = attr_ints(ctx.attrs(), "kernel_shape", {}, ctx.where());
    const size_t n = kernel.size();
    const std::vector<int64_t> strides =
        attr_ints(ctx.attrs(), "strides", std::vector<int64_t>(n, 1), ctx.where());
    const std::vector<int64_t> pads =
        attr_ints(ctx.attrs(), "pads", std::vector<int64_t>(2 * n, 0), ctx.where());
    if (strides.size() != n || pads.size() != 2 * n) ctx.fail("strides or pads do not match");
    return kernel_binding(
        ctx, "MaxUnpool", str_cat(key, ";", window_key(ctx), "kernel_shape=", key_ints(kernel)),
        {0, 1}, [=](const auto& t) {
          // Where MaxPool's indices point: its input's shape.
          std::vector<arith::Expr> index_shape(t[0].shape.begin(), t[0].shape.begin() + 2);
          for (size_t k = 0; k < n && k + 2 < t[0].shape.size(); ++k) {
            index_shape.push_back((t[0].shape[k + 2] - 1) * strides[k] + kernel[k] - pads[k] -
                                  pads[k + n]);
          }
          return ops::max_unpool(t[0], t[1], index_shape, shape);
        });
  });
  register_binding("GlobalMaxPool", [](const BindContext& ctx) {
    return kernel_binding(ctx, "GlobalMaxPool", "", {0},
                          [](const auto& t) { return ops::global_max_pool(t[0]); });
  });
  const std::pair<const char*, ops::ReduceKind> reductions[] = {
      {"ReduceSum", ops::ReduceKind::kSum},
      {"ReduceMean", ops::ReduceKind::kMean},
      {"ReduceMax", ops::ReduceKind::kMax},
      {"ReduceMin", ops::ReduceKind::kMin},
      {"ReduceProd", ops::ReduceKind::kProd},
      {"ReduceL1", ops::ReduceKind::kL1},
      {"ReduceL2", ops::ReduceKind::kL2},
      {"ReduceLogSumExp", ops::ReduceKind::kLogSumExp},
      {"ReduceSumSquare", ops::ReduceKind::kSumSquare},
      {"ReduceLogSum", ops::ReduceKind::kLogSum},
  };
  for (const auto& [name, kind] : reductions) bind_reduce(name, kind);
  register_binding("ArgMax", [](const BindContext& ctx) { return bind_arg_reduce(ctx, true); });
  register_binding("ArgMin", [](const BindContext& ctx) { return bind_arg_reduce(ctx, false); });
  register_binding("Softmax", [](const BindContext& ctx) { return bind_softmax(ctx, false); });
  register_binding("LogSoftmax", [](const BindContext& ctx) { return bind_softmax(ctx, true); });
  register_binding("LayerNormalization", bind_layer_norm);
  register_binding("BatchNormalization", bind_batch_norm);
  register_binding("CumSum", bind_cumsum);
  register_binding("Resize", bind_resize);
  register_binding("dynvm.ResizeOutputSizes", [](const BindContext& ctx) {
    return kernel_binding(ctx, "ResizeOutputSizes", "", {0, 1},
                          [](const auto& t) { return ops::resize_output_sizes(t[0], t[1]); });
  });
}

}  // namespace dynvm::compiler
