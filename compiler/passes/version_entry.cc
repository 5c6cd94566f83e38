// The entry function versioned by a dim's values (see version_entry.h).
#include "compiler/passes/version_entry.h"

#include <algorithm>
#include <unordered_map>

#include "compiler/ir/fresh_copy.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

Expr i64_scalar(int64_t v) {
  return make_constant(vm::Tensor::from_vector(std::vector<int64_t>{v}, {}, vm::DType::kInt64));
}

bool mentions(const Type& t, arith::VarId dim) {
  if (!t.defined()) return false;
  if (t.kind() == TypeKind::kTuple) {
    return std::any_of(t->fields.begin(), t->fields.end(),
                       [&](const Type& f) { return mentions(f, dim); });
  }
  if (t.kind() != TypeKind::kTensor) return false;
  return std::any_of(t->dims.begin(), t->dims.end(),
                     [&](const Dim& d) { return !d.is_any() && arith::uses_var(d.expr(), dim); });
}

std::string join_values(const std::vector<int64_t>& values) {
  std::string out;
  for (int64_t v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

}  // namespace

PassResult version_entry(const TypedModule& in, const std::string& dim,
                         const std::vector<int64_t>& values) {
  const Module& module = in.module;
  const DimSymbol* symbol = module.find_dim(dim);
  if (symbol == nullptr) user_error("--dim ", dim, ": the model has no symbolic dim of that name");
  if (values.empty()) user_error("--dim ", dim, ": no values to version the entry by");
  for (size_t k = 0; k < values.size(); ++k) {
    const int64_t v = values[k];
    if (std::find(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), v) !=
        values.begin() + static_cast<std::ptrdiff_t>(k)) {
      user_error("--dim ", dim, ": value ", v, " is given twice");
    }
    if (v < symbol->min || v > symbol->max) {
      user_error("--dim ", dim, ": value ", v, " is outside the dim's range ", symbol->min, "..",
                 symbol->max);
    }
  }
  const Function* entry = module.find_function(module.entry);
  if (entry == nullptr) user_error("the module has no function @", module.entry);
  const arith::VarId id = symbol->var.id();

  // The parameter whose dim is read at run time: the first with the dim alone at an axis.
  const Expr* probe = nullptr;
  int64_t axis = 0;
  for (const Expr& p : entry->params) {
    if (!p.type().is_tensor()) continue;
    for (size_t k = 0; k < p.type()->dims.size() && probe == nullptr; ++k) {
      const Dim& d = p.type()->dims[k];
      if (!d.is_any() && d.expr().kind() == arith::ExprKind::kVar && d.expr()->var_id == id) {
        probe = &p;
        axis = static_cast<int64_t>(k);
      }
    }
    if (probe != nullptr) break;
  }
  if (probe == nullptr) {
    user_error("--dim ", dim, "=", join_values(values), ": no input of @", module.entry,
               " has dim ", dim, " as one of its dims, so its value cannot be read at run time");
  }

  // else-chain from the last version back: the final else is the run-time error.
  Expr chain =
      make_call("dynvm.Unreachable", {},
                {{"message", str_cat("input '", (*probe)->name, "': dim ", dim, " (axis ", axis,
                                     ") must be one of ", join_values(values),
                                     ": this executable was compiled for those sizes only")}});
  Expr shape = make_var(str_cat(dim, "_shape"));
  Expr size = make_var(dim);
  std::vector<std::pair<Expr, Expr>> conditions;  // (var, value), in order
  for (int64_t v : values) {
    conditions.emplace_back(make_var(str_cat(dim, "_is_", v)),
                            make_call("Equal", {size, i64_scalar(v)}));
  }
  for (size_t k = values.size(); k-- > 0;) {
    const int64_t v = values[k];
    // The version's body: each parameter whose type mentions the dim, refined to the value.
    std::unordered_map<uint64_t, Expr> renamed;
    std::vector<std::pair<Expr, Expr>> refines;
    for (const Expr& p : entry->params) {
      if (!mentions(p.type(), id)) continue;
      Expr refined = make_var(str_cat(p->name, "_", v));
      refines.emplace_back(refined, make_call("dynvm.Refine", {p}, {{"dim", dim}, {"value", v}}));
      renamed[p->var_id] = refined;
    }
    Expr body = fresh_copy(entry->body, std::move(renamed));
    for (auto it = refines.rbegin(); it != refines.rend(); ++it)
      body = make_let(it->first, it->second, body);
    chain = make_if(conditions[k].first, body, chain);
  }
  Expr result = make_var(str_cat("versioned_by_", dim));
  Expr body = make_let(result, chain, result);
  for (auto it = conditions.rbegin(); it != conditions.rend(); ++it)
    body = make_let(it->first, it->second, body);
  body =
      make_let(size, make_call("Gather", {shape, i64_scalar(axis)}, {{"axis", int64_t{0}}}), body);
  body = make_let(shape, make_call("Shape", {*probe}), body);

  auto versioned = std::make_shared<Function>(*entry);
  versioned->body = body;
  TypedModule out = in;
  for (auto& f : out.module.functions) {
    if (f->name == module.entry) f = versioned;
  }
  // The dim takes exactly these values: its range is theirs.
  for (DimSymbol& d : out.module.dims) {
    if (d.var.id() != id) continue;
    d.min = *std::min_element(values.begin(), values.end());
    d.max = *std::max_element(values.begin(), values.end());
  }
  return PassResult(std::move(out), true,
                    str_cat("@", module.entry, " versioned by ", dim, " = ", join_values(values)));
}

}  // namespace dynvm::compiler
