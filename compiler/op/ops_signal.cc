// Type relations of the signal ops: DFT, STFT, MelWeightMatrix and TfIdfVectorizer. Their
// output extents come from input values (dft_length, frame_step, frame_length,
// num_mel_bins; run-time symbols when computed) or from attributes (TfIdfVectorizer's
// ngram_indexes).
#include <algorithm>

#include "compiler/op/families.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

using Facts = std::vector<ValueFacts>;

void require_float_signal(OpContext& ctx) {
  if (ctx.dtype(0) != vm::DType::kFloat32 && ctx.dtype(0) != vm::DType::kFloat64) {
    ctx.fail("the signal must be f32 or f64");
  }
  const std::vector<Dim>& x = ctx.dims(0);
  if (x.size() < 2 || !x.back().is_const() || (x.back().value() != 1 && x.back().value() != 2)) {
    ctx.fail("the signal's last dim must be 1 (real) or 2 (complex)");
  }
}

// A scalar input's value as a dim (a constant or a run-time symbol).
Dim scalar_value(OpContext& ctx, size_t i, const char* what) {
  std::optional<std::vector<Dim>> v = ctx.values(i);
  if (!v || v->size() != 1 || (*v)[0].is_any()) ctx.fail(what, " must be an integer scalar");
  return (*v)[0];
}

// n / 2 + 1 bins onesided, else n.
Dim bins(OpContext& ctx, const Dim& n, bool onesided) {
  return onesided ? ctx.add(ctx.floordiv(n, Dim(2)), Dim(1)) : n;
}

// DFT (opset 17): x [..., n, ..., 1 or 2], dft_length?; axis attribute (default 1).
Facts dft_op(OpContext& ctx) {
  require_float_signal(ctx);
  std::vector<Dim> dims = ctx.dims(0);
  const auto rank = static_cast<int64_t>(dims.size());
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank - 1) ctx.fail("axis must name a signal dim, not the last");
  const bool inverse = ctx.attr_int("inverse", 0) != 0;
  const bool onesided = ctx.attr_int("onesided", 0) != 0;
  if (inverse && onesided) ctx.fail("an inverse onesided DFT is not supported");
  const auto a = static_cast<size_t>(axis);
  Dim n = dims[a];
  if (ctx.has_input(1)) {
    n = scalar_value(ctx, 1, "dft_length");
    ctx.require(arith::ge(n.expr(), 1), "dft_length (", to_string(n), ") must be >= 1");
  }
  dims[a] = bins(ctx, n, onesided);
  dims.back() = Dim(2);
  return {tensor_facts(ctx.dtype(0), dims)};
}

// STFT(signal [batch, length, 1 or 2], frame_step, window?, frame_length?): [batch, frames,
// bins, 2], frames = (length - frame_length) / frame_step + 1.
Facts stft_op(OpContext& ctx) {
  require_float_signal(ctx);
  const std::vector<Dim>& x = ctx.dims(0);
  if (x.size() != 3) ctx.fail("the signal must be [batch, length, 1 or 2]");
  const Dim step = scalar_value(ctx, 1, "frame_step");
  ctx.require(arith::ge(step.expr(), 1), "frame_step (", to_string(step), ") must be >= 1");
  if (ctx.has_input(2) && (ctx.rank(2) != 1 || ctx.dtype(2) != ctx.dtype(0))) {
    ctx.fail("the window must be 1-D of the signal's dtype");
  }
  if (!ctx.has_input(2) && !ctx.has_input(3)) ctx.fail("needs a window or a frame_length");
  const Dim length = ctx.has_input(3) ? scalar_value(ctx, 3, "frame_length") : ctx.dims(2)[0];
  if (ctx.has_input(2) && ctx.has_input(3)) {
    const Dim& w = ctx.dims(2)[0];
    if (!w.is_any()) {
      ctx.require(arith::eq(w.expr(), length.expr()), "the window's length (", to_string(w),
                  ") is not frame_length (", to_string(length), ")");
    }
  }
  if (!length.is_any() && !x[1].is_any()) {
    ctx.require(
        arith::logical_and(arith::ge(length.expr(), 1), arith::le(length.expr(), x[1].expr())),
        "frame_length (", to_string(length), ") is not in 1..", to_string(x[1]));
  }
  const Dim frames = ctx.add(ctx.floordiv(ctx.sub(x[1], length), step), Dim(1));
  const bool onesided = ctx.attr_int("onesided", 1) != 0;
  return {tensor_facts(ctx.dtype(0), {x[0], frames, bins(ctx, length, onesided), Dim(2)})};
}

// MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
// upper_edge_hertz): [dft_length / 2 + 1, num_mel_bins] of output_datatype (default f32).
Facts mel_weight_matrix_op(OpContext& ctx) {
  const Dim mel = scalar_value(ctx, 0, "num_mel_bins");
  const Dim dft = scalar_value(ctx, 1, "dft_length");
  ctx.require(arith::ge(mel.expr(), 1), "num_mel_bins (", to_string(mel), ") must be >= 1");
  ctx.require(arith::ge(dft.expr(), 1), "dft_length (", to_string(dft), ") must be >= 1");
  for (size_t k = 2; k < 5; ++k) {
    if (ctx.rank(k) != 0) ctx.fail("input ", k, " must be a scalar");
  }
  if (!vm::is_floating(ctx.dtype(3)) || !vm::is_floating(ctx.dtype(4))) {
    ctx.fail("lower_edge_hertz and upper_edge_hertz must be floating point");
  }
  const int64_t code = ctx.attr_int("output_datatype", 1);
  std::optional<vm::DType> dtype = vm::from_onnx_code(static_cast<int>(code));
  if (!dtype) ctx.fail("unsupported output_datatype ", code);
  return {tensor_facts(*dtype, {bins(ctx, dft, true), mel})};
}

// TfIdfVectorizer(x [C] or [N, C], int32/int64): f32 [max(ngram_indexes) + 1] or [N, that].
Facts tfidf_op(OpContext& ctx) {
  if (ctx.dtype(0) != vm::DType::kInt32 && ctx.dtype(0) != vm::DType::kInt64) {
    ctx.fail("the input must be int32 or int64 tokens (pool_strings is not supported)");
  }
  if (ctx.rank(0) != 1 && ctx.rank(0) != 2) ctx.fail("the input must be [C] or [N, C]");
  if (ctx.attrs().count("pool_strings")) ctx.fail("pool_strings (string tokens) is not supported");
  const std::vector<int64_t> indexes = ctx.attr_ints("ngram_indexes", {});
  if (indexes.empty()) ctx.fail("ngram_indexes is empty");
  const int64_t columns = *std::max_element(indexes.begin(), indexes.end()) + 1;
  std::vector<Dim> out = {Dim(columns)};
  if (ctx.rank(0) == 2) out.insert(out.begin(), ctx.dims(0)[0]);
  return {tensor_facts(vm::DType::kFloat32, out)};
}

}  // namespace

void register_signal_ops() {
  register_op({"DFT", ShapeRule::kFromInputValues, 1, 2, dft_op});
  register_op({"STFT", ShapeRule::kFromInputValues, 2, 4, stft_op});
  register_op({"MelWeightMatrix", ShapeRule::kFromInputValues, 5, 5, mel_weight_matrix_op});
  register_op({"TfIdfVectorizer", ShapeRule::kFromInputDims, 1, 1, tfidf_op});
}

}  // namespace dynvm::compiler
