// Kernel bindings of GatherND and ReverseSequence (kernels/ops/gather.h), DepthToSpace and
// SpaceToDepth (kernels/ops/space_depth.h), OneHot (kernels/ops/one_hot.h: its depth bound
// from the output), GridSample (kernels/ops/grid_sample.h), RoiAlign
// (kernels/ops/roi_align.h), the scatters, the data-sized ops and EyeLike
// (kernels/ops/eye_like.h: a kernel with no inputs whose dims are bound from its output, as
// ConstantOfShape's).
#include "compiler/op/bind_families.h"
#include "kernels/ops/eye_like.h"
#include "kernels/ops/gather.h"
#include "kernels/ops/grid_sample.h"
#include "kernels/ops/nms.h"
#include "kernels/ops/nonzero.h"
#include "kernels/ops/one_hot.h"
#include "kernels/ops/roi_align.h"
#include "kernels/ops/scatter.h"
#include "kernels/ops/space_depth.h"
#include "kernels/ops/topk.h"
#include "kernels/ops/unique.h"

namespace dynvm::compiler {
namespace {

KernelBinding bind_depth_to_space(const BindContext& ctx) {
  const int64_t b = attr_int(ctx.attrs(), "blocksize", 0, ctx.where());
  const std::string mode = attr_string(ctx.attrs(), "mode", "DCR", ctx.where());
  const ops::DepthToSpaceMode m =
      mode == "CRD" ? ops::DepthToSpaceMode::kCRD : ops::DepthToSpaceMode::kDCR;
  return kernel_binding(ctx, "DepthToSpace", "blocksize=" + std::to_string(b) + ";mode=" + mode,
                        {0}, [=](const auto& t) { return ops::depth_to_space(t[0], b, m); });
}

KernelBinding bind_eye_like(const BindContext& ctx) {
  const Type& out = ctx.outputs().at(0);
  if (!out.is_tensor()) ctx.fail("EyeLike's output is not a tensor");
  const vm::DType dtype = out->dtype;
  const int64_t k = attr_int(ctx.attrs(), "k", 0, ctx.where());
  std::string key;
  std::vector<arith::Expr> shape = output_shape(ctx, 0, &key);
  return kernel_binding(
      ctx, "EyeLike",
      key + ";k=" + std::to_string(k) + ";dtype=" + std::string(vm::dtype_name(dtype)), {},
      [=](const auto&) { return ops::eye_like(shape, dtype, k); });
}

// TopK: sorted, ties to the lower index; k is the outputs' extent along the axis (bound
// from them), so a k read at run time is no different from a constant one.
KernelBinding bind_topk(const BindContext& ctx) {
  const int64_t axis = attr_int(ctx.attrs(), "axis", -1, ctx.where());
  const bool largest = attr_int(ctx.attrs(), "largest", 1, ctx.where()) != 0;
  const Type& x = ctx.input(0).type;
  std::string key;
  const std::vector<arith::Expr> out = output_shape(ctx, 0, &key);
  // Dims the output shares with x are x's as the kernel sees them (an expression dim of x
  // is a symbol bound from the argument there), so that both name one extent.
  std::vector<bool> shared(out.size(), false);
  for (size_t d = 0; d < out.size() && d < x->dims.size(); ++d) {
    const Dim& in = x->dims[d];
    shared[d] = !in.is_any() && in.same_as(ctx.outputs()[0]->dims[d]);
  }
  return kernel_binding(
      ctx, "TopK",
      str_cat("axis=", axis, ";largest=", largest, ";to=", to_string(ctx.outputs()[0])), {0},
      [=](const auto& t) {
        std::vector<arith::Expr> shape = out;
        for (size_t d = 0; d < shape.size(); ++d) {
          if (shared[d]) shape[d] = t[0].shape[d];
        }
        return ops::topk(t[0], axis, largest, shape);
      });
}

// OneHot: the depth is the output's extent along the axis, bound from the output argument.
KernelBinding bind_one_hot(const BindContext& ctx) {
  const int64_t axis = attr_int(ctx.attrs(), "axis", -1, ctx.where());
  const auto rank = static_cast<int64_t>(ctx.input(0).type->dims.size());
  const auto a = static_cast<size_t>(axis < 0 ? axis + rank + 1 : axis);
  std::string key;
  const std::vector<arith::Expr> shape = output_shape(ctx, 0, &key);
  if (a >= shape.size()) ctx.fail("axis ", axis, " is out of range");
  const arith::Expr depth = shape[a];
  const std::string depth_key = depth.is_int_imm() ? std::to_string(depth.int_value()) : "?";
  return kernel_binding(ctx, "OneHot", str_cat("axis=", axis, ";depth=", depth_key), {0, 2},
                        [=](const auto& t) { return ops::one_hot(t[0], t[1], axis, depth); });
}

KernelBinding bind_grid_sample(const BindContext& ctx) {
  const std::string mode = attr_string(ctx.attrs(), "mode", "bilinear", ctx.where());
  const std::string padding = attr_string(ctx.attrs(), "padding_mode", "zeros", ctx.where());
  const bool align = attr_int(ctx.attrs(), "align_corners", 0, ctx.where()) != 0;
  const ops::GridSampleMode m = ops::grid_sample_mode(mode);
  const ops::GridPadding p = ops::grid_padding(padding);
  return kernel_binding(ctx, "GridSample",
                        str_cat("mode=", mode, ";padding_mode=", padding, ";align=", align), {0, 1},
                        [=](const auto& t) { return ops::grid_sample(t[0], t[1], m, p, align); });
}

// RoiAlign: every attribute is the kernel's; coordinate_transformation_mode defaults to
// opset 16's half_pixel (the importer gives opset 10 its output_half_pixel).
KernelBinding bind_roi_align(const BindContext& ctx) {
  const auto& attrs = ctx.attrs();
  const std::string mode = attr_string(attrs, "mode", "avg", ctx.where());
  const std::string coordinates =
      attr_string(attrs, "coordinate_transformation_mode", "half_pixel", ctx.where());
  ops::RoiAlignAttrs a;
  a.mode = ops::roi_align_mode(mode);
  a.coordinates = ops::roi_coordinates(coordinates);
  a.output_height = attr_int(attrs, "output_height", 1, ctx.where());
  a.output_width = attr_int(attrs, "output_width", 1, ctx.where());
  a.sampling_ratio = attr_int(attrs, "sampling_ratio", 0, ctx.where());
  a.spatial_scale = static_cast<float>(attr_float(attrs, "spatial_scale", 1.0, ctx.where()));
  return kernel_binding(
      ctx, "RoiAlign",
      str_cat("mode=", mode, ";coordinates=", coordinates, ";", key_int(ctx, "output_height", 1),
              ";", key_int(ctx, "output_width", 1), ";", key_int(ctx, "sampling_ratio", 0), ";",
              key_float(ctx, "spatial_scale", 1.0)),
      {0, 1, 2}, [=](const auto& t) { return ops::roi_align(t[0], t[1], t[2], a); });
}

KernelBinding bind_scatter(const BindContext& ctx, bool nd) {
  const std::string name = attr_string(ctx.attrs(), "reduction", "none", ctx.where());
  const ops::ScatterReduction r = ops::scatter_reduction(name);
  if (nd) {
    return kernel_binding(ctx, "ScatterND", "reduction=" + name, {0, 1, 2},
                          [r](const auto& t) { return ops::scatter_nd(t[0], t[1], t[2], r); });
  }
  const int64_t axis = attr_int(ctx.attrs(), "axis", 0, ctx.where());
  return kernel_binding(
      ctx, "ScatterElements", str_cat("axis=", axis, ";reduction=", name), {0, 1, 2},
      [=](const auto& t) { return ops::scatter_elements(t[0], t[1], t[2], axis, r); });
}

// NonZero, Compress: the count is the output's extent, bound from the output argument.
KernelBinding bind_nonzero(const BindContext& ctx) {
  std::string key;
  const arith::Expr count = output_shape(ctx, 0, &key)[1];
  return kernel_binding(ctx, "NonZero", key, {0},
                        [=](const auto& t) { return ops::nonzero(t[0], count); });
}

KernelBinding bind_compress(const BindContext& ctx) {
  const bool has_axis = ctx.attrs().count("axis") > 0;
  const int64_t axis = attr_int(ctx.attrs(), "axis", 0, ctx.where());
  std::string key;
  std::vector<arith::Expr> shape = output_shape(ctx, 0, &key);
  const size_t rank = ctx.input(0).type->dims.size();
  const arith::Expr count =
      has_axis ? shape[static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis)]
               : shape[0];
  return kernel_binding(
      ctx, "Compress", key + (has_axis ? ";axis=" + std::to_string(axis) : ""), {0, 1},
      [=](const auto& t) { return ops::compress(t[0], t[1], count, has_axis, axis); });
}

// NonMaxSuppression and its count: the optional scalars that are present are arguments.
KernelBinding bind_nms(const BindContext& ctx, bool count) {
  std::vector<size_t> args = {0, 1};
  std::string present;
  for (size_t k = 2; k < 5; ++k) {
    if (!ctx.has_input(k)) continue;
    args.push_back(k);
    present += std::to_string(k);
  }
  const bool center = attr_int(ctx.attrs(), "center_point_box", 0, ctx.where()) != 0;
  std::string key = "inputs=" + present + ";center=" + (center ? "1" : "0");
  arith::Expr rows;
  if (!count) rows = output_shape(ctx, 0, &key)[0];
  return kernel_binding(
      ctx, count ? "NonMaxSuppressionCount" : "NonMaxSuppression", key, args, [=](const auto& t) {
        ops::NmsInputs in{t[0], t[1]};
        in.center_point_box = center;
        size_t next = 2;
        for (size_t k = 2; k < 5; ++k) {
          if (present.find(std::to_string(k)) == std::string::npos) continue;
          const ops::TensorType* type = &t[next++];
          (k == 2 ? in.max_per_class : k == 3 ? in.iou_threshold : in.score_threshold) = type;
        }
        return count ? ops::nms_count(in) : ops::nms(in, rows);
      });
}

ops::UniqueAttrs unique_attrs(const BindContext& ctx, std::string* key) {
  ops::UniqueAttrs a;
  a.has_axis = ctx.attrs().count("axis") > 0;
  a.axis = attr_int(ctx.attrs(), "axis", 0, ctx.where());
  a.sorted = attr_int(ctx.attrs(), "sorted", 1, ctx.where()) != 0;
  *key += str_cat(a.has_axis ? str_cat(";axis=", a.axis) : "", ";sorted=", a.sorted);
  return a;
}

// Unique: the count is Y's extent along the axis (or its only dim), bound from Y.
KernelBinding bind_unique(const BindContext& ctx) {
  std::string key;
  const std::vector<arith::Expr> y = output_shape(ctx, 0, &key);
  const ops::UniqueAttrs a = unique_attrs(ctx, &key);
  const size_t rank = ctx.input(0).type->dims.size();
  const arith::Expr count =
      a.has_axis ? y[static_cast<size_t>(a.axis < 0 ? a.axis + static_cast<int64_t>(rank) : a.axis)]
                 : y[0];
  const size_t outputs = ctx.outputs().size();
  return kernel_binding(ctx, "Unique", key + str_cat(";outputs=", outputs), {0},
                        [=](const auto& t) { return ops::unique(t[0], a, count, outputs); });
}

}  // namespace

void register_indexing_bindings() {
  register_binding("Unique", bind_unique);
  register_binding("dynvm.UniqueCount", [](const BindContext& ctx) {
    std::string key;
    const ops::UniqueAttrs a = unique_attrs(ctx, &key);
    return kernel_binding(ctx, "UniqueCount", key, {0},
                          [=](const auto& t) { return ops::unique_count(t[0], a); });
  });
  register_binding("dynvm.NonMaxSuppressionCount",
                   [](const BindContext& ctx) { return bind_nms(ctx, true); });
  register_binding("NonMaxSuppression",
                   [](const BindContext& ctx) { return bind_nms(ctx, false); });
  register_binding("ScatterElements",
                   [](const BindContext& ctx) { return bind_scatter(ctx, false); });
  register_binding("ScatterND", [](const BindContext& ctx) { return bind_scatter(ctx, true); });
  register_binding("dynvm.IndicesOutOfRange", [](const BindContext& ctx) {
    const int64_t axis = attr_int(ctx.attrs(), "axis", 0, ctx.where());
    const bool nd = attr_int(ctx.attrs(), "nd", 0, ctx.where()) != 0;
    return kernel_binding(
        ctx, "IndicesOutOfRange", str_cat("axis=", axis, nd ? ",nd" : ""), {0, 1},
        [=](const auto& t) { return ops::count_out_of_range(t[0], t[1], axis, nd); });
  });
  register_binding("dynvm.CheckIndices",
                   [](const BindContext&) { return view_binding(LoweringKind::kAlias); });
  register_binding("dynvm.CountNonZero", [](const BindContext& ctx) {
    return kernel_binding(ctx, "CountNonZero", "", {0},
                          [](const auto& t) { return ops::count_nonzero(t[0]); });
  });
  register_binding("NonZero", bind_nonzero);
  register_binding("Compress", bind_compress);
  register_binding("TopK", bind_topk);
  register_binding("OneHot", bind_one_hot);
  register_binding("GridSample", bind_grid_sample);
  register_binding("RoiAlign", bind_roi_align);
  register_binding("GatherND", [](const BindContext& ctx) {
    const int64_t b = attr_int(ctx.attrs(), "batch_dims", 0, ctx.where());
    return kernel_binding(ctx, "GatherND", "batch_dims=" + std::to_string(b), {0, 1},
                          [b](const auto& t) { return ops::gather_nd(t[0], t[1], b); });
  });
  register_binding("ReverseSequence", [](const BindContext& ctx) {
    const int64_t time = attr_int(ctx.attrs(), "time_axis", 0, ctx.where());
    const int64_t batch = attr_int(ctx.attrs(), "batch_axis", 1, ctx.where());
    return kernel_binding(
        ctx, "ReverseSequence",
        "time_axis=" + std::to_string(time) + ";batch_axis=" + std::to_string(batch), {0, 1},
        [=](const auto& t) { return ops::reverse_sequence(t[0], t[1], time, batch); });
  });
  register_binding("DepthToSpace", bind_depth_to_space);
  register_binding("SpaceToDepth", [](const BindContext& ctx) {
    const int64_t b = attr_int(ctx.attrs(), "blocksize", 0, ctx.where());
    return kernel_binding(ctx, "SpaceToDepth", "blocksize=" + std::to_string(b), {0},
                          [b](const auto& t) { return ops::space_to_depth(t[0], b); });
  });
  register_binding("EyeLike", bind_eye_like);
}

}  // namespace dynvm::compiler
