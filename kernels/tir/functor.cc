// Default traversal of TIR for mutators, plus substitution and free-variable collection, the
// two walks nearly every pass needs.
#include "kernels/tir/functor.h"

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "vm/error.h"

namespace dynvm::tir {

Expr ExprMutator::mutate_expr(const Expr& e) {
  if (!e.defined()) return e;
  switch (e.kind()) {
    case ExprKind::kConst:
      return visit_const(e);
    case ExprKind::kIndexValue:
      return visit_index_value(e);
    case ExprKind::kTensorRead:
      return visit_tensor_read(e);
    case ExprKind::kBufferLoad:
      return visit_buffer_load(e);
    case ExprKind::kBinary:
      return visit_binary(e);
    case ExprKind::kCompare:
      return visit_compare(e);
    case ExprKind::kLogical:
      return visit_logical(e);
    case ExprKind::kCall:
      return visit_call(e);
    case ExprKind::kCast:
      return visit_cast(e);
    case ExprKind::kSelect:
      return visit_select(e);
    case ExprKind::kBroadcast:
      return visit_broadcast(e);
    case ExprKind::kReduce:
      return visit_reduce(e);
    case ExprKind::kLetIndex:
      return visit_let_expr(e);
  }
  DYNVM_INTERNAL_CHECK(false, "unknown expression kind");
  return e;
}

std::vector<arith::Expr> ExprMutator::mutate_indices(const std::vector<arith::Expr>& v,
                                                     bool& changed) {
  std::vector<arith::Expr> out;
  out.reserve(v.size());
  for (const auto& i : v) {
    out.push_back(mutate_index(i));
    if (out.back().get() != i.get()) changed = true;
  }
  return out;
}

namespace {

bool same(const Expr& a, const Expr& b) { return a.get() == b.get(); }
bool same(const arith::Expr& a, const arith::Expr& b) { return a.get() == b.get(); }
bool same(const Stmt& a, const Stmt& b) { return a.get() == b.get(); }

arith::Expr mutate_if_defined(ExprMutator& m, const arith::Expr& e) {
  return e.defined() ? m.mutate_index(e) : e;
}

}  // namespace

Expr ExprMutator::visit_index_value(const Expr& e) {
  arith::Expr index = mutate_index(e->index);
  arith::Expr stride = mutate_if_defined(*this, e->stride);
  if (same(index, e->index) && same(stride, e->stride)) return e;
  if (e.type().lanes > 1) return vector_index_value(index, stride, e.type());
  return index_value(index, e.type());
}

Expr ExprMutator::visit_tensor_read(const Expr& e) {
  bool changed = false;
  std::vector<arith::Expr> indices = mutate_indices(e->indices, changed);
  if (!changed) return e;
  ExprNode n = *e;
  n.indices = std::move(indices);
  return Expr(std::make_shared<const ExprNode>(std::move(n)));
}

Expr ExprMutator::visit_buffer_load(const Expr& e) {
  bool changed = false;
  std::vector<arith::Expr> indices = mutate_indices(e->indices, changed);
  arith::Expr stride = mutate_if_defined(*this, e->stride);
  arith::Expr active = mutate_if_defined(*this, e->active);
  if (!changed && same(stride, e->stride) && same(active, e->active)) return e;
  if (e.type().lanes > 1) {
    return vector_buffer_load(e->buffer, indices[0], stride, e.type().lanes, active);
  }
  return buffer_load(e->buffer, std::move(indices));
}

Expr ExprMutator::visit_binary(const Expr& e) {
  Expr a = mutate_expr(e->operands[0]);
  Expr b = mutate_expr(e->operands[1]);
  if (same(a, e->operands[0]) && same(b, e->operands[1])) return e;
  return binary(e->binary_op, a, b);
}

Expr ExprMutator::visit_compare(const Expr& e) {
  Expr a = mutate_expr(e->operands[0]);
  Expr b = mutate_expr(e->operands[1]);
  if (same(a, e->operands[0]) && same(b, e->operands[1])) return e;
  return compare(e->compare_op, a, b);
}

Expr ExprMutator::visit_logical(const Expr& e) {
  Expr a = mutate_expr(e->operands[0]);
  if (e->logical_op == LogicalOp::kNot) return same(a, e->operands[0]) ? e : logical_not(a);
  Expr b = mutate_expr(e->operands[1]);
  if (same(a, e->operands[0]) && same(b, e->operands[1])) return e;
  return e->logical_op == LogicalOp::kAnd ? logical_and(a, b) : logical_or(a, b);
}

Expr ExprMutator::visit_call(const Expr& e) {
  Expr a = mutate_expr(e->operands[0]);
  return same(a, e->operands[0]) ? e : call(e->intrinsic, a);
}

Expr ExprMutator::visit_cast(const Expr& e) {
  Expr a = mutate_expr(e->operands[0]);
  return same(a, e->operands[0]) ? e : cast(e.type(), a);
}

Expr ExprMutator::visit_select(const Expr& e) {
  Expr c = mutate_expr(e->operands[0]);
  Expr a = mutate_expr(e->operands[1]);
  Expr b = mutate_expr(e->operands[2]);
  if (same(c, e->operands[0]) && same(a, e->operands[1]) && same(b, e->operands[2])) return e;
  return select(c, a, b);
}

Expr ExprMutator::visit_broadcast(const Expr& e) {
  Expr a = mutate_expr(e->operands[0]);
  return same(a, e->operands[0]) ? e : broadcast(a, e.type().lanes);
}

Expr ExprMutator::visit_reduce(const Expr& e) {
  bool changed = false;
  std::vector<Expr> operands;
  for (const Expr& op : e->operands) {
    operands.push_back(mutate_expr(op));
    if (!same(operands.back(), op)) changed = true;
  }
  std::vector<IterVar> axes = e->reduce_axes;
  for (IterVar& axis : axes) {
    arith::Expr extent = mutate_index(axis.extent);
    if (!same(extent, axis.extent)) changed = true;
    axis.extent = extent;
  }
  if (!changed) return e;
  ExprNode n = *e;
  n.operands = std::move(operands);
  n.reduce_axes = std::move(axes);
  return Expr(std::make_shared<const ExprNode>(std::move(n)));
}

Expr ExprMutator::visit_let_expr(const Expr& e) {
  Expr value = mutate_expr(e->operands[0]);
  Expr body = mutate_expr(e->operands[1]);
  if (same(value, e->operands[0]) && same(body, e->operands[1])) return e;
  return let_index(arith::Var(e->let_var), value, body);
}

Stmt StmtMutator::mutate_stmt(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
    case StmtKind::kFor:
      return visit_for(s);
    case StmtKind::kSeq:
      return visit_seq(s);
    case StmtKind::kIf:
      return visit_if(s);
    case StmtKind::kStore:
      return visit_store(s);
    case StmtKind::kAllocate:
      return visit_allocate(s);
    case StmtKind::kLetIndex:
      return visit_let_stmt(s);
    case StmtKind::kParallelCall:
      return visit_parallel_call(s);
    case StmtKind::kNop:
      return visit_nop(s);
  }
  DYNVM_INTERNAL_CHECK(false, "unknown statement kind");
  return s;
}

Stmt StmtMutator::visit_for(const Stmt& s) {
  arith::Expr min = mutate_index(s->min);
  arith::Expr extent = mutate_index(s->extent);
  Stmt body = mutate_stmt(s->body);
  if (same(min, s->min) && same(extent, s->extent) && same(body, s->body)) return s;
  return make_for(arith::Var(s->loop_var), min, extent, s->for_kind, body, s->thread_axis);
}

Stmt StmtMutator::visit_seq(const Stmt& s) {
  bool changed = false;
  std::vector<Stmt> seq;
  seq.reserve(s->seq.size());
  for (const Stmt& child : s->seq) {
    seq.push_back(mutate_stmt(child));
    if (!same(seq.back(), child)) changed = true;
  }
  return changed ? make_seq(std::move(seq)) : s;
}

Stmt StmtMutator::visit_if(const Stmt& s) {
  arith::Expr cond = mutate_index(s->condition);
  Stmt then_case = mutate_stmt(s->then_case);
  Stmt else_case = mutate_stmt(s->else_case);
  if (same(cond, s->condition) && same(then_case, s->then_case) && same(else_case, s->else_case)) {
    return s;
  }
  return make_if(cond, then_case, else_case);
}

Stmt StmtMutator::visit_store(const Stmt& s) {
  bool changed = false;
  std::vector<arith::Expr> indices = mutate_indices(s->indices, changed);
  arith::Expr stride = mutate_if_defined(*this, s->stride);
  arith::Expr active = mutate_if_defined(*this, s->active);
  Expr value = mutate_expr(s->value);
  if (!changed && same(stride, s->stride) && same(active, s->active) && same(value, s->value)) {
    return s;
  }
  if (stride.defined()) return make_vector_store(s->buffer, indices[0], stride, value, active);
  return make_store(s->buffer, std::move(indices), value);
}

Stmt StmtMutator::visit_allocate(const Stmt& s) {
  Stmt body = mutate_stmt(s->body);
  return same(body, s->body) ? s : make_allocate(s->buffer, body);
}

Stmt StmtMutator::visit_let_stmt(const Stmt& s) {
  Expr value = mutate_expr(s->value);
  Stmt body = mutate_stmt(s->body);
  if (same(value, s->value) && same(body, s->body)) return s;
  return make_let_index(arith::Var(s->let_var), value, body);
}

Stmt StmtMutator::visit_parallel_call(const Stmt& s) {
  arith::Expr extent = mutate_index(s->extent);
  return same(extent, s->extent) ? s : make_parallel_call(s->region, extent);
}

namespace {

class Substituter : public StmtMutator {
 public:
  explicit Substituter(const VarMap& map) : map_(map) {}
  arith::Expr mutate_index(const arith::Expr& e) override { return tir::substitute(e, map_); }

 private:
  const VarMap& map_;
};

// Collects free variables and buffers; `bound_` counts binders in scope (a variable may be
// bound again by a sibling statement, never inside its own scope).
class FreeVarCollector {
 public:
  FreeVars result;

  void stmt(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::kFor:
        index(s->min);
        index(s->extent);
        scoped(s->loop_var, [&] { stmt(s->body); });
        break;
      case StmtKind::kSeq:
        for (const Stmt& c : s->seq) stmt(c);
        break;
      case StmtKind::kIf:
        index(s->condition);
        stmt(s->then_case);
        stmt(s->else_case);
        break;
      case StmtKind::kStore:
        use_buffer(s->buffer);
        for (const auto& i : s->indices) index(i);
        index(s->stride);
        index(s->active);
        expr(s->value);
        break;
      case StmtKind::kAllocate:
        for (const auto& d : s->buffer->shape()) index(d);
        ++allocated_[s->buffer.get()];
        stmt(s->body);
        --allocated_[s->buffer.get()];
        break;
      case StmtKind::kLetIndex:
        expr(s->value);
        scoped(s->let_var, [&] { stmt(s->body); });
        break;
      case StmtKind::kParallelCall:
        index(s->extent);
        break;
      case StmtKind::kNop:
        break;
    }
  }

  void expr(const Expr& e) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case ExprKind::kLetIndex:
        expr(e->operands[0]);
        scoped(e->let_var, [&] { expr(e->operands[1]); });
        return;
      case ExprKind::kBufferLoad:
        use_buffer(e->buffer);
        break;
      case ExprKind::kReduce:
        for (const IterVar& axis : e->reduce_axes) index(axis.extent);
        for (const IterVar& axis : e->reduce_axes) ++bound_[axis.var.id()];
        for (const Expr& op : e->operands) expr(op);
        for (const IterVar& axis : e->reduce_axes) --bound_[axis.var.id()];
        return;
      default:
        break;
    }
    index(e->index);
    index(e->stride);
    index(e->active);
    for (const auto& i : e->indices) index(i);
    for (const Expr& op : e->operands) expr(op);
  }

 private:
  template <typename F>
  void scoped(const arith::Expr& var, F&& body) {
    ++bound_[var->var_id];
    body();
    --bound_[var->var_id];
  }

  void index(const arith::Expr& e) {
    for_each_var(e, [&](const arith::Expr& v) {
      auto it = bound_.find(v->var_id);
      if (it != bound_.end() && it->second > 0) return;
      if (seen_vars_.insert(v->var_id).second) result.vars.push_back(v);
    });
  }

  void use_buffer(const BufferRef& b) {
    auto it = allocated_.find(b.get());
    if (it != allocated_.end() && it->second > 0) return;
    if (seen_buffers_.insert(b.get()).second) result.buffers.push_back(b);
  }

  std::unordered_map<arith::VarId, int> bound_;
  std::unordered_map<const Buffer*, int> allocated_;
  std::unordered_set<arith::VarId> seen_vars_;
  std::unordered_set<const Buffer*> seen_buffers_;
};

}  // namespace

Stmt substitute(const Stmt& s, const VarMap& map) {
  if (map.empty()) return s;
  Substituter sub(map);
  return sub.mutate_stmt(s);
}

Expr substitute(const Expr& e, const VarMap& map) {
  if (map.empty()) return e;
  Substituter sub(map);
  return sub.mutate_expr(e);
}

FreeVars free_vars(const Stmt& s) {
  FreeVarCollector c;
  c.stmt(s);
  return std::move(c.result);
}

void for_each_stmt(const Stmt& s, const std::function<void(const Stmt&)>& f) {
  if (!s.defined()) return;
  f(s);
  for_each_stmt(s->body, f);
  for_each_stmt(s->then_case, f);
  for_each_stmt(s->else_case, f);
  for (const Stmt& c : s->seq) for_each_stmt(c, f);
}

void for_each_expr(const Stmt& s, const std::function<void(const Expr&)>& f) {
  for_each_stmt(s, [&](const Stmt& st) {
    if (st->value.defined()) visit(st->value, f);
  });
}

}  // namespace dynvm::tir
