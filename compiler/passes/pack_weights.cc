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

// A's rank up to this (its leading dims are rows of one product, kernels/ops/matmul.h).
constexpr size_t kMaxRank = 6;

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

// B as the [K, N] matrix a Gemm multiplies A by: alpha * B, or alpha * B^T (transB).
vm::Tensor gemm_b_matrix(const vm::Tensor& b, bool trans_b, double alpha) {
  const int64_t rows = b.shape()[0], cols = b.shape()[1];
  const int64_t k = trans_b ? cols : rows, n = trans_b ? rows : cols;
  vm::Tensor out = vm::Tensor::empty({k, n}, vm::DType::kFloat32);
  const float* src = b.data_as<float>();
  float* dst = out.data_as<float>();
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      const float v = trans_b ? src[c * cols + r] : src[r * cols + c];
      dst[r * n + c] = static_cast<float>(alpha * v);
    }
  }
  return out;
}

vm::Tensor scaled(const vm::Tensor& t, double factor) {
  vm::Tensor out = vm::Tensor::empty(t.shape(), vm::DType::kFloat32);
  const float* src = t.data_as<float>();
  float* dst = out.data_as<float>();
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<float>(factor * src[i]);
  return out;
}

class PackWeights : public ExprMutator {
 public:
  PackWeights(const TypedModule& typed, PackWeightsStats& stats)
      : facts_(typed.facts), stats_(stats) {}

 protected:
  // A Gemm packs into two bindings: the product, then `+ beta * C`.
  void rewrite_binding_into(const Expr& var, const Expr& original,
                            std::vector<Binding>& out) override {
    Expr value = mutate(original);
    if (value.kind() == ExprKind::kCall && value->name == "MatMul") {
      if (Expr packed = pack(value->operands, value.type(), vm::Tensor()); packed.defined()) {
        value = packed;
      }
    } else if (value.kind() == ExprKind::kCall && value->name == "Gemm") {
      if (pack_gemm(var, value, out)) return;
    }
    out.push_back({var, value});
  }

 private:
  // MatMulPackedB(operands[0], packed B), B the constant `b` or else operands[1]'s value.
  Expr pack(const std::vector<Expr>& operands, const Type& type, vm::Tensor b) const {
    if (operands.size() < 2 || !is_f32_tensor(type, 2, kMaxRank)) return {};
    const Expr& a = operands[0];
    if (!is_f32_tensor(a.type(), 2, kMaxRank)) return {};
    if (!b.defined()) b = constant_operand(facts_, operands[1]);
    if (!b.defined() || b.dtype() != vm::DType::kFloat32 || b.shape().size() != 2) return {};
    const int64_t n = b.shape()[1];
    if (n < ops::kPackedPanel || b.shape()[0] < 1) return {};
    ++stats_.packed;
    Attrs attrs{{"n", AttrValue{n}}};
    return make_call("dynvm.MatMulPackedB", {a, make_constant(pack_columns(b, ops::kPackedPanel))},
                     attrs, type);
  }

  // Gemm(A, B, C) with a constant B and A not transposed: `var = MatMulPackedB(A, alpha *
  // op(B))`, or with C, a product binding then `var = Add(product, beta * C)` (C constant
  // when beta != 1; Add's broadcast of C to [M, N] is Gemm's). Appends to `out` and says
  // whether it did.
  bool pack_gemm(const Expr& var, const Expr& gemm, std::vector<Binding>& out) {
    const std::string where = "Gemm";
    if (attr_int(gemm->attrs, "transA", 0, where) != 0) return false;
    const vm::Tensor b = constant_operand(facts_, gemm->operands[1]);
    if (!b.defined() || b.dtype() != vm::DType::kFloat32 || b.shape().size() != 2) return false;
    const double alpha = attr_float(gemm->attrs, "alpha", 1.0, where);
    const double beta = attr_float(gemm->attrs, "beta", 1.0, where);
    const bool has_c = gemm->operands.size() == 3 && gemm->operands[2].defined();
    Expr c;
    if (has_c) {
      c = gemm->operands[2];
      if (beta != 1.0) {
        const vm::Tensor cv = constant_operand(facts_, c);
        if (!cv.defined() || cv.dtype() != vm::DType::kFloat32) return false;
        c = make_constant(scaled(cv, beta));
      }
    }
    const bool trans_b = attr_int(gemm->attrs, "transB", 0, where) != 0;
    const vm::Tensor bm = gemm_b_matrix(b, trans_b, alpha);
    if (bm.shape()[1] < ops::kPackedPanel) return false;
    Expr product = pack({gemm->operands[0], Expr()}, gemm.type(), bm);
    if (!product.defined()) return false;
    if (!has_c) {
      out.push_back({var, product});
      return true;
    }
    Expr product_var = make_var(var->name + "_product", gemm.type());
    out.push_back({product_var, product});
    out.push_back({var, make_call("Add", {product_var, c}, {}, gemm.type())});
    return true;
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
                    str_cat(s.packed, " MatMul and Gemm weights packed into column panels"));
}

}  // namespace dynvm::compiler
