// Dead code elimination (see dce.h).
#include "compiler/passes/dce.h"

#include <set>
#include <unordered_set>
#include <utility>
#include <vector>

#include "vm/error.h"

namespace dynvm::compiler {
namespace {

// Rewrites one function body. Variables have unique identities, and every use of a
// binding comes after it in evaluation order, so walking each let chain from its end
// backwards with one set of used variables sees every use before the binding it reads.
class DeadLets {
 public:
  explicit DeadLets(DceStats& stats) : stats_(stats) {}

  Expr visit(const Expr& e) {
    if (!e.defined()) return e;
    switch (e.kind()) {
      case ExprKind::kVar:
        used_.insert(e->var_id);
        return e;
      case ExprKind::kConstant:
        return e;
      case ExprKind::kLet:
        return let_chain(e);
      case ExprKind::kLoop: {
        auto body = std::make_shared<Function>(*e->body);
        body->body = visit(body->body);
        std::vector<Expr> carried;
        for (const Expr& c : loop_carried(e)) carried.push_back(visit(c));
        Expr cond = visit(loop_cond(e));
        Expr max_trip = visit(loop_max_trip(e));
        return make_loop(max_trip, cond, carried, body, e->index, e.type());
      }
      default:
        break;
    }
    std::vector<Expr> ops;
    for (const Expr& o : e->operands) ops.push_back(visit(o));
    return with_operands(e, std::move(ops));
  }

 private:
  Expr let_chain(const Expr& first) {
    std::vector<const ExprNode*> lets;
    Expr e = first;
    while (e.kind() == ExprKind::kLet) {
      lets.push_back(e.get());
      e = e->operands[2];
    }
    Expr body = visit(e);
    std::vector<std::pair<Expr, Expr>> kept;
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
      const Expr& var = (*it)->operands[0];
      if (!used_.count(var->var_id)) {
        ++stats_.lets_removed;
        continue;
      }
      kept.emplace_back(var, visit((*it)->operands[1]));
    }
    for (const auto& [var, value] : kept) body = make_let(var, value, body);
    return body;
  }

  DceStats& stats_;
  std::unordered_set<uint64_t> used_;
};

void collect_callees(const Expr& e, std::set<std::string>& out) {
  if (!e.defined()) return;
  if (e.kind() == ExprKind::kCallFunction) out.insert(e->name);
  if (e.kind() == ExprKind::kLoop) collect_callees(e->body->body, out);
  // Let chains iteratively: they are long.
  Expr cur = e;
  while (cur.kind() == ExprKind::kLet) {
    collect_callees(cur->operands[1], out);
    cur = cur->operands[2];
  }
  if (!cur.same_node(e)) return collect_callees(cur, out);
  for (const Expr& o : e->operands) collect_callees(o, out);
}

}  // namespace

Module dce(const Module& module, DceStats* stats) {
  DceStats local;
  DceStats& s = stats != nullptr ? *stats : local;
  Module out = module;
  out.functions.clear();
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
    const Function* f = module.find_function(name);
    if (f == nullptr) continue;  // infer_types reports unknown callees
    auto g = std::make_shared<Function>(*f);
    g->body = DeadLets(s).visit(g->body);
    std::set<std::string> callees;
    collect_callees(g->body, callees);
    for (const std::string& c : callees) work.push_back(c);
    cleaned.push_back(g);
  }
  for (const auto& f : module.functions) {  // in the module's order
    bool kept = false;
    for (const auto& g : cleaned) {
      if (g->name == f->name) {
        out.functions.push_back(g);
        kept = true;
        break;
      }
    }
    if (!kept) ++s.functions_removed;
  }
  return out;
}

}  // namespace dynvm::compiler
