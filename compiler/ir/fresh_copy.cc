// Copies with fresh variables (see fresh_copy.h).
#include "compiler/ir/fresh_copy.h"

#include <memory>
#include <utility>

#include "compiler/ir/functor.h"

namespace dynvm::compiler {
namespace {

class FreshCopy : public ExprMutator {
 public:
  explicit FreshCopy(std::unordered_map<uint64_t, Expr> renamed) : renamed_(std::move(renamed)) {}

  std::shared_ptr<const Function> mutate_function(
      const std::shared_ptr<const Function>& f) override {
    auto g = std::make_shared<Function>(*f);
    for (Expr& p : g->params) p = fresh(p);
    g->body = mutate(f->body);
    return g;
  }

 protected:
  Expr visit_var(const Expr& e) override {
    auto it = renamed_.find(e->var_id);
    return it == renamed_.end() ? e : it->second;
  }
  Binding rewrite_binding(const Expr& var, const Expr& value) override {
    Expr v = mutate(value);
    return {fresh(var), v};
  }

 private:
  Expr fresh(const Expr& var) {
    Expr v = make_var(var->name, var.type());
    renamed_[var->var_id] = v;
    return v;
  }

  std::unordered_map<uint64_t, Expr> renamed_;
};

}  // namespace

Expr fresh_copy(const Expr& e, std::unordered_map<uint64_t, Expr> renamed) {
  return FreshCopy(std::move(renamed)).mutate(e);
}

}  // namespace dynvm::compiler
