// Bindings of the shape and data-movement operators. Reshape, Squeeze, Unsqueeze and
// Flatten are views of their input; Identity and Dropout are the input itself; Shape and
// Size are host values. Transpose, Concat, Split, Slice, Pad, Tile, Expand, Gather and
// GatherElements are kernels (kernels/ops/transform.h, gather.h) whose index inputs
// (Slice's starts, Pad's pads, Tile's repeats, Expand's shape, Split's sizes) are read at
// compile time and become part of the key, not kernel arguments. Where Tile's repeats or
// Expand's shape are known only at run time, and for Range and ConstantOfShape, the kernel
// takes its output's shape as symbols it binds from the output argument (output_shape).
#include <algorithm>

#include "compiler/op/bind_families.h"
#include "kernels/ops/gather.h"
#include "kernels/ops/transform.h"

namespace dynvm::compiler {
namespace {

KernelBinding bind_transpose(const BindContext& ctx) {
  std::vector<int64_t> perm = attr_ints(ctx.attrs(), "perm", {}, ctx.where());
  return kernel_binding(ctx, "Transpose", "perm=" + key_ints(perm), {0},
                        [perm](const auto& t) { return ops::transpose(t[0], perm); });
}

KernelBinding bind_concat(const BindContext& ctx) {
  const int64_t axis = attr_int(ctx.attrs(), "axis", 0, ctx.where());
  std::vector<size_t> args = present_inputs(ctx);
  if (args.size() == 1) return view_binding(LoweringKind::kAlias);
  return kernel_binding(ctx, "Concat", "axis=" + std::to_string(axis), args,
                        [axis](const auto& t) { return ops::concat(t, axis); });
}

// Split: sizes from the constant input, else equal parts (the last one smaller, as the
// relation says), computed from the kernel's own input type.
// Every element a constant.
bool all_const(const std::optional<std::vector<Dim>>& value) {
  return value &&
         std::all_of(value->begin(), value->end(), [](const Dim& d) { return d.is_const(); });
}

KernelBinding bind_split(const BindContext& ctx) {
  const int64_t axis = attr_int(ctx.attrs(), "axis", 0, ctx.where());
  const auto outputs = static_cast<int64_t>(ctx.outputs().size());
  std::vector<int64_t> sizes;
  if (ctx.has_input(1) && !ctx.input(1).constant.defined() && !all_const(ctx.input(1).value)) {
    // Sizes read at run time: each output's extent along the axis is bound from the output
    // (inference checked that they add up before the kernel runs).
    std::vector<arith::Expr> parts;
    for (int64_t k = 0; k < outputs; ++k) parts.push_back(arith::Var("size" + std::to_string(k)));
    return kernel_binding(ctx, "Split", str_cat("run_time;axis=", axis, ";outputs=", outputs), {0},
                          [axis, parts](const auto& t) {
                            return ops::split(t[0], axis, parts, /*sizes_checked=*/true);
                          });
  }
  if (ctx.has_input(1)) sizes = ctx.const_ints(1, "Split's sizes");
  std::string parts = "axis=" + std::to_string(axis) + ";outputs=" + std::to_string(outputs) +
                      ";sizes=" + key_ints(sizes);
  return kernel_binding(ctx, "Split", parts, {0}, [axis, outputs, sizes](const auto& t) {
    std::vector<arith::Expr> exprs;
    if (!sizes.empty()) {
      for (int64_t s : sizes) exprs.push_back(arith::make_int(s));
    } else {
      const auto rank = static_cast<int64_t>(t[0].shape.size());
      const arith::Expr& dim = t[0].shape.at(static_cast<size_t>(axis < 0 ? axis + rank : axis));
      arith::Expr part =
          arith::floordiv(dim + arith::make_int(outputs - 1), arith::make_int(outputs));
      for (int64_t k = 0; k + 1 < outputs; ++k) exprs.push_back(part);
      exprs.push_back(dim - part * arith::make_int(outputs - 1));
    }
    return ops::split(t[0], axis, exprs);
  });
}

// Each element of input i a constant, or nullopt where it is known only at run time;
// nullopt as a whole where the input's values are not tracked.
std::optional<std::vector<std::optional<int64_t>>> entry_ints(const BindContext& ctx, size_t i) {
  const ValueFacts& f = ctx.input(i);
  if (f.constant.defined()) {
    std::vector<int64_t> v = ctx.const_ints(i, "Slice's entries");
    return std::vector<std::optional<int64_t>>(v.begin(), v.end());
  }
  if (!f.value) return std::nullopt;
  std::vector<std::optional<int64_t>> out;
  for (const Dim& d : *f.value) {
    out.push_back(d.is_const() ? std::optional<int64_t>(d.value()) : std::nullopt);
  }
  return out;
}

// Slice with constant axes and steps whose unknown starts or ends the output's dims stand
// for (a crop to another tensor's size): a plain strided copy (ops::slice_to), not a kernel
// that reads the entries. Nullopt where an entry needs its values.
std::optional<KernelBinding> bind_slice_to(const BindContext& ctx) {
  for (size_t i : {size_t{3}, size_t{4}}) {
    if (ctx.has_input(i) && !ctx.input(i).constant.defined() && !all_const(ctx.input(i).value)) {
      return std::nullopt;
    }
  }
  std::optional<std::vector<std::optional<int64_t>>> starts = entry_ints(ctx, 1),
                                                     ends = entry_ints(ctx, 2);
  if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
  std::vector<int64_t> axes, steps;
  if (ctx.has_input(3)) axes = ctx.const_ints(3, "Slice's axes");
  if (ctx.has_input(4)) steps = ctx.const_ints(4, "Slice's steps");
  for (size_t k = 0; k < starts->size(); ++k) {
    const int64_t step = steps.size() == starts->size() ? steps[k] : 1;
    if (!(*starts)[k] && (!(*ends)[k] || (step != 1 && step != -1))) return std::nullopt;
  }
  std::string key;
  std::vector<arith::Expr> shape = output_shape(ctx, 0, &key);
  auto text = [](const std::vector<std::optional<int64_t>>& v) {
    std::string out;
    for (const auto& e : v) out += (e ? std::to_string(*e) : std::string("?")) + ",";
    return out;
  };
  std::string parts = "starts=" + text(*starts) + ";ends=" + text(*ends) +
                      ";axes=" + key_ints(axes) + ";steps=" + key_ints(steps) + key;
  return kernel_binding(ctx, "Slice", parts, {0}, [=, s = *starts, e = *ends](const auto& t) {
    return ops::slice_to(t[0], s, e, axes, steps, shape);
  });
}

KernelBinding bind_slice(const BindContext& ctx) {
  bool known = true;
  for (size_t i = 1; i < 5; ++i) {
    if (ctx.has_input(i) && !ctx.input(i).constant.defined() && !all_const(ctx.input(i).value)) {
      known = false;
    }
  }
  if (!known) {
    if (std::optional<KernelBinding> crop = bind_slice_to(ctx)) return *crop;
    // Read by the kernel at run time; the output's dims come from the type (the same
    // window expressions, computed on the host).
    std::string key;
    std::vector<arith::Expr> shape = output_shape(ctx, 0, &key);
    const bool axes = ctx.has_input(3), steps = ctx.has_input(4);
    std::vector<size_t> args{0, 1, 2};
    if (axes) args.push_back(3);
    if (steps) args.push_back(4);
    return kernel_binding(ctx, "Slice", str_cat("run_time;axes=", axes, ";steps=", steps, key),
                          args, [=](const auto& t) {
                            return ops::slice_at_run_time(t[0], t[1], t[2], axes ? &t[3] : nullptr,
                                                          steps ? &t[axes ? 4 : 3] : nullptr,
                                                          shape);
                          });
  }
  std::vector<int64_t> starts = ctx.const_ints(1, "Slice's starts");
  std::vector<int64_t> ends = ctx.const_ints(2, "Slice's ends");
  std::vector<int64_t> axes, steps;
  if (ctx.has_input(3)) axes = ctx.const_ints(3, "Slice's axes");
  if (ctx.has_input(4)) steps = ctx.const_ints(4, "Slice's steps");
  std::string parts = "starts=" + key_ints(starts) + ";ends=" + key_ints(ends) +
                      ";axes=" + key_ints(axes) + ";steps=" + key_ints(steps);
  return kernel_binding(ctx, "Slice", parts, {0},
                        [=](const auto& t) { return ops::slice(t[0], starts, ends, axes, steps); });
}

ops::PadMode pad_mode(const BindContext& ctx) {
  std::string mode = attr_string(ctx.attrs(), "mode", "constant", ctx.where());
  if (mode == "constant") return ops::PadMode::kConstant;
  if (mode == "reflect") return ops::PadMode::kReflect;
  if (mode == "edge") return ops::PadMode::kEdge;
  ctx.fail("Pad mode '", mode, "' is not supported");
}

// Pad: pads (and the optional constant value and axes) are compile-time constants; pads
// given for some axes are spread over the full rank.
KernelBinding bind_pad(const BindContext& ctx) {
  const bool value_known = !ctx.has_input(2) || ctx.input(2).constant.defined();
  if ((!ctx.input(1).constant.defined() && !all_const(ctx.input(1).value)) || !value_known) {
    // Read by the kernel at run time (over every axis); the output's dims come from the type.
    if (ctx.has_input(3)) ctx.fail("Pad's axes with pads read at run time are not supported yet");
    const ops::PadMode mode = pad_mode(ctx);
    std::string key;
    std::vector<arith::Expr> shape = output_shape(ctx, 0, &key);
    const bool value = ctx.has_input(2);
    std::vector<size_t> args{0, 1};
    if (value) args.push_back(2);
    // The pads inference knows (zeros beside a computed `x.shape[3] % 2`).
    std::vector<std::optional<int64_t>> known;
    std::string known_key;
    if (const auto& v = ctx.input(1).value) {
      for (const Dim& d : *v) {
        known.push_back(d.is_const() ? std::optional<int64_t>(d.value()) : std::nullopt);
        known_key += d.is_const() ? std::to_string(d.value()) + "," : std::string("?,");
      }
    }
    return kernel_binding(
        ctx, "Pad", str_cat("run_time;mode=", static_cast<int>(mode), ";known=", known_key, key),
        args, [=](const auto& t) {
          return ops::pad_at_run_time(t[0], t[1], value ? &t[2] : nullptr, mode, shape, known);
        });
  }
  std::vector<int64_t> pads = ctx.const_ints(1, "Pad's pads");
  double value = 0;
  if (ctx.has_input(2)) {
    std::vector<double> v = ctx.const_floats(2, "Pad's constant_value");
    if (v.size() != 1) ctx.fail("Pad's constant_value must be one element");
    value = v[0];
  }
  const Type& x = ctx.input(0).type;
  if (!x.is_tensor()) ctx.fail("Pad's input is not a tensor");
  const auto rank = static_cast<int64_t>(x->dims.size());
  if (ctx.has_input(3)) {
    std::vector<int64_t> axes = ctx.const_ints(3, "Pad's axes");
    if (pads.size() != 2 * axes.size())
      ctx.fail("Pad has ", pads.size(), " pads for ", axes.size(), " axes");
    std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
      if (a < 0 || a >= rank) ctx.fail("Pad axis ", axes[k], " is out of range");
      full[static_cast<size_t>(a)] = pads[k];
      full[static_cast<size_t>(a + rank)] = pads[k + axes.size()];
    }
    pads = full;
  }
  const ops::PadMode mode = pad_mode(ctx);
  std::string parts = "pads=" + key_ints(pads) + ";mode=" + std::to_string(static_cast<int>(mode)) +
                      ";value=" + to_string(AttrValue(value));
  return kernel_binding(ctx, "Pad", parts, {0},
                        [=](const auto& t) { return ops::pad(t[0], pads, mode, value); });
}

KernelBinding bind_tile(const BindContext& ctx) {
  if (!ctx.input(1).constant.defined() && !all_const(ctx.input(1).value)) {
    std::string key;  // repeats read at run time: the output's shape says it all
    std::vector<arith::Expr> shape = output_shape(ctx, 0, &key);
    return kernel_binding(ctx, "Tile", "to=" + key, {0},
                          [shape](const auto& t) { return ops::tile_to(t[0], shape); });
  }
  std::vector<int64_t> repeats = ctx.const_ints(1, "Tile's repeats");
  return kernel_binding(ctx, "Tile", "repeats=" + key_ints(repeats), {0},
                        [repeats](const auto& t) { return ops::tile(t[0], repeats); });
}

// Expand: the target shape is a known value (constants, or dims of the model such as
// `Shape(x)`'s), so the key holds it as text and the kernel gets it as arith expressions.
KernelBinding bind_expand(const BindContext& ctx) {
  const ValueFacts& shape = ctx.input(1);
  if (!shape.constant.defined() && !shape.value) {
    // Read at run time: the output's type (inference's broadcast) is the target, its dims
    // that are not the input's bound from the output.
    const Type& x = ctx.input(0).type;
    const Type& y = ctx.outputs().at(0);
    std::string key;
    std::vector<arith::Expr> exprs = output_shape(ctx, 0, &key);
    const size_t offset = y->dims.size() - x->dims.size();
    for (size_t k = offset; k < exprs.size(); ++k) {
      const Dim& d = x->dims[k - offset];
      if (!d.is_any() && d.same_as(y->dims[k])) exprs[k] = d.expr();
    }
    const std::vector<arith::Expr> from = kernel_type(x, ctx.where()).shape;
    return kernel_binding(ctx, "Expand", "to=" + to_string(y), {0}, [exprs, from](const auto& t) {
      return ops::expand_to(t[0], in_variant(exprs, from, t[0].shape));
    });
  }
  if (!shape.value) {
    std::vector<int64_t> ints = ctx.const_ints(1, "Expand's shape");
    std::vector<arith::Expr> exprs;
    for (int64_t v : ints) exprs.push_back(arith::make_int(v));
    return kernel_binding(ctx, "Expand", "shape=" + key_ints(ints), {0},
                          [exprs](const auto& t) { return ops::expand(t[0], exprs); });
  }
  std::vector<arith::Expr> exprs;
  std::string text = "[";
  for (const Dim& d : *shape.value) {
    if (d.is_any()) ctx.fail("Expand's shape must be known at compile time");
    exprs.push_back(d.expr());
    text += to_string(d) + ",";
  }
  const std::vector<arith::Expr> from = kernel_type(ctx.input(0).type, ctx.where()).shape;
  return kernel_binding(ctx, "Expand", "shape=" + text + "]", {0}, [exprs, from](const auto& t) {
    return ops::expand(t[0], in_variant(exprs, from, t[0].shape));
  });
}

// ConstantOfShape: a fill kernel of the output's shape (its dims bound from the output).
KernelBinding bind_constant_of_shape(const BindContext& ctx) {
  vm::Tensor value = vm::Tensor::empty({1}, vm::DType::kFloat32);
  value.data_as<float>()[0] = 0;
  auto it = ctx.attrs().find("value");
  if (it != ctx.attrs().end()) {
    const auto* t = std::get_if<vm::Tensor>(&it->second);
    if (t == nullptr || t->numel() != 1) ctx.fail("value must be a one-element tensor");
    value = *t;
  }
  tir::DataType type{value.dtype(), 1};
  tir::Expr v;
  if (vm::is_floating(value.dtype())) {
    if (value.dtype() != vm::DType::kFloat32 && value.dtype() != vm::DType::kFloat64) {
      ctx.fail("a ", vm::dtype_name(value.dtype()), " value is not supported");
    }
    v = tir::make_const(type, tensor_elements<double>(value).at(0));
  } else {
    v = tir::make_const_int(type, tensor_elements<int64_t>(value).at(0));
  }
  std::string key;
  std::vector<arith::Expr> shape = output_shape(ctx, 0, &key);
  return kernel_binding(ctx, "ConstantOfShape", key + ";value=" + to_string(AttrValue(value)), {},
                        [shape, v](const auto&) { return ops::fill(shape, v); });
}

// Range: start + i * delta over the output's length (computed on the host from the
// inputs' values, or bound from the output).
KernelBinding bind_range(const BindContext& ctx) {
  std::string key;
  std::vector<arith::Expr> shape = output_shape(ctx, 0, &key);
  return kernel_binding(ctx, "Range", key, {0, 2},
                        [shape](const auto& t) { return ops::range(t[0], t[1], shape.at(0)); });
}

KernelBinding bind_gather(const BindContext& ctx, bool elements) {
  const int64_t axis = attr_int(ctx.attrs(), "axis", 0, ctx.where());
  const size_t rank = ctx.input(0).type->dims.size();
  if (!elements && rank >= 1 && (axis == 0 || axis == -static_cast<int64_t>(rank)) &&
      ctx.input(1).type->dims.empty()) {
    return view_binding(LoweringKind::kRowView);
  }
  return kernel_binding(ctx, elements ? "GatherElements" : "Gather", "axis=" + std::to_string(axis),
                        {0, 1}, [=](const auto& t) {
                          return elements ? ops::gather_elements(t[0], t[1], axis)
                                          : ops::gather(t[0], t[1], axis);
                        });
}

}  // namespace

void register_shape_bindings() {
  for (const char* op : {"Reshape", "Squeeze", "Unsqueeze", "Flatten"}) {
    register_binding(op, [](const BindContext&) { return view_binding(LoweringKind::kView); });
  }
  register_binding("Identity",
                   [](const BindContext&) { return view_binding(LoweringKind::kAlias); });
  // dynvm.Refine (passes/version_entry.h) is its input under a narrower type; lowering
  // checks the refined dims at run time.
  register_binding("dynvm.Refine",
                   [](const BindContext&) { return view_binding(LoweringKind::kAlias); });
  // Dropout is the identity at inference; its training_mode input (opset 12) must be a
  // constant false, or the ratio a constant 0.
  register_binding("Dropout", [](const BindContext& ctx) {
    bool training = false;
    if (ctx.has_input(2)) {
      for (int64_t v : ctx.const_ints(2, "Dropout's training_mode")) training = training || v != 0;
    }
    if (training) {
      bool zero_ratio = ctx.has_input(1);
      if (zero_ratio) {
        for (double r : ctx.const_floats(1, "Dropout's ratio")) zero_ratio = zero_ratio && r == 0;
      }
      if (!zero_ratio) ctx.fail("Dropout in training mode is not computable (inference only)");
    }
    return view_binding(LoweringKind::kAlias);
  });
  for (const char* op : {"Shape", "Size"}) {
    register_binding(op, [](const BindContext&) { return view_binding(LoweringKind::kHost); });
  }
  register_binding("Transpose", bind_transpose);
  register_binding("Concat", bind_concat);
  register_binding("Split", bind_split);
  register_binding("Slice", bind_slice);
  register_binding("Pad", bind_pad);
  register_binding("Tile", bind_tile);
  register_binding("Expand", bind_expand);
  register_binding("ConstantOfShape", bind_constant_of_shape);
  register_binding("Range", bind_range);
  register_binding("dynvm.RangeCount", [](const BindContext& ctx) {
    return kernel_binding(ctx, "RangeCount", "", {0, 1, 2},
                          [](const auto& t) { return ops::range_count(t[0], t[1], t[2]); });
  });
  // Trilu: a constant k (or none: 0) is the kernel's; one known only at run time is its
  // second argument.
  register_binding("Trilu", [](const BindContext& ctx) {
    const bool upper = attr_int(ctx.attrs(), "upper", 1, ctx.where()) != 0;
    if (ctx.has_input(1) && !ctx.input(1).constant.defined()) {
      return kernel_binding(ctx, "Trilu", upper ? "upper;k=input" : "lower;k=input", {0, 1},
                            [upper](const auto& t) { return ops::trilu(t[0], upper, 0, &t[1]); });
    }
    int64_t k = 0;
    if (ctx.has_input(1)) {
      std::vector<int64_t> v = ctx.const_ints(1, "Trilu's k");
      if (v.size() != 1) ctx.fail("Trilu's k must be one value");
      k = v[0];
    }
    return kernel_binding(ctx, "Trilu", (upper ? "upper;k=" : "lower;k=") + std::to_string(k), {0},
                          [upper, k](const auto& t) { return ops::trilu(t[0], upper, k); });
  });
  register_binding("Gather", [](const BindContext& ctx) { return bind_gather(ctx, false); });
  register_binding("GatherElements", [](const BindContext& ctx) { return bind_gather(ctx, true); });
}

}  // namespace dynvm::compiler
