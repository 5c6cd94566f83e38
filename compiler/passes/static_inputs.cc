// Inputs fixed to static shapes (see static_inputs.h).
#include "compiler/passes/static_inputs.h"

#include <set>

#include "vm/error.h"

namespace dynvm::compiler {

PassResult static_inputs(const TypedModule& in,
                         const std::map<std::string, std::vector<int64_t>>& shapes) {
  if (shapes.empty()) return unchanged(in);
  TypedModule out = in;
  Module& m = out.module;
  const Function* entry = m.find_function(m.entry);
  if (entry == nullptr) user_error("the module has no function @", m.entry);
  auto main = std::make_shared<Function>(*entry);
  std::set<std::string> seen;
  for (Expr& p : main->params) {
    auto it = shapes.find(p->name);
    if (it == shapes.end()) continue;
    seen.insert(p->name);
    const Type& t = p.type();
    if (!t.is_tensor() || t->dims.size() != it->second.size()) {
      user_error("--static ", p->name, ": the input is ", to_string(t), ", given ",
                 it->second.size(), " dims");
    }
    std::vector<Dim> dims;
    for (size_t k = 0; k < t->dims.size(); ++k) {
      const Dim& d = t->dims[k];
      int64_t v = it->second[k];
      if (d.is_const() && d.value() != v) {
        user_error("--static ", p->name, ": dim ", k, " is ", d.value(), ", given ", v);
      }
      if (!d.is_const() && !d.is_any() && d.expr().kind() == arith::ExprKind::kVar) {
        // Every use of the symbol (in other inputs too) becomes the value.
        for (DimSymbol& s : m.dims) {
          if (s.var.id() == d.expr()->var_id) s.min = s.max = v;
        }
      }
      dims.emplace_back(v);
    }
    p = with_type(p, tensor_type(t->dtype, dims));
  }
  for (const auto& [name, shape] : shapes) {
    if (!seen.count(name)) user_error("--static ", name, ": the model has no input of that name");
  }
  for (auto& f : m.functions) {
    if (f->name == m.entry) f = main;
  }
  return PassResult(std::move(out), true, str_cat(shapes.size(), " inputs fixed"));
}

}  // namespace dynvm::compiler
