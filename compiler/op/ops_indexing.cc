// Type relations of GatherND, ReverseSequence, DepthToSpace, SpaceToDepth, EyeLike, TopK,
// ScatterElements, ScatterND, NonZero, Compress, Unique, NonMaxSuppression, OneHot,
// GridSample and RoiAlign: output dims as arith expressions of the input dims
// (DepthToSpace's C / b^2, H * b) or of input values (TopK's k, OneHot's depth; the counts
// the importer binds next to the data-sized ops, dynvm.CountNonZero and its kin).
#include <algorithm>
#include <limits>

#include "compiler/op/families.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

using Facts = std::vector<ValueFacts>;

Facts gather_nd_op(OpContext& ctx) {
  const std::vector<Dim>& data = ctx.dims(0);
  const std::vector<Dim>& indices = ctx.dims(1);
  if (ctx.dtype(1) != vm::DType::kInt64 && ctx.dtype(1) != vm::DType::kInt32) {
    ctx.fail("indices must be int64 or int32");
  }
  if (data.empty() || indices.empty()) ctx.fail("data and indices must have rank >= 1");
  const int64_t b = ctx.attr_int("batch_dims", 0);
  if (b < 0 || static_cast<size_t>(b) >= std::min(data.size(), indices.size())) {
    ctx.fail("batch_dims ", b, " must be below both ranks");
  }
  const Dim& last = indices.back();
  if (!last.is_const()) ctx.fail("the last dim of indices must be known at compile time");
  const int64_t k = last.value();
  if (k < 1 || static_cast<size_t>(b + k) > data.size()) {
    ctx.fail("indices address ", k, " dims after ", b, " batch dims of data of rank ", data.size());
  }
  std::vector<Dim> out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + b + k, data.end());
  return {tensor_facts(ctx.dtype(0), out)};
}

Facts reverse_sequence_op(OpContext& ctx) {
  const size_t rank = ctx.rank(0);
  if (rank < 2) ctx.fail("the input must have rank >= 2");
  const size_t t = ctx.axis(ctx.attr_int("time_axis", 0), rank, "time_axis");
  const size_t b = ctx.axis(ctx.attr_int("batch_axis", 1), rank, "batch_axis");
  if (t == b) ctx.fail("time_axis and batch_axis must differ");
  if (ctx.rank(1) != 1) ctx.fail("sequence_lens must be 1-D");
  return {tensor_facts(ctx.dtype(0), ctx.dims(0))};
}

int64_t blocksize(const OpContext& ctx) {
  if (ctx.rank(0) != 4) ctx.fail("the input must be 4-D (N x C x H x W)");
  const int64_t b = ctx.attr_int("blocksize", 0);
  if (b < 1) ctx.fail("blocksize must be a positive int");
  return b;
}

// d / b where d must be divisible by b: a constant is checked now, a symbol at run time.
Dim divided(OpContext& ctx, const Dim& d, int64_t b, const char* what) {
  if (d.is_const() && d.value() % b != 0) {
    ctx.fail(what, " ", d.value(), " is not divisible by ", b);
  }
  if (!d.is_any() && !d.is_const()) {
    ctx.require(arith::eq(arith::floormod(d.expr(), b), 0), what, " is not divisible by ", b);
  }
  return ctx.floordiv(d, Dim(b));
}

Facts depth_to_space_op(OpContext& ctx) {
  const int64_t b = blocksize(ctx);
  const std::string mode = ctx.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("mode must be DCR or CRD, got '", mode, "'");
  const std::vector<Dim>& x = ctx.dims(0);
  return {tensor_facts(ctx.dtype(0), {x[0], divided(ctx, x[1], b * b, "the channel count"),
                                      ctx.mul(x[2], Dim(b)), ctx.mul(x[3], Dim(b))})};
}

Facts space_to_depth_op(OpContext& ctx) {
  const int64_t b = blocksize(ctx);
  const std::vector<Dim>& x = ctx.dims(0);
  return {tensor_facts(ctx.dtype(0),
                       {x[0], ctx.mul(x[1], Dim(b * b)), divided(ctx, x[2], b, "the height"),
                        divided(ctx, x[3], b, "the width")})};
}

Facts eye_like_op(OpContext& ctx) {
  if (ctx.rank(0) != 2) ctx.fail("the input must be 2-D");
  vm::DType t = ctx.dtype(0);
  if (int64_t code = ctx.attr_int("dtype", 0); code != 0) {
    std::optional<vm::DType> to = vm::from_onnx_code(static_cast<int>(code));
    if (!to) ctx.fail("unsupported dtype ", code);
    t = *to;
  }
  return {tensor_facts(t, ctx.dims(0))};
}

// TopK: x's shape with k along the axis; k is a value (a constant, or a run-time symbol
// checked against the dim before the kernel runs).
Facts topk_op(OpContext& ctx) {
  std::vector<Dim> dims = ctx.dims(0);
  const size_t axis = ctx.axis(ctx.attr_int("axis", -1), dims.size());
  std::optional<std::vector<Dim>> k = ctx.values(1);
  if (!k || k->size() != 1 || (*k)[0].is_any()) ctx.fail("k must be a one-element i64 tensor");
  const Dim& n = dims[axis];
  if (!n.is_any()) {
    ctx.require(
        arith::logical_and(arith::ge((*k)[0].expr(), 0), arith::le((*k)[0].expr(), n.expr())),
        "k (", to_string((*k)[0]), ") is not in 0..", to_string(n));
  }
  dims[axis] = (*k)[0];
  return {tensor_facts(ctx.dtype(0), dims), tensor_facts(vm::DType::kInt64, dims)};
}

// ScatterElements / ScatterND: data's type; indices int32 or int64, updates of data's dtype.
Facts scatter_op(OpContext& ctx) {
  if (ctx.dtype(1) != vm::DType::kInt64 && ctx.dtype(1) != vm::DType::kInt32) {
    ctx.fail("indices must be int64 or int32");
  }
  if (ctx.dtype(2) != ctx.dtype(0)) ctx.fail("updates must have data's dtype");
  if (ctx.rank(0) == 0) ctx.fail("data must have rank >= 1");
  return {tensor_facts(ctx.dtype(0), ctx.dims(0))};
}

// OneHot(indices, depth, values): indices' dims with depth inserted at the axis; depth is
// an i64 value (the importer casts it), a constant or a run-time symbol.
Facts one_hot_op(OpContext& ctx) {
  if (ctx.dtype(0) == vm::DType::kBool) ctx.fail("indices must be numbers, not bool");
  std::optional<std::vector<Dim>> depth = ctx.values(1);
  if (!depth || depth->size() != 1 || (*depth)[0].is_any()) {
    ctx.fail("depth must be a one-element int64 tensor");
  }
  const Dim& d = (*depth)[0];
  ctx.require(arith::ge(d.expr(), 1), "depth (", to_string(d), ") must be positive");
  if (ctx.rank(2) != 1 || (ctx.dims(2)[0].is_const() && ctx.dims(2)[0].value() != 2)) {
    ctx.fail("values must be a 1-D tensor of two elements [off, on]");
  }
  std::vector<Dim> dims = ctx.dims(0);
  const size_t axis = ctx.axis(ctx.attr_int("axis", -1), dims.size() + 1);
  dims.insert(dims.begin() + static_cast<int64_t>(axis), d);
  return {tensor_facts(ctx.dtype(2), dims)};
}

// GridSample(X [N, C, H, W], grid [N, H_out, W_out, 2]) -> [N, C, H_out, W_out].
Facts grid_sample_op(OpContext& ctx) {
  if (!vm::is_floating(ctx.dtype(0)) || ctx.dtype(1) != ctx.dtype(0)) {
    ctx.fail("X and grid must share one floating-point dtype");
  }
  if (ctx.rank(0) != 4 || ctx.rank(1) != 4) {
    ctx.fail("needs a 4-D input (N x C x H x W) and a 4-D grid (N x H_out x W_out x 2)");
  }
  const std::vector<Dim>&x = ctx.dims(0), &g = ctx.dims(1);
  if (g[3].is_const() && g[3].value() != 2) ctx.fail("the grid's last dim must be 2");
  if (x[0].is_const() && g[0].is_const() && x[0].value() != g[0].value()) {
    ctx.fail("X has ", x[0].value(), " images, the grid ", g[0].value());
  }
  return {tensor_facts(ctx.dtype(0), {x[0], x[1], g[1], g[2]})};
}

// RoiAlign(X [N, C, H, W], rois [num_rois, 4], batch_indices [num_rois])
//   -> [num_rois, C, output_height, output_width].
Facts roi_align_op(OpContext& ctx) {
  if (!vm::is_floating(ctx.dtype(0)) || ctx.dtype(1) != ctx.dtype(0)) {
    ctx.fail("X and rois must share one floating-point dtype");
  }
  if (ctx.dtype(2) != vm::DType::kInt64) ctx.fail("batch_indices must be int64");
  if (ctx.rank(0) != 4 || ctx.rank(1) != 2 || ctx.rank(2) != 1) {
    ctx.fail("needs X [N, C, H, W], rois [num_rois, 4] and batch_indices [num_rois]");
  }
  const Dim &rois = ctx.dims(1)[0], &columns = ctx.dims(1)[1], &indices = ctx.dims(2)[0];
  if (columns.is_const() && columns.value() != 4) ctx.fail("rois must have 4 columns");
  if (!rois.is_any() && !indices.is_any()) {
    ctx.require(arith::eq(rois.expr(), indices.expr()), "rois has ", to_string(rois),
                " rows but batch_indices ", to_string(indices), " elements");
  }
  const int64_t height = ctx.attr_int("output_height", 1), width = ctx.attr_int("output_width", 1);
  if (height < 1 || width < 1) {
    ctx.fail("output_height and output_width must be positive, got ", height, " x ", width);
  }
  if (ctx.attr_int("sampling_ratio", 0) < 0) ctx.fail("sampling_ratio must be >= 0");
  const Dim& num_rois = rois.is_any() ? indices : rois;
  return {tensor_facts(ctx.dtype(0), {num_rois, ctx.dims(0)[1], Dim(height), Dim(width)})};
}

// dynvm.CountNonZero(x): how many elements of x are nonzero, an i64 scalar (and
// dynvm.UniqueCount(x): how many distinct values).
Facts count_nonzero_op(OpContext&) { return {tensor_facts(vm::DType::kInt64, {})}; }

// The count a NonZero, Compress or NonMaxSuppression gets as its input `k` (a count op's
// result: dynvm.CountNonZero, dynvm.NonMaxSuppressionCount, dynvm.UniqueCount).
Dim count_input(OpContext& ctx, size_t k) {
  std::optional<std::vector<Dim>> count = ctx.has_input(k) ? ctx.values(k) : std::nullopt;
  if (!count || count->size() != 1) ctx.fail("needs its count as input ", k, " (the importer's)");
  return (*count)[0];
}

// NonZero(x, count): i64 [rank(x), count] (a scalar counts as rank 1).
Facts nonzero_op(OpContext& ctx) {
  const auto rank = static_cast<int64_t>(std::max<size_t>(ctx.rank(0), 1));
  return {tensor_facts(vm::DType::kInt64, {Dim(rank), count_input(ctx, 1)})};
}

// Compress(x, condition, count): x's dims with `count` along the axis, or [count] flattened.
Facts compress_op(OpContext& ctx) {
  if (ctx.dtype(1) != vm::DType::kBool || ctx.rank(1) != 1) {
    ctx.fail("the condition must be a one-dimensional bool tensor");
  }
  const Dim count = count_input(ctx, 2);
  if (!ctx.attrs().count("axis")) return {tensor_facts(ctx.dtype(0), {count})};
  std::vector<Dim> dims = ctx.dims(0);
  dims[ctx.axis(ctx.attr_int("axis", 0), dims.size())] = count;
  return {tensor_facts(ctx.dtype(0), dims)};
}

// NonMaxSuppression(boxes, scores, max?, iou?, score?, count): i64 [count, 3].
Facts nms_inputs_check(OpContext& ctx) {
  if (ctx.rank(0) != 3 || ctx.rank(1) != 3)
    ctx.fail("boxes must be [B, n, 4] and scores [B, C, n]");
  if (ctx.dtype(0) != vm::DType::kFloat32 || ctx.dtype(1) != vm::DType::kFloat32) {
    ctx.fail("boxes and scores must be f32");
  }
  return {};
}

Facts nms_count_op(OpContext& ctx) {
  nms_inputs_check(ctx);
  return {tensor_facts(vm::DType::kInt64, {})};
}

Facts nms_op(OpContext& ctx) {
  nms_inputs_check(ctx);
  return {tensor_facts(vm::DType::kInt64, {count_input(ctx, 5), Dim(3)})};
}

// Unique(X, count): Y (count along the axis, or [count] flattened), indices [count],
// inverse_indices [n] (n: X's elements, or its extent along the axis), counts [count].
Facts unique_op(OpContext& ctx) {
  const Dim count = count_input(ctx, 1);
  std::vector<Dim> y = {count};
  Dim n(1);
  if (ctx.attrs().count("axis")) {
    y = ctx.dims(0);
    const size_t axis = ctx.axis(ctx.attr_int("axis", 0), y.size());
    n = y[axis];
    y[axis] = count;
  } else {
    for (const Dim& d : ctx.dims(0)) n = ctx.mul(n, d);
  }
  return {tensor_facts(ctx.dtype(0), y), tensor_facts(vm::DType::kInt64, {count}),
          tensor_facts(vm::DType::kInt64, {n}), tensor_facts(vm::DType::kInt64, {count})};
}

// The data dims an index of dynvm.IndicesOutOfRange / dynvm.CheckIndices(indices, data, ..)
// addresses: data's `axis`, or with `nd` data's dims axis .. axis + k - 1 for the positions
// of indices' last dim (k). Empty when indices and data do not fit: the indexing op's own
// rule then says why, naming the node.
std::vector<Dim> addressed_dims(OpContext& ctx, size_t indices, size_t data) {
  const std::vector<Dim>& d = ctx.dims(data);
  const std::vector<Dim>& i = ctx.dims(indices);
  const auto rank = static_cast<int64_t>(d.size());
  int64_t first = ctx.attr_int("axis", 0);
  if (ctx.attr_int("nd", 0) == 0) {
    if (first < 0) first += rank;
    if (first < 0 || first >= rank) return {};
    return {d[static_cast<size_t>(first)]};
  }
  if (i.empty() || !i.back().is_const() || i.back().value() < 1 || first < 0 ||
      first + i.back().value() > rank) {
    return {};
  }
  return {d.begin() + first, d.begin() + first + i.back().value()};
}

// dynvm.IndicesOutOfRange(data, indices): how many indices are outside [-n, n) of the data
// dim each addresses (attrs axis, nd as for CheckIndices); an i64 scalar.
Facts indices_out_of_range_op(OpContext& ctx) {
  if (ctx.dtype(1) != vm::DType::kInt64 && ctx.dtype(1) != vm::DType::kInt32) {
    ctx.fail("indices must be int64 or int32");
  }
  return {tensor_facts(vm::DType::kInt64, {})};
}

// dynvm.CheckIndices(indices, data, count?): indices, once every one is known to be inside
// [-n, n) of the data dim it addresses; else the run fails naming the node (attr `node`),
// as ONNX Runtime does. Indices whose values inference knows (constants, shape arithmetic)
// are checked element by element, at compile time where it can decide; the others by
// `count`, their dynvm.IndicesOutOfRange, which the VM reads. Lowered as an alias.
Facts check_indices_op(OpContext& ctx) {
  const ValueFacts& in = ctx.input(0);
  const std::vector<Dim> n = addressed_dims(ctx, 0, 1);
  ValueFacts out = tensor_facts(ctx.dtype(0), ctx.dims(0), in.value);
  if (n.empty() || std::any_of(n.begin(), n.end(), [](const Dim& d) { return d.is_any(); })) {
    return {out};
  }
  const std::string node = ctx.attr_string("node", "dynvm.CheckIndices");
  const int64_t axis = ctx.attr_int("axis", 0);
  const std::string which =
      ctx.attr_int("nd", 0) != 0
          ? str_cat("data's dims ", axis, "..", axis + static_cast<int64_t>(n.size()) - 1)
          : str_cat("axis ", axis, " of data (size ", to_string(n[0]), ")");
  auto in_range = [&](const arith::Expr& v, const Dim& extent) {
    return arith::logical_and(arith::ge(v, arith::Expr(0) - extent.expr()),
                              arith::lt(v, extent.expr()));
  };
  bool known = in.value.has_value();
  for (const Dim& v : known ? *in.value : std::vector<Dim>{}) known = known && !v.is_any();
  if (in.constant.defined() && in.constant.device() == vm::kCpu) {
    // A constant (of any size): its least and greatest index per addressed dim.
    std::vector<int64_t> lo(n.size(), std::numeric_limits<int64_t>::max());
    std::vector<int64_t> hi(n.size(), std::numeric_limits<int64_t>::min());
    const vm::Tensor& c = in.constant;
    for (int64_t e = 0; e < c.numel(); ++e) {
      const int64_t v = c.dtype() == vm::DType::kInt64 ? c.data_as<int64_t>()[e]
                                                       : int64_t{c.data_as<int32_t>()[e]};
      const size_t j = static_cast<size_t>(e) % n.size();
      lo[j] = std::min(lo[j], v);
      hi[j] = std::max(hi[j], v);
    }
    for (size_t j = 0; j < n.size() && c.numel() > 0; ++j) {
      for (int64_t v : {lo[j], hi[j]}) {
        ctx.require_for(node, in_range(arith::Expr(v), n[j]), "index ", v, " is out of range for ",
                        which);
      }
    }
  } else if (known) {
    for (size_t e = 0; e < in.value->size(); ++e) {
      ctx.require_for(node, in_range((*in.value)[e].expr(), n[e % n.size()]), "index ",
                      to_string((*in.value)[e]), " is out of range for ", which);
    }
  } else {
    std::optional<std::vector<Dim>> count = ctx.has_input(2) ? ctx.values(2) : std::nullopt;
    if (!count || count->size() != 1 || (*count)[0].is_any()) {
      ctx.fail("needs its count of bad indices as input 2");
    }
    ctx.require_for(node, arith::eq((*count)[0].expr(), arith::Expr(0)),
                    "an index is out of range for ", which);
  }
  return {out};
}

}  // namespace

void register_indexing_ops() {
  register_op(
      {"dynvm.IndicesOutOfRange", ShapeRule::kFromInputDims, 2, 2, indices_out_of_range_op});
  register_op({"dynvm.CheckIndices", ShapeRule::kFromInputValues, 2, 3, check_indices_op});
  register_op({"dynvm.UniqueCount", ShapeRule::kFromInputDims, 1, 1, count_nonzero_op});
  register_op({"Unique", ShapeRule::kFromInputValues, 2, 2, unique_op});
  register_op({"dynvm.NonMaxSuppressionCount", ShapeRule::kFromInputDims, 2, 5, nms_count_op});
  register_op({"NonMaxSuppression", ShapeRule::kFromInputValues, 6, 6, nms_op});
  register_op({"ScatterElements", ShapeRule::kFromInputDims, 3, 3, scatter_op});
  register_op({"ScatterND", ShapeRule::kFromInputDims, 3, 3, scatter_op});
  register_op({"dynvm.CountNonZero", ShapeRule::kFromInputDims, 1, 1, count_nonzero_op});
  register_op({"NonZero", ShapeRule::kFromInputValues, 2, 2, nonzero_op});
  register_op({"Compress", ShapeRule::kFromInputValues, 3, 3, compress_op});
  register_op({"GridSample", ShapeRule::kFromInputDims, 2, 2, grid_sample_op});
  register_op({"RoiAlign", ShapeRule::kFromInputDims, 3, 3, roi_align_op});
  register_op({"OneHot", ShapeRule::kFromInputValues, 3, 3, one_hot_op});
  register_op({"TopK", ShapeRule::kFromInputValues, 2, 2, topk_op});
  register_op({"GatherND", ShapeRule::kFromInputDims, 2, 2, gather_nd_op});
  register_op({"ReverseSequence", ShapeRule::kFromInputDims, 2, 2, reverse_sequence_op});
  register_op({"DepthToSpace", ShapeRule::kFromInputDims, 1, 1, depth_to_space_op});
  register_op({"SpaceToDepth", ShapeRule::kFromInputDims, 1, 1, space_to_depth_op});
  register_op({"EyeLike", ShapeRule::kFromInputDims, 1, 1, eye_like_op});
}

}  // namespace dynvm::compiler
