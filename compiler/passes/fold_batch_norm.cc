// BatchNormalization folded into its Conv (see fold_batch_norm.h).
#include "compiler/passes/fold_batch_norm.h"

#include <cmath>
#include <unordered_map>

#include "compiler/ir/functor.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

bool is_f32(const vm::Tensor& t) { return t.defined() && t.dtype() == vm::DType::kFloat32; }

class FoldBatchNorm : public ChainMutator {
 public:
  FoldBatchNorm(const TypedModule& typed, FoldBatchNormStats& stats)
      : ChainMutator(typed.module), facts_(typed.facts), stats_(stats) {}

 protected:
  void rewrite_binding_into(const Expr& var, const Expr& original,
                            std::vector<Binding>& out) override {
    Expr value = mutate(original);
    if (value.kind() == ExprKind::kCall) {
      record_call(var, value);
      if (value->name == "BatchNormalization" && is_inference(value)) {
        if (Expr folded = fold(value); folded.defined()) {
          ++stats_.folded;
          record_call(var, folded);
          out.push_back({var, folded});
          return;
        }
        if (scale_and_shift(var, value, out)) {
          ++stats_.affine;
          return;
        }
      }
    }
    out.push_back({var, value});
  }

 private:
  // The Conv with the normalization folded into its weights, or an undefined Expr.
  Expr fold(const Expr& bn) const {
    const Expr* def = single_use_call(bn->operands[0]);
    if (def == nullptr || (*def)->name != "Conv") return {};
    const Expr& conv = *def;
    if (conv->operands.size() < 2 || conv->operands.size() > 3) return {};
    const vm::Tensor w = constant_operand(facts_, conv->operands[1]);
    const vm::Tensor bias =
        conv->operands.size() == 3 ? constant_operand(facts_, conv->operands[2]) : vm::Tensor();
    if (!is_f32(w) || w.shape().empty() || (conv->operands.size() == 3 && !is_f32(bias))) {
      return {};
    }
    const int64_t channels = w.shape()[0];
    const std::vector<vm::Tensor> stats = statistics(bn);
    if (stats.empty() || stats[0].numel() != channels) return {};
    if (bias.defined() && bias.numel() != channels) return {};
    const double eps = epsilon(bn);

    vm::Tensor folded_w = vm::Tensor::empty(w.shape(), vm::DType::kFloat32);
    vm::Tensor folded_b = vm::Tensor::empty({channels}, vm::DType::kFloat32);
    const int64_t per_channel = channels > 0 ? w.numel() / channels : 0;
    auto at = [](const vm::Tensor& t, int64_t i) { return double{t.data_as<float>()[i]}; };
    for (int64_t o = 0; o < channels; ++o) {
      const double a = at(stats[0], o) / std::sqrt(at(stats[3], o) + eps);
      for (int64_t k = 0; k < per_channel; ++k) {
        const int64_t i = o * per_channel + k;
        folded_w.data_as<float>()[i] = static_cast<float>(at(w, i) * a);
      }
      const double b = bias.defined() ? at(bias, o) : 0.0;
      folded_b.data_as<float>()[o] =
          static_cast<float>((b - at(stats[2], o)) * a + at(stats[1], o));
    }
    return make_call("Conv", {conv->operands[0], make_constant(folded_w), make_constant(folded_b)},
                     conv->attrs, bn.type());
  }

  // A BatchNormalization at inference with one output and a typed tensor result.
  static bool is_inference(const Expr& bn) {
    return bn->operands.size() == 5 && bn.type().defined() && bn.type().is_tensor() &&
           attr_int(bn->attrs, "training_mode", 0, "BatchNormalization") == 0;
  }

  static double epsilon(const Expr& bn) {
    return attr_float(bn->attrs, "epsilon", 1e-5, "BatchNormalization");
  }

  // scale, B, mean and var: f32 constants of as many elements each, or none.
  std::vector<vm::Tensor> statistics(const Expr& bn) const {
    std::vector<vm::Tensor> stats;
    for (size_t i = 1; i < 5; ++i) {
      stats.push_back(constant_operand(facts_, bn->operands[i]));
      if (!is_f32(stats.back()) || stats.back().numel() != stats[0].numel()) return {};
    }
    return stats;
  }

  // A BatchNormalization of no foldable Conv (after an activation, a pool, a matmul) as
  // `x * a + c` with constants a_o = scale_o / sqrt(var_o + eps) and c_o = B_o - mean_o * a_o
  // shaped [C, 1, ...] to broadcast over x's trailing dims: two elementwise calls that
  // fuse_ops folds into whatever kernel produces x, where the normalization was a kernel of
  // its own with a square root per element. Appends the two bindings and says whether it did.
  bool scale_and_shift(const Expr& var, const Expr& bn, std::vector<Binding>& out) {
    const Type& x = bn->operands[0].type();
    if (!x.defined() || !x.is_tensor() || x->dtype != vm::DType::kFloat32 || x->dims.size() < 2) {
      return false;
    }
    const std::vector<vm::Tensor> stats = statistics(bn);
    if (stats.empty()) return false;
    const int64_t channels = stats[0].numel();
    // A static channel dim: a symbolic one that is 1 at run time would broadcast the
    // constants where the normalization fails.
    if (!x->dims[1].is_const() || x->dims[1].value() != channels) return false;
    vm::Shape shape{channels};
    shape.resize(x->dims.size() - 1, 1);
    vm::Tensor a = vm::Tensor::empty(shape, vm::DType::kFloat32);
    vm::Tensor c = vm::Tensor::empty(shape, vm::DType::kFloat32);
    const double eps = epsilon(bn);
    auto at = [](const vm::Tensor& t, int64_t i) { return double{t.data_as<float>()[i]}; };
    for (int64_t o = 0; o < channels; ++o) {
      const double scale = at(stats[0], o) / std::sqrt(at(stats[3], o) + eps);
      a.data_as<float>()[o] = static_cast<float>(scale);
      c.data_as<float>()[o] = static_cast<float>(at(stats[1], o) - at(stats[2], o) * scale);
    }
    Expr scaled = make_var(var->name + "_scaled", bn.type());
    out.push_back({scaled, make_call("Mul", {bn->operands[0], make_constant(a)}, {}, bn.type())});
    out.push_back({var, make_call("Add", {scaled, make_constant(c)}, {}, bn.type())});
    return true;
  }

  const std::unordered_map<uint64_t, ValueFacts>& facts_;
  FoldBatchNormStats& stats_;
};

}  // namespace

PassResult fold_batch_norm(const TypedModule& in, FoldBatchNormStats* stats) {
  FoldBatchNormStats local;
  FoldBatchNormStats& s = stats != nullptr ? *stats : local;
  TypedModule out = in;
  FoldBatchNorm folder(in, s);
  out.module = folder.mutate_module(in.module);
  return PassResult(std::move(out), s.folded + s.affine > 0,
                    str_cat(s.folded, " BatchNormalization folded into their Conv, ", s.affine,
                            " as a multiply and an add"));
}

}  // namespace dynvm::compiler
