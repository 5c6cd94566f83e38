// MatMul -> scale -> mask -> Softmax -> MatMul as one dynvm.Attention (see fuse_attention.h).
#include "compiler/passes/fuse_attention.h"

#include <optional>
#include <unordered_map>

#include "compiler/ir/functor.h"
#include "compiler/passes/dce.h"

namespace dynvm::compiler {
namespace {

bool is_f32_tensor(const Type& t) {
  return t.defined() && t.is_tensor() && t->dtype == vm::DType::kFloat32;
}

class FuseAttention : public ChainMutator {
 public:
  FuseAttention(const TypedModule& typed, FuseAttentionStats& stats)
      : ChainMutator(typed.module), facts_(typed.facts), checks_(typed.checks), stats_(stats) {}

 protected:
  Binding rewrite_binding(const Expr& var, const Expr& original) override {
    Expr value = mutate(original);
    if (value.kind() == ExprKind::kCall) {
      record_call(var, value);
      if (value->name == "MatMul") {
        if (Expr fused = fuse(value); fused.defined()) {
          ++stats_.fused;
          return {var, fused};
        }
      }
    }
    return {var, value};
  }

 private:
  // The call defining `e` when e is a variable read only once (by the chain) and with no
  // run-time check of its own (which would go with its binding), else none.
  const Expr* only_reader_def(const Expr& e) const {
    if (e.kind() == ExprKind::kVar && checks_.count(e->var_id) != 0) return nullptr;
    return single_use_call(e);
  }

  // The value of a scalar f32 constant operand, or nothing.
  std::optional<double> scalar(const Expr& e) const {
    const vm::Tensor t = constant_operand(facts_, e);
    if (!t.defined() || t.dtype() != vm::DType::kFloat32 || t.numel() != 1) return std::nullopt;
    return double{t.data_as<float>()[0]};
  }

  // `product` = MatMul(P, V) as dynvm.Attention, or an undefined Expr.
  Expr fuse(const Expr& product) const {
    const Expr* softmax = only_reader_def(product->operands[0]);
    if (softmax == nullptr || (*softmax)->name != "Softmax") return {};
    const Expr& v = product->operands[1];
    const Type& scores_type = (*softmax).type();
    if (!is_f32_tensor(scores_type) || !is_f32_tensor(v.type()) || !is_f32_tensor(product.type())) {
      return {};
    }
    const size_t rank = scores_type->dims.size();
    if (rank < 2 || v.type()->dims.size() != rank) return {};
    // Over the last axis; before opset 13 (coerce_to_2d) the dims from `axis` on are
    // flattened first, which changes nothing when `axis` is the last.
    const auto axis = attr_int((*softmax)->attrs, "axis", -1, "Softmax");
    if (axis != -1 && axis != static_cast<int64_t>(rank) - 1) return {};
    // Back from the softmax's input: an optional mask, then scalings, then Q Kt.
    Expr mask;
    double scale = 1.0;
    const Expr* def = only_reader_def((*softmax)->operands[0]);
    if (def != nullptr && (*def)->name == "Add") {
      const Expr& a = (*def)->operands[0];
      const Expr& b = (*def)->operands[1];
      const Expr* da = only_reader_def(a);
      const bool a_is_scores = da != nullptr && is_scores(*da);
      const Expr* db = a_is_scores ? nullptr : only_reader_def(b);
      if (!a_is_scores && (db == nullptr || !is_scores(*db))) return {};
      mask = a_is_scores ? b : a;
      if (!is_f32_tensor(mask.type()) || mask.type()->dims.size() > rank ||
          !type_equal((*def).type(), (a_is_scores ? a : b).type())) {
        return {};
      }
      def = a_is_scores ? da : db;
    }
    while (def != nullptr && ((*def)->name == "Mul" || (*def)->name == "Div")) {
      const Expr& a = (*def)->operands[0];
      const Expr& b = (*def)->operands[1];
      std::optional<double> c = scalar(b);
      const Expr* next = only_reader_def(a);
      if (!c && (*def)->name == "Mul") {
        c = scalar(a);
        next = only_reader_def(b);
      }
      if (!c || *c == 0.0) return {};
      scale = (*def)->name == "Mul" ? scale * *c : scale / *c;
      def = next;
    }
    if (def == nullptr || (*def)->name != "MatMul") return {};
    const Expr& q = (*def)->operands[0];
    const Expr& kt = (*def)->operands[1];
    if (!is_f32_tensor(q.type()) || !is_f32_tensor(kt.type()) || q.type()->dims.size() != rank ||
        kt.type()->dims.size() != rank || !type_equal((*def).type(), scores_type)) {
      return {};
    }
    std::vector<Expr> operands{q, kt, v};
    if (mask.defined()) operands.push_back(mask);
    return make_call("dynvm.Attention", operands, {{"scale", AttrValue{scale}}}, product.type());
  }

  // A step of the chain between Q Kt and the mask: a scaling or the product itself.
  static bool is_scores(const Expr& call) {
    return call->name == "MatMul" || call->name == "Mul" || call->name == "Div";
  }

  const std::unordered_map<uint64_t, ValueFacts>& facts_;
  const std::unordered_map<uint64_t, std::vector<RunCheck>>& checks_;
  FuseAttentionStats& stats_;
};

}  // namespace

PassResult fuse_attention(const TypedModule& in, FuseAttentionStats* stats) {
  FuseAttentionStats local;
  FuseAttentionStats& s = stats != nullptr ? *stats : local;
  TypedModule out = in;
  FuseAttention fuser(in, s);
  out.module = fuser.mutate_module(in.module);
  const std::string summary = str_cat(s.fused, " attention chains fused into one kernel each");
  if (s.fused == 0) return PassResult(std::move(out), false, summary);
  // The chains' other bindings are dead now.
  return PassResult(dce(out), true, summary);
}

}  // namespace dynvm::compiler
