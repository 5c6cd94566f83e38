// Algebraic simplification of the typed IR (see simplify.h).
#include "compiler/passes/simplify.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/ir/functor.h"
#include "compiler/passes/infer_types.h"
#include "kernels/arith/analyzer.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

// An omitted optional input (the empty tuple).
bool absent(const Expr& e) { return e.kind() == ExprKind::kTuple && e->operands.empty(); }

// Ops whose output is their input's elements in the same row-major order, only the shape
// changed: a chain of them is determined by its root and its final shape.
bool is_view(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
}

// The constants that leave x unchanged under an arithmetic op, compared bitwise for floats
// (the sign of a zero matters: x + (+0.0) is not x when x is -0.0).
enum class Neutral : uint8_t { kPlusZero, kMinusZero, kOne };

template <typename Bits>
bool all_bits(const vm::Tensor& t, Bits want) {
  const auto* data = static_cast<const unsigned char*>(t.data());
  for (int64_t i = 0; i < t.numel(); ++i) {
    Bits v;
    std::memcpy(&v, data + i * sizeof(Bits), sizeof(Bits));
    if (v != want) return false;
  }
  return true;
}

template <typename Int>
bool all_ints(const vm::Tensor& t, Int want) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.data_as<Int>()[i] != want) return false;
  }
  return true;
}

// Every element of the host tensor `t` is the neutral value `n` (integers have one zero).
bool all_neutral(const vm::Tensor& t, Neutral n) {
  if (!t.defined() || t.device() != vm::kCpu || t.numel() == 0) return false;
  const bool one = n == Neutral::kOne, minus = n == Neutral::kMinusZero;
  switch (t.dtype()) {
    case vm::DType::kFloat32:
      return all_bits<uint32_t>(t, one ? 0x3F800000u : minus ? 0x80000000u : 0u);
    case vm::DType::kFloat64:
      return all_bits<uint64_t>(t, one     ? 0x3FF0000000000000ull
                                   : minus ? 0x8000000000000000ull
                                           : 0ull);
    case vm::DType::kFloat16:
      return all_bits<uint16_t>(t, one ? 0x3C00 : minus ? 0x8000 : 0);
    case vm::DType::kBFloat16:
      return all_bits<uint16_t>(t, one ? 0x3F80 : minus ? 0x8000 : 0);
    case vm::DType::kInt64:
      return all_ints<int64_t>(t, one ? 1 : 0);
    case vm::DType::kInt32:
      return all_ints<int32_t>(t, one ? 1 : 0);
    case vm::DType::kInt16:
      return all_ints<int16_t>(t, one ? 1 : 0);
    case vm::DType::kInt8:
      return all_ints<int8_t>(t, one ? 1 : 0);
    case vm::DType::kUInt8:
      return all_ints<uint8_t>(t, one ? 1 : 0);
    default:
      return false;  // bool and the rest: no arithmetic identities claimed
  }
}

// A permutation attribute in normal form: empty means reversed, negative entries count
// from the end. nullopt when it is not a permutation of `rank` axes.
std::optional<std::vector<int64_t>> normal_perm(const Expr& transpose, size_t rank) {
  std::vector<int64_t> perm = attr_ints(transpose->attrs, "perm", {}, "Transpose");
  const auto r = static_cast<int64_t>(rank);
  if (perm.empty()) {
    for (int64_t k = r; k-- > 0;) perm.push_back(k);
  }
  if (perm.size() != rank) return std::nullopt;
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    if (p < -r || p >= r) return std::nullopt;
    if (p < 0) p += r;
    if (seen[static_cast<size_t>(p)]) return std::nullopt;
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

bool is_identity_perm(const std::vector<int64_t>& perm) {
  for (size_t k = 0; k < perm.size(); ++k) {
    if (perm[k] != static_cast<int64_t>(k)) return false;
  }
  return true;
}

// Walks the typed module once, rebuilding it bottom-up: operands first (uses of bypassed
// values replaced, types simplified), then the call's own rewrite. Variables have unique
// identities and are bound before they are used, so one map of replacements and one of
// definitions serve every function, If branch and Loop body.
class Simplifier : public ExprMutator {
 public:
  Simplifier(const TypedModule& typed, SimplifyStats& stats)
      : facts_(typed.facts), checks_(typed.checks), stats_(stats) {
    for (const DimSymbol& d : typed.module.dims) analyzer_.bind(d.var, d.min, d.max);
  }

  // Every node is retyped (its dims simplified) after its own rewrite.
  Expr visit(const Expr& e) override { return retyped(ExprMutator::visit(e)); }

  // Module functions and Loop bodies: parameters and result type simplified too.
  std::shared_ptr<const Function> mutate_function(
      const std::shared_ptr<const Function>& f) override {
    std::vector<Expr> params;
    bool changed = false;
    for (const Expr& p : f->params) {
      params.push_back(retyped(p));
      changed = changed || !params.back().same_node(p);
    }
    Expr body = mutate(f->body);
    Type result = simplified(f->result_type);
    if (!changed && body.same_node(f->body) && same_type_node(result, f->result_type)) return f;
    auto g = std::make_shared<Function>(*f);
    g->params = std::move(params);
    g->body = std::move(body);
    g->result_type = std::move(result);
    return g;
  }

  // The facts with their dims simplified too (after the functions were visited, so their
  // types are mostly cached already; a fact counts when its known value changed form).
  std::unordered_map<uint64_t, ValueFacts> take_facts() {
    for (auto& [id, f] : facts_) {
      f.type = simplified(f.type);
      if (!f.value) continue;
      bool changed = false;
      for (Dim& d : *f.value) {
        Dim s = simplified(d);
        changed = changed || !s.same_as(d);
        d = s;
      }
      if (changed) ++stats_.dims_simplified;
    }
    return std::move(facts_);
  }

 private:
  // ---- traversal (the base walks; these are the cases simplify rewrites) ----

  Expr visit_var(const Expr& e) override {
    auto it = replaced_.find(e->var_id);
    return it != replaced_.end() ? it->second : e;
  }

  Expr visit_call(const Expr& e) override { return rewrite(retyped(ExprMutator::visit_call(e))); }

  // A binding whose value became another variable is bypassed: later uses read that
  // variable.
  Binding rewrite_binding(const Expr& var, const Expr& original) override {
    Expr value = mutate(original);
    if (value.kind() == ExprKind::kCall && value->name == "dynvm.CheckIndices") {
      value = checked_indices(var, value);
    }
    if (value.kind() == ExprKind::kVar) {
      replaced_[var->var_id] = value;
    } else if (value.kind() == ExprKind::kCall) {
      defined_[var->var_id] = value;
    } else if (value.kind() == ExprKind::kConstant && original.kind() == ExprKind::kCall) {
      // An identity of a constant: the variable is now bound to it, and lowering learns
      // constants from the facts.
      auto f = facts_.find(var->var_id);
      if (f != facts_.end()) f->second.constant = value->value;
    }
    return {retyped(var), value};
  }

  // dynvm.CheckIndices bound to `var`: its indices when inference proved them in range (no
  // run-time check left); without its count when it checks known values instead.
  Expr checked_indices(const Expr& var, const Expr& call) {
    if (checks_.count(var->var_id) == 0) {
      ++stats_.identities;
      return call->operands[0];
    }
    const Expr& indices = call->operands[0];
    if (call->operands.size() < 3 || indices.kind() != ExprKind::kVar) return call;
    auto it = facts_.find(indices->var_id);
    if (it == facts_.end() || !it->second.value) return call;
    for (const Dim& d : *it->second.value) {
      if (d.is_any()) return call;
    }
    ++stats_.arithmetic;
    return with_type(make_call(call->name, {indices, call->operands[1]}, call->attrs), call.type());
  }

  // ---- dims ----

  Dim simplified(const Dim& d) const { return d.is_any() ? d : Dim(analyzer_.simplify(d.expr())); }

  // The type with every dim in canonical form; the same handle when nothing changed (types
  // are shared between nodes, so results are cached by node).
  Type simplified(const Type& t) {
    if (!t.defined()) return t;
    auto hit = types_.find(&*t);
    if (hit != types_.end()) return hit->second.second;
    Type out = t;
    if (t.kind() == TypeKind::kTensor) {
      std::vector<Dim> dims;
      bool changed = false;
      for (const Dim& d : t->dims) {
        dims.push_back(simplified(d));
        changed = changed || !dims.back().same_as(d);
      }
      if (changed) {
        out = tensor_type(t->dtype, dims);
        ++stats_.dims_simplified;
      }
    } else {
      std::vector<Type> fields, results;
      bool changed = false;
      for (const Type& f : t->fields) {
        fields.push_back(simplified(f));
        changed = changed || &*fields.back() != &*f;
      }
      for (const Type& r : t->results) {
        results.push_back(simplified(r));
        changed = changed || &*results.back() != &*r;
      }
      if (changed)
        out = t.kind() == TypeKind::kTuple ? tuple_type(fields) : func_type(fields, results);
    }
    types_.emplace(&*t, std::make_pair(t, out));  // the key's node stays alive with it
    return out;
  }

  static bool same_type_node(const Type& a, const Type& b) {
    return a.defined() == b.defined() && (!a.defined() || &*a == &*b);
  }

  Expr retyped(const Expr& e) {
    if (!e.type().defined()) return e;
    Type t = simplified(e.type());
    return &*t == &*e.type() ? e : with_type(e, t);
  }

  // Two tensor types that are provably the same: dtype, rank and every dim (no Any).
  bool same_tensor_type(const Type& a, const Type& b) const {
    if (!a.is_tensor() || !b.is_tensor()) return false;
    if (a->dtype != b->dtype || a->dims.size() != b->dims.size()) return false;
    for (size_t k = 0; k < a->dims.size(); ++k) {
      const Dim &x = a->dims[k], &y = b->dims[k];
      if (x.is_any() || y.is_any()) return false;
      if (!x.same_as(y) && !analyzer_.provably_equal(x.expr(), y.expr())) return false;
    }
    return true;
  }

  // ---- facts of operands ----

  // A compile-time constant operand's value (a Constant, or a variable bound to one).
  vm::Tensor constant_of(const Expr& e) const { return constant_operand(facts_, e); }

  // An integer (or bool) operand's elements, when all are known at compile time.
  std::optional<std::vector<int64_t>> known_ints(const Expr& e) const {
    if (e.kind() == ExprKind::kVar) {
      auto it = facts_.find(e->var_id);
      if (it != facts_.end() && it->second.value) {
        std::vector<int64_t> out;
        for (const Dim& d : *it->second.value) {
          if (!d.is_const()) return std::nullopt;
          out.push_back(d.value());
        }
        return out;
      }
    }
    vm::Tensor t = constant_of(e);
    if (!t.defined() || t.device() != vm::kCpu) return std::nullopt;
    std::vector<int64_t> out;
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (t.dtype() == vm::DType::kInt64) {
        out.push_back(t.data_as<int64_t>()[i]);
      } else if (t.dtype() == vm::DType::kInt32) {
        out.push_back(t.data_as<int32_t>()[i]);
      } else if (t.dtype() == vm::DType::kBool) {
        out.push_back(t.data_as<uint8_t>()[i]);
      } else {
        return std::nullopt;
      }
    }
    return out;
  }

  bool all_ints_are(const Expr& e, int64_t v) const {
    std::optional<std::vector<int64_t>> ints = known_ints(e);
    return ints && std::all_of(ints->begin(), ints->end(), [&](int64_t i) { return i == v; });
  }

  // The call bound to variable `e`, if any (after its own rewrite).
  const Expr* definition(const Expr& e) const {
    if (e.kind() != ExprKind::kVar) return nullptr;
    auto it = defined_.find(e->var_id);
    return it != defined_.end() ? &it->second : nullptr;
  }

  // ---- rewrites ----

  // The call's replacement: an operand it provably equals, a shorter call, or itself.
  Expr rewrite(const Expr& call) {
    if (!call.type().is_tensor() || call->operands.empty()) return call;
    if (std::optional<Expr> x = identity(call)) return *x;
    if (std::optional<Expr> x = noop_move(call)) return *x;
    if (std::optional<Expr> x = arithmetic(call)) return *x;
    if (std::optional<Expr> x = view_chain(call)) return *x;
    if (std::optional<Expr> x = reshape_of_view(call)) return *x;
    if (std::optional<Expr> x = transpose_pair(call)) return *x;
    return call;
  }

  std::optional<Expr> identity(const Expr& call) {
    const std::string& op = call->name;
    const Expr& x = call->operands[0];
    bool same = false;
    if (op == "Identity") {
      same = true;
    } else if (op == "Dropout") {
      // Only at inference: training_mode absent or a constant false (its binding refuses
      // the rest, and bypassing it would hide that error).
      same = call->operands.size() < 3 || absent(call->operands[2]) ||
             all_ints_are(call->operands[2], 0);
    } else if (op == "Cast") {
      same = true;
    }
    if (!same || !same_tensor_type(call.type(), x.type())) return std::nullopt;
    ++stats_.identities;
    return x;
  }

  // Data movement that leaves its input as it is.
  std::optional<Expr> noop_move(const Expr& call) {
    const std::string& op = call->name;
    const Expr& x = call->operands[0];
    if (!same_tensor_type(call.type(), x.type())) return std::nullopt;
    bool noop = false;
    if (is_view(op) || op == "Expand") {
      // Same elements in the same order (Expand: broadcasting to its own shape copies).
      noop = true;
    } else if (op == "Transpose") {
      auto perm = normal_perm(call, x.type()->dims.size());
      noop = perm && is_identity_perm(*perm);
    } else if (op == "Slice") {
      // With unit steps, an extent equal to the dim's means start 0 and end at the dim.
      noop = call->operands.size() < 5 || absent(call->operands[4]) ||
             all_ints_are(call->operands[4], 1);
    } else if (op == "Concat") {
      noop = call->operands.size() == 1;
    } else if (op == "Pad") {
      noop = call->operands.size() >= 2 && all_ints_are(call->operands[1], 0);
    }
    if (!noop) return std::nullopt;
    ++stats_.noop_moves;
    return x;
  }

  // x op c where c is the op's neutral element and broadcasting keeps x's type.
  std::optional<Expr> arithmetic(const Expr& call) {
    const std::string& op = call->name;
    if (call->operands.size() != 2) return std::nullopt;
    const Expr &a = call->operands[0], &b = call->operands[1];
    if (!a.type().is_tensor() || !b.type().is_tensor()) return std::nullopt;
    // Float x + c is exact only for c = -0.0; integers have one zero.
    auto add_neutral = [&](const Expr& c, const Expr& x) {
      vm::Tensor t = constant_of(c);
      return t.defined() && t.dtype() == x.type()->dtype &&
             (all_neutral(t, Neutral::kMinusZero) ||
              (vm::is_integer(t.dtype()) && all_neutral(t, Neutral::kPlusZero)));
    };
    auto is = [&](const Expr& c, const Expr& x, Neutral n) {
      vm::Tensor t = constant_of(c);
      return t.defined() && t.dtype() == x.type()->dtype && all_neutral(t, n);
    };
    std::optional<Expr> x;
    if (op == "Add") {
      if (add_neutral(b, a))
        x = a;
      else if (add_neutral(a, b))
        x = b;
    } else if (op == "Sub") {
      if (is(b, a, Neutral::kPlusZero)) x = a;  // -0 - +0 is -0
    } else if (op == "Mul") {
      if (is(b, a, Neutral::kOne))
        x = a;
      else if (is(a, b, Neutral::kOne))
        x = b;
    } else if (op == "Div") {
      if (is(b, a, Neutral::kOne)) x = a;
    }
    if (!x || !same_tensor_type(call.type(), x->type())) return std::nullopt;
    ++stats_.arithmetic;
    return x;
  }

  // view(view(...(root))) with the root's type is the root.
  std::optional<Expr> view_chain(const Expr& call) {
    if (!is_view(call->name)) return std::nullopt;
    const Expr* def = definition(call->operands[0]);
    for (int depth = 0; def != nullptr && is_view((*def)->name) && depth < 64; ++depth) {
      const Expr& root = (*def)->operands[0];
      if (same_tensor_type(call.type(), root.type())) {
        ++stats_.view_chains;
        return root;
      }
      def = definition(root);
    }
    return std::nullopt;
  }

  // Reshape(view(x), s) -> Reshape(x, s): a view keeps the element count and order, so
  // only a 0 entry of s (copy the input's dim, which is the view's, not x's) tells them
  // apart; -1 is inferred from the same count.
  std::optional<Expr> reshape_of_view(const Expr& call) {
    if (call->name != "Reshape" || call->operands.size() != 2) return std::nullopt;
    const Expr* def = definition(call->operands[0]);
    if (def == nullptr || !is_view((*def)->name)) return std::nullopt;
    std::optional<std::vector<int64_t>> shape = known_ints(call->operands[1]);
    if (!shape) return std::nullopt;
    const bool allowzero = attr_int(call->attrs, "allowzero", 0, "Reshape") != 0;
    if (!allowzero && std::find(shape->begin(), shape->end(), 0) != shape->end()) {
      return std::nullopt;
    }
    ++stats_.reshapes_merged;
    return make_call("Reshape", {(*def)->operands[0], call->operands[1]}, call->attrs, call.type());
  }

  // Transpose(Transpose(x, p), q): output axis k is the inner's axis q[k], x's p[q[k]].
  std::optional<Expr> transpose_pair(const Expr& call) {
    if (call->name != "Transpose") return std::nullopt;
    const Expr* def = definition(call->operands[0]);
    if (def == nullptr || (*def)->name != "Transpose") return std::nullopt;
    const Expr& x = (*def)->operands[0];
    if (!x.type().is_tensor()) return std::nullopt;
    const size_t rank = x.type()->dims.size();
    auto p = normal_perm(*def, rank), q = normal_perm(call, rank);
    if (!p || !q) return std::nullopt;
    std::vector<int64_t> composed;
    for (int64_t k : *q) composed.push_back((*p)[static_cast<size_t>(k)]);
    ++stats_.transposes_merged;
    if (is_identity_perm(composed)) return x;
    Attrs attrs = call->attrs;
    attrs["perm"] = composed;
    return make_call("Transpose", {x}, attrs, call.type());
  }

  arith::Analyzer analyzer_;
  std::unordered_map<uint64_t, ValueFacts> facts_;
  const std::unordered_map<uint64_t, std::vector<RunCheck>>& checks_;
  SimplifyStats& stats_;
  std::unordered_map<uint64_t, Expr> replaced_;  // bypassed variable -> its replacement
  std::unordered_map<uint64_t, Expr> defined_;   // let variable -> its (rewritten) call
  std::unordered_map<const TypeNode*, std::pair<Type, Type>> types_;  // original, simplified
};

}  // namespace

PassResult simplify(const TypedModule& typed, SimplifyStats* stats) {
  SimplifyStats local;
  SimplifyStats& s = stats != nullptr ? *stats : local;
  Simplifier simplifier(typed, s);
  TypedModule out;
  bool changed = false;
  out.module = simplifier.mutate_module(typed.module, &changed);
  out.facts = simplifier.take_facts();
  out.runtime_symbols = typed.runtime_symbols;
  out.checks = typed.checks;
  if (changed && !typed.runtime_symbols.empty()) {
    // A bypassed value may have been where a run-time symbol is read: typed again, so that
    // every symbol is read from a value that is still there.
    out = infer_types_with_facts(out.module);
  }
  out.warnings = typed.warnings;
  return PassResult(
      std::move(out), changed,
      str_cat(s.calls_rewritten(), " calls rewritten (", s.identities, " identities, ",
              s.noop_moves, " no-op moves, ", s.arithmetic, " arithmetic, ", s.view_chains,
              " view chains, ", s.reshapes_merged, " reshapes merged, ", s.transposes_merged,
              " transposes merged), ", s.dims_simplified, " types re-simplified"));
}

}  // namespace dynvm::compiler
