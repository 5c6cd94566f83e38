// Walking and rewriting TIR. Passes derive from StmtMutator and override the visit_* of the
// node kinds they care about; the defaults rebuild a node (through the checking builders)
// only when one of its children changed, so an untouched subtree stays shared. Every arith
// expression embedded in the IR (indices, extents, conditions, strides) goes through
// mutate_index, so a pass that rewrites indices overrides just that.
#pragma once

#include <functional>
#include <vector>

#include "kernels/tir/arith_util.h"
#include "kernels/tir/expr.h"
#include "kernels/tir/stmt.h"

namespace dynvm::tir {

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  Expr mutate_expr(const Expr& e);
  // Every arith expression inside the IR passes through here. Identity by default.
  virtual arith::Expr mutate_index(const arith::Expr& e) { return e; }

 protected:
  virtual Expr visit_const(const Expr& e) { return e; }
  virtual Expr visit_index_value(const Expr& e);
  virtual Expr visit_tensor_read(const Expr& e);
  virtual Expr visit_buffer_load(const Expr& e);
  virtual Expr visit_binary(const Expr& e);
  virtual Expr visit_compare(const Expr& e);
  virtual Expr visit_logical(const Expr& e);
  virtual Expr visit_call(const Expr& e);
  virtual Expr visit_cast(const Expr& e);
  virtual Expr visit_select(const Expr& e);
  virtual Expr visit_broadcast(const Expr& e);
  virtual Expr visit_reduce(const Expr& e);
  virtual Expr visit_let_expr(const Expr& e);

  // mutate_index over a list; `changed` is set when any element changed.
  std::vector<arith::Expr> mutate_indices(const std::vector<arith::Expr>& v, bool& changed);
};

class StmtMutator : public ExprMutator {
 public:
  Stmt mutate_stmt(const Stmt& s);

 protected:
  virtual Stmt visit_for(const Stmt& s);
  virtual Stmt visit_seq(const Stmt& s);
  virtual Stmt visit_if(const Stmt& s);
  virtual Stmt visit_store(const Stmt& s);
  virtual Stmt visit_allocate(const Stmt& s);
  virtual Stmt visit_let_stmt(const Stmt& s);
  virtual Stmt visit_parallel_call(const Stmt& s);
  virtual Stmt visit_nop(const Stmt& s) { return s; }
};

// s / e with the variables in `map` replaced in every embedded arith expression. Binders
// (loop and let variables) are not renamed; variables are unique by id, so nothing is
// captured by mistake.
Stmt substitute(const Stmt& s, const VarMap& map);
Expr substitute(const Expr& e, const VarMap& map);

// What a statement needs from its surroundings: the arith variables it uses without binding
// them (including those in the shapes of buffers it allocates), and the buffers it loads or
// stores without allocating them. Both in first-use order.
struct FreeVars {
  std::vector<arith::Expr> vars;  // kVar expressions
  std::vector<BufferRef> buffers;
};
FreeVars free_vars(const Stmt& s);

// Calls f on every statement of s, parents before children.
void for_each_stmt(const Stmt& s, const std::function<void(const Stmt&)>& f);
// Calls f on every typed expression node inside s (children first, as visit()).
void for_each_expr(const Stmt& s, const std::function<void(const Expr&)>& f);

}  // namespace dynvm::tir
