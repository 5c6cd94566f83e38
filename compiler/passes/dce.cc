// Dead code elimination (see dce.h).
#include "compiler/passes/dce.h"

#include <algorithm>
#include <set>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/ir/functor.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

// Rewrites one function body. Variables have unique identities, and every use of a
// binding comes after it in evaluation order, so walking each let chain from its end
// backwards with one set of used variables sees every use before the binding it reads.
class DeadLets : public ExprMutator {
 public:
  explicit DeadLets(DceStats& stats) : stats_(stats) {}

 protected:
  Expr visit_var(const Expr& e) override {
    used_.insert(e->var_id);
    return e;
  }

  // The chain backwards: the body's uses first, then each binding's, last to first.
  Expr visit_let(const Expr& e) override {
    LetChain chain = flatten_lets(e);
    Expr body = mutate(chain.body);
    bool changed = !body.same_node(chain.body);
    std::vector<Binding> kept;
    for (auto it = chain.bindings.rbegin(); it != chain.bindings.rend(); ++it) {
      if (!used_.count(it->var->var_id)) {
        ++stats_.lets_removed;
        changed = true;
        continue;
      }
      Expr value = mutate(it->value);
      changed = changed || !value.same_node(it->value);
      kept.push_back({it->var, value});
    }
    if (!changed) return e;
    std::reverse(kept.begin(), kept.end());
    return make_let_chain(kept, body);
  }

 private:
  DceStats& stats_;
  std::unordered_set<uint64_t> used_;
};

// The module functions an expression calls (nested bodies included).
class Callees : public ExprVisitor {
 public:
  std::set<std::string> names;

 protected:
  void visit_call_function(const Expr& e) override {
    names.insert(e->name);
    ExprVisitor::visit_call_function(e);
  }
};

}  // namespace

PassResult dce(const TypedModule& in, DceStats* stats) {
  DceStats local;
  DceStats& s = stats != nullptr ? *stats : local;
  const Module& module = in.module;
  // Functions reachable from the entry (all of them when there is no entry to start from).
  std::set<std::string> reachable;
  std::vector<std::string> work;
  if (module.find_function(module.entry) != nullptr) {
    work.push_back(module.entry);
  } else {
    for (const auto& f : module.functions) work.push_back(f->name);
  }
  std::vector<std::shared_ptr<const Function>> cleaned;
  while (!work.empty()) {
    std::string name = work.back();
    work.pop_back();
    if (!reachable.insert(name).second) continue;
    auto it = std::find_if(module.functions.begin(), module.functions.end(),
                           [&](const auto& f) { return f->name == name; });
    if (it == module.functions.end()) continue;  // infer_types reports unknown callees
    std::shared_ptr<const Function> g = DeadLets(s).mutate_function(*it);
    Callees callees;
    callees.visit_function(*g);
    for (const std::string& c : callees.names) work.push_back(c);
    cleaned.push_back(g);
  }
  TypedModule out = in;
  out.module.functions.clear();
  for (const auto& f : module.functions) {  // in the module's order
    auto g = std::find_if(cleaned.begin(), cleaned.end(),
                          [&](const auto& c) { return c->name == f->name; });
    if (g == cleaned.end()) {
      ++s.functions_removed;
    } else {
      out.module.functions.push_back(*g);
    }
  }
  const bool changed = s.lets_removed > 0 || s.functions_removed > 0;
  return PassResult(
      std::move(out), changed,
      str_cat(s.lets_removed, " lets removed, ", s.functions_removed, " functions removed"));
}

}  // namespace dynvm::compiler
