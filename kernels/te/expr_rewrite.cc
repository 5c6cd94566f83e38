// Substitution of index variables in arith and tir expressions (see expr_rewrite.h).
#include "kernels/te/expr_rewrite.h"

#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>

#include "kernels/tir/functor.h"

namespace dynvm::te {

arith::Expr substitute_index(const arith::Expr& e, const IndexMap& map) {
  if (map.empty() || !e.defined()) return e;
  switch (e.kind()) {
    case arith::ExprKind::kIntImm:
    case arith::ExprKind::kBoolImm:
      return e;
    case arith::ExprKind::kVar: {
      auto it = map.find(e->var_id);
      return it == map.end() ? e : it->second;
    }
    default:
      break;
  }
  int arity = arith::kind_arity(e.kind());
  arith::Expr ops[3];
  bool changed = false;
  for (int i = 0; i < arity; ++i) {
    ops[i] = substitute_index(e.operand(i), map);
    changed |= ops[i].get() != e.operand(i).get();
  }
  if (!changed) return e;
  if (arity == 1) return arith::make_not(ops[0]);
  if (arity == 3) return arith::make_select(ops[0], ops[1], ops[2]);
  return arith::make_binary(e.kind(), ops[0], ops[1]);
}

namespace {

class Substituter {
 public:
  Substituter(IndexMap map, const ReadHook& on_read) : map_(std::move(map)), on_read_(on_read) {}

  tir::Expr rewrite(const tir::Expr& e) {
    if (!e.defined()) return e;
    auto node = std::make_shared<tir::ExprNode>(*e);
    if (node->kind == tir::ExprKind::kLetIndex) {
      node->operands[0] = rewrite(node->operands[0]);
      arith::Var old(node->let_var);
      arith::Var fresh(old.name());
      std::optional<arith::Expr> shadowed;
      if (auto it = map_.find(old.id()); it != map_.end()) shadowed = it->second;
      map_[old.id()] = fresh;
      node->operands[1] = rewrite(node->operands[1]);
      if (shadowed) {
        map_[old.id()] = *shadowed;
      } else {
        map_.erase(old.id());
      }
      node->let_var = fresh;
      return tir::Expr(std::move(node));
    }
    for (tir::Expr& op : node->operands) op = rewrite(op);
    node->index = substitute_index(node->index, map_);
    node->stride = substitute_index(node->stride, map_);
    for (arith::Expr& index : node->indices) index = substitute_index(index, map_);
    for (tir::IterVar& axis : node->reduce_axes) {
      axis.extent = substitute_index(axis.extent, map_);
    }
    tir::Expr result(std::move(node));
    if (result.kind() == tir::ExprKind::kTensorRead && on_read_) return on_read_(result);
    return result;
  }

 private:
  IndexMap map_;
  const ReadHook& on_read_;
};

class LoopRenamer : public tir::StmtMutator {
 public:
  explicit LoopRenamer(const std::unordered_map<arith::VarId, std::string>& qualified)
      : qualified_(qualified) {}

  arith::Expr mutate_index(const arith::Expr& e) override {
    return renames_.empty() ? e : substitute_index(e, renames_);
  }

 protected:
  tir::Stmt visit_for(const tir::Stmt& s) override {
    arith::Var var(s->loop_var);
    std::string name = var.name();
    if (in_scope_.count(name)) {
      auto q = qualified_.find(var.id());
      if (q != qualified_.end()) name = q->second;
      while (in_scope_.count(name)) name += "'";
      arith::Var fresh(name);
      renames_[var.id()] = fresh;
      var = fresh;
    }
    arith::Expr min = mutate_index(s->min);
    arith::Expr extent = mutate_index(s->extent);
    in_scope_.insert(name);
    tir::Stmt body = mutate_stmt(s->body);
    in_scope_.erase(name);
    renames_.erase(s->loop_var->var_id);
    return tir::make_for(var, min, extent, s->for_kind, body, s->thread_axis);
  }

 private:
  const std::unordered_map<arith::VarId, std::string>& qualified_;
  std::unordered_set<std::string> in_scope_;
  IndexMap renames_;
};

}  // namespace

tir::Stmt rename_shadowing_loops(const tir::Stmt& body,
                                 const std::unordered_map<arith::VarId, std::string>& qualified) {
  return LoopRenamer(qualified).mutate_stmt(body);
}

tir::Expr substitute(const tir::Expr& e, const IndexMap& map, const ReadHook& on_read) {
  return Substituter(map, on_read).rewrite(e);
}

}  // namespace dynvm::te
