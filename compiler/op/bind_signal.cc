// Kernel bindings of DFT, STFT and MelWeightMatrix (kernels/ops/signal.h: extents bound from
// the output argument, lengths read by the kernel) and TfIdfVectorizer (kernels/ops/tfidf.h:
// the pool unrolled from the attributes).
#include "compiler/op/bind_families.h"
#include "kernels/ops/signal.h"
#include "kernels/ops/tfidf.h"

namespace dynvm::compiler {
namespace {

// Output 0's dims bound from the output argument, except where they are input 0's own dims
// (the batch and the other axes), which keep the input's expressions (a builder maps them to
// its variant's input dims with in_variant).
std::vector<arith::Expr> shape_like_input(const BindContext& ctx, std::string* key) {
  std::vector<arith::Expr> shape = output_shape(ctx, 0, key);
  const Type& x = ctx.input(0).type;
  for (size_t d = 0; d < shape.size() && d < x->dims.size(); ++d) {
    const Dim& in = x->dims[d];
    if (!in.is_any() && in.same_as(ctx.outputs()[0]->dims[d])) shape[d] = in.expr();
  }
  return shape;
}

KernelBinding bind_dft(const BindContext& ctx) {
  const auto rank = static_cast<int64_t>(ctx.input(0).type->dims.size());
  int64_t axis = attr_int(ctx.attrs(), "axis", 1, ctx.where());
  if (axis < 0) axis += rank;
  const bool inverse = attr_int(ctx.attrs(), "inverse", 0, ctx.where()) != 0;
  const bool length = ctx.has_input(1);
  std::string key;
  std::vector<arith::Expr> shape = shape_like_input(ctx, &key);
  const std::vector<arith::Expr> from = kernel_type(ctx.input(0).type, ctx.where()).shape;
  return kernel_binding(ctx, "DFT",
                        str_cat(key, ";axis=", axis, ";inverse=", inverse, ";",
                                key_int(ctx, "onesided", 0), ";to=", to_string(ctx.outputs()[0])),
                        length ? std::vector<size_t>{0, 1} : std::vector<size_t>{0},
                        [=](const auto& t) {
                          return ops::dft(t[0], length ? &t[1] : nullptr, axis, inverse,
                                          in_variant(shape, from, t[0].shape));
                        });
}

KernelBinding bind_stft(const BindContext& ctx) {
  const bool window = ctx.has_input(2), length = ctx.has_input(3);
  std::string key;
  std::vector<arith::Expr> shape = shape_like_input(ctx, &key);
  const std::vector<arith::Expr> from = kernel_type(ctx.input(0).type, ctx.where()).shape;
  return kernel_binding(ctx, "STFT",
                        str_cat(key, ";window=", window, ";length=", length, ";",
                                key_int(ctx, "onesided", 1), ";to=", to_string(ctx.outputs()[0])),
                        present_inputs(ctx), [=](const auto& t) {
                          return ops::stft(t[0], t[1], window ? &t[2] : nullptr,
                                           length ? &t[window ? 3 : 2] : nullptr,
                                           in_variant(shape, from, t[0].shape));
                        });
}

KernelBinding bind_mel_weight_matrix(const BindContext& ctx) {
  const vm::DType dtype = ctx.outputs().at(0)->dtype;
  std::string key;
  std::vector<arith::Expr> shape = output_shape(ctx, 0, &key);
  return kernel_binding(ctx, "MelWeightMatrix", key + ";to=" + std::string(vm::dtype_name(dtype)),
                        {0, 1, 2, 3, 4},
                        [=](const auto& t) { return ops::mel_weight_matrix(t, dtype, shape); });
}

KernelBinding bind_tfidf(const BindContext& ctx) {
  ops::TfIdfAttrs a;
  const std::string& where = ctx.where();
  const std::string mode = attr_string(ctx.attrs(), "mode", "TF", where);
  a.mode = ops::tfidf_mode(mode);
  a.min_gram_length = attr_int(ctx.attrs(), "min_gram_length", 1, where);
  a.max_gram_length = attr_int(ctx.attrs(), "max_gram_length", 1, where);
  a.max_skip_count = attr_int(ctx.attrs(), "max_skip_count", 0, where);
  a.ngram_counts = attr_ints(ctx.attrs(), "ngram_counts", {}, where);
  a.ngram_indexes = attr_ints(ctx.attrs(), "ngram_indexes", {}, where);
  a.pool_int64s = attr_ints(ctx.attrs(), "pool_int64s", {}, where);
  if (auto it = ctx.attrs().find("weights"); it != ctx.attrs().end()) {
    if (const auto* w = std::get_if<std::vector<double>>(&it->second)) {
      a.weights = *w;
    } else if (const auto* one = std::get_if<double>(&it->second)) {
      a.weights = {*one};
    } else {
      ctx.fail("TfIdfVectorizer's weights must be floats");
    }
  }
  const std::string key =
      str_cat("mode=", mode, ";grams=", a.min_gram_length, "..", a.max_gram_length,
              ";skip=", a.max_skip_count, ";counts=", key_ints(a.ngram_counts),
              ";indexes=", key_ints(a.ngram_indexes), ";pool=", key_ints(a.pool_int64s),
              ";weights=", key_floats(a.weights));
  return kernel_binding(ctx, "TfIdfVectorizer", key, {0},
                        [=](const auto& t) { return ops::tfidf_vectorizer(t[0], a); });
}

}  // namespace

void register_signal_bindings() {
  register_binding("DFT", bind_dft);
  register_binding("STFT", bind_stft);
  register_binding("MelWeightMatrix", bind_mel_weight_matrix);
  register_binding("TfIdfVectorizer", bind_tfidf);
}

}  // namespace dynvm::compiler
