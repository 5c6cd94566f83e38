// The graph IR's walkers (see functor.h).
#include "compiler/ir/functor.h"

namespace dynvm::compiler {

LetChain flatten_lets(const Expr& e) {
  LetChain chain;
  Expr cur = e;
  for (; cur.kind() == ExprKind::kLet; cur = cur->operands[2]) {
    chain.bindings.push_back({cur->operands[0], cur->operands[1]});
  }
  chain.body = cur;
  return chain;
}

Expr make_let_chain(const std::vector<Binding>& bindings, Expr body) {
  for (auto it = bindings.rbegin(); it != bindings.rend(); ++it) {
    body = make_let(it->var, it->value, std::move(body));
  }
  return body;
}

std::vector<Expr> ExprMutator::mutate_all(const std::vector<Expr>& es, bool* changed) {
  std::vector<Expr> out;
  out.reserve(es.size());
  for (const Expr& e : es) {
    out.push_back(mutate(e));
    if (!out.back().same_node(e)) *changed = true;
  }
  return out;
}

Expr ExprMutator::mutate_operands(const Expr& e) {
  bool changed = false;
  std::vector<Expr> ops = mutate_all(e->operands, &changed);
  return changed ? with_operands(e, std::move(ops)) : e;
}

std::shared_ptr<const Function> ExprMutator::mutate_function(
    const std::shared_ptr<const Function>& f) {
  Expr body = mutate(f->body);
  if (body.same_node(f->body)) return f;
  auto g = std::make_shared<Function>(*f);
  g->body = std::move(body);
  return g;
}

Module ExprMutator::mutate_module(const Module& m, bool* changed) {
  Module out = m;
  bool any = false;
  for (auto& f : out.functions) {
    std::shared_ptr<const Function> g = mutate_function(f);
    any = any || g != f;
    f = std::move(g);
  }
  if (changed != nullptr) *changed = any;
  return out;
}

Expr ExprMutator::visit_loop(const Expr& e) {
  bool changed = false;
  Expr max_trip = mutate(loop_max_trip(e));
  Expr cond = mutate(loop_cond(e));
  changed = !max_trip.same_node(loop_max_trip(e)) || !cond.same_node(loop_cond(e));
  std::vector<Expr> carried = mutate_all(loop_carried(e), &changed);
  std::shared_ptr<const Function> body = mutate_function(e->body);
  if (!changed && body == e->body) return e;
  return make_loop(max_trip, cond, std::move(carried), std::move(body), e->index, e.type());
}

ExprMutator::RewrittenChain ExprMutator::rewrite_let_chain(const Expr& e) {
  RewrittenChain out;
  Expr cur = e;
  for (; cur.kind() == ExprKind::kLet; cur = cur->operands[2]) {
    const Expr& var = cur->operands[0];
    const Expr& value = cur->operands[1];
    std::vector<Binding>& bindings = out.chain.bindings;
    const size_t before = bindings.size();
    rewrite_binding_into(var, value, bindings);
    if (bindings.size() != before + 1 || !bindings.back().var.same_node(var) ||
        !bindings.back().value.same_node(value)) {
      out.changed = true;
    }
  }
  out.chain.body = mutate(cur);
  if (!out.chain.body.same_node(cur)) out.changed = true;
  return out;
}

Expr ExprMutator::visit_let(const Expr& e) {
  RewrittenChain r = rewrite_let_chain(e);
  return r.changed ? make_let_chain(r.chain.bindings, std::move(r.chain.body)) : e;
}

namespace {

class CountUses : public ExprVisitor {
 public:
  std::unordered_map<uint64_t, size_t> uses;

 protected:
  void visit_var(const Expr& e) override { ++uses[e->var_id]; }
};

}  // namespace

std::unordered_map<uint64_t, size_t> count_var_uses(const Module& m) {
  CountUses count;
  count.visit_module(m);
  return std::move(count.uses);
}

const Expr* ChainMutator::single_use_call(const Expr& e) const {
  if (e.kind() != ExprKind::kVar) return nullptr;
  auto uses = uses_.find(e->var_id);
  if (uses == uses_.end() || uses->second != 1) return nullptr;
  auto def = defined_.find(e->var_id);
  return def == defined_.end() ? nullptr : &def->second;
}

}  // namespace dynvm::compiler
