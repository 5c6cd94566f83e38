// MatMul's constant B packed into panels at compile time (see pack_weights.h).
#include "compiler/passes/pack_weights.h"

#include "compiler/ir/functor.h"
#include "kernels/ops/matmul.h"

namespace dynvm::compiler {
namespace {

bool is_f32_tensor(const Type& t, size_t min_rank, size_t max_rank) {
  return t.defined() && t.is_tensor() && t->dtype == vm::DType::kFloat32 &&
         t->dims.size() >= min_rank && t->dims.size() <= max_rank;
}

// Bp[p, k, c] = B[k, p * panel + c], zero past N.
vm::Tensor pack_columns(const vm::Tensor& b, int64_t panel) {
  const int64_t k = b.shape()[0], n = b.shape()[1];
  const int64_t panels = (n + panel - 1) / panel;
  vm::Tensor out = vm::Tensor::empty({panels, k, panel}, vm::DType::kFloat32);
  const float* src = b.data_as<float>();
  float* dst = out.data_as<float>();
  for (int64_t p = 0; p < panels; ++p) {
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t c = 0; c < panel; ++c) {
        const int64_t col = p * panel + c;
        *dst++ = col < n ? src[r * n + col] : 0.0f;
      }
    }
  }
  return out;
}

class PackWeights : public ExprMutator {
 public:
  PackWeights(const TypedModule& typed, PackWeightsStats& stats)
      : facts_(typed.facts), stats_(stats) {}

 protected:
  Binding rewrite_binding(const Expr& var, const Expr& original) override {
    Expr value = mutate(original);
    if (value.kind() == ExprKind::kCall && value->name == "MatMul") {
      if (Expr packed = pack(value); packed.defined()) {
        ++stats_.packed;
        return {var, packed};
      }
    }
    return {var, value};
  }

 private:
  Expr pack(const Expr& mm) const {
    if (mm->operands.size() != 2 || !is_f32_tensor(mm.type(), 2, 3)) return {};
    const Expr& a = mm->operands[0];
    if (!is_f32_tensor(a.type(), 2, 3)) return {};
    const vm::Tensor b = constant_operand(facts_, mm->operands[1]);
    if (!b.defined() || b.dtype() != vm::DType::kFloat32 || b.shape().size() != 2) return {};
    const int64_t n = b.shape()[1];
    if (n < ops::kPackedPanel || b.shape()[0] < 1) return {};
    Attrs attrs{{"n", AttrValue{n}}};
    return make_call("dynvm.MatMulPackedB", {a, make_constant(pack_columns(b, ops::kPackedPanel))},
                     attrs, mm.type());
  }

  const std::unordered_map<uint64_t, ValueFacts>& facts_;
  PackWeightsStats& stats_;
};

}  // namespace

PassResult pack_weights(const TypedModule& in, PackWeightsStats* stats) {
  PackWeightsStats local;
  PackWeightsStats& s = stats != nullptr ? *stats : local;
  TypedModule out = in;
  PackWeights packer(in, s);
  out.module = packer.mutate_module(in.module);
  return PassResult(std::move(out), s.packed > 0,
                    str_cat(s.packed, " MatMul weights packed into column panels"));
}

}  // namespace dynvm::compiler
