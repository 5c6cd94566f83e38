// Walking and rewriting the graph IR, the one way every pass does it (as kernels/tir/functor.h
// does for TIR). A pass derives from one of three bases and overrides only the node kinds it
// cares about:
//
//   ExprFunctor<R(const Expr&, Args...)>  dispatch on the kind to visit_var ... visit_loop;
//                                         a kind the pass does not handle is an internal
//                                         error. For analyses that compute a value per
//                                         expression (placement, lowering).
//   ExprVisitor                           a read-only walk of every expression, nested
//                                         bodies (If branches, Loop bodies) included.
//   ExprMutator                           a rewrite: the defaults rebuild a node only when a
//                                         child changed (through the checking builders), so
//                                         an untouched subtree stays shared and "unchanged"
//                                         is a pointer comparison.
//
// Let chains (function bodies are chains of thousands of lets) are walked iteratively by
// visit_let in every base: each binding in order (visit_binding / rewrite_binding), then the
// body. Depth of recursion is the nesting of If branches and Loop bodies, never a chain's
// length. A Loop's body is a Function, walked through visit_function / mutate_function.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "compiler/ir/expr.h"
#include "compiler/ir/module.h"
#include "vm/error.h"

namespace dynvm::compiler {

// One `let var = value` of a chain.
struct Binding {
  Expr var;
  Expr value;
};

// A let chain flattened: its bindings in order and the expression that ends it (an
// expression that is not a let: no bindings, `body` is the expression).
struct LetChain {
  std::vector<Binding> bindings;
  Expr body;
};
LetChain flatten_lets(const Expr& e);
// `body` inside `bindings` (the first binding outermost): the inverse of flatten_lets.
Expr make_let_chain(const std::vector<Binding>& bindings, Expr body);

template <typename FType>
class ExprFunctor;

template <typename R, typename... Args>
class ExprFunctor<R(const Expr&, Args...)> {
 public:
  virtual ~ExprFunctor() = default;

  virtual R visit(const Expr& e, Args... args) {
    switch (e.kind()) {
      case ExprKind::kVar:
        return visit_var(e, args...);
      case ExprKind::kConstant:
        return visit_constant(e, args...);
      case ExprKind::kCall:
        return visit_call(e, args...);
      case ExprKind::kTuple:
        return visit_tuple(e, args...);
      case ExprKind::kGetItem:
        return visit_get_item(e, args...);
      case ExprKind::kLet:
        return visit_let(e, args...);
      case ExprKind::kIf:
        return visit_if(e, args...);
      case ExprKind::kLoop:
        return visit_loop(e, args...);
      case ExprKind::kCallFunction:
        return visit_call_function(e, args...);
    }
    internal_error(__FILE__, __LINE__, "unknown expression kind");
  }

 protected:
  virtual R visit_var(const Expr& e, Args... args) { return visit_default(e, args...); }
  virtual R visit_constant(const Expr& e, Args... args) { return visit_default(e, args...); }
  virtual R visit_call(const Expr& e, Args... args) { return visit_default(e, args...); }
  virtual R visit_tuple(const Expr& e, Args... args) { return visit_default(e, args...); }
  virtual R visit_get_item(const Expr& e, Args... args) { return visit_default(e, args...); }
  virtual R visit_if(const Expr& e, Args... args) { return visit_default(e, args...); }
  virtual R visit_loop(const Expr& e, Args... args) { return visit_default(e, args...); }
  virtual R visit_call_function(const Expr& e, Args... args) { return visit_default(e, args...); }

  // A let chain, iteratively: visit_binding for each binding in order, then the body's
  // value (with the chain's own arguments) is the chain's.
  virtual R visit_let(const Expr& e, Args... args) {
    Expr cur = e;
    for (; cur.kind() == ExprKind::kLet; cur = cur->operands[2]) {
      visit_binding(cur->operands[0], cur->operands[1], args...);
    }
    return visit(cur, args...);
  }
  // One binding of a chain; by default its value is visited and the result dropped.
  virtual void visit_binding(const Expr& var, const Expr& value, Args... args) {
    visit(value, args...);
  }

  virtual R visit_default(const Expr& e, Args... args) {
    internal_error(__FILE__, __LINE__,
                   std::string("this walk does not handle a ") + kind_name(e.kind()));
  }
};

// Visits every expression once per occurrence: operands in order, Loop bodies through
// visit_function. Undefined operands (a Loop without a trip count or condition) are skipped.
class ExprVisitor : public ExprFunctor<void(const Expr&)> {
 public:
  void visit(const Expr& e) override {
    if (e.defined()) ExprFunctor::visit(e);
  }
  // A function's body (a Loop body, or a module function when a pass walks one).
  virtual void visit_function(const Function& f) { visit(f.body); }
  void visit_module(const Module& m) {
    for (const auto& f : m.functions) visit_function(*f);
  }

 protected:
  void visit_var(const Expr& e) override {}
  void visit_constant(const Expr& e) override {}
  void visit_call(const Expr& e) override { visit_operands(e); }
  void visit_tuple(const Expr& e) override { visit_operands(e); }
  void visit_get_item(const Expr& e) override { visit_operands(e); }
  void visit_if(const Expr& e) override { visit_operands(e); }
  void visit_call_function(const Expr& e) override { visit_operands(e); }
  void visit_loop(const Expr& e) override {
    visit_operands(e);
    visit_function(*e->body);
  }
  void visit_operands(const Expr& e) {
    for (const Expr& o : e->operands) visit(o);
  }
};

// Rewrites expressions bottom-up. Each visit_* returns the node's replacement; the defaults
// return `e` itself when no operand (and no Loop body) changed.
class ExprMutator : public ExprFunctor<Expr(const Expr&)> {
 public:
  Expr mutate(const Expr& e) { return e.defined() ? visit(e) : e; }
  // A function with its body (and, in overrides, its parameters) rewritten; the same
  // pointer when nothing changed.
  virtual std::shared_ptr<const Function> mutate_function(const std::shared_ptr<const Function>& f);
  // Every function of `m` through mutate_function; `changed` (when given) says whether any
  // function is a new one.
  Module mutate_module(const Module& m, bool* changed = nullptr);

 protected:
  Expr visit_var(const Expr& e) override { return e; }
  Expr visit_constant(const Expr& e) override { return e; }
  Expr visit_call(const Expr& e) override { return mutate_operands(e); }
  Expr visit_tuple(const Expr& e) override { return mutate_operands(e); }
  Expr visit_get_item(const Expr& e) override { return mutate_operands(e); }
  Expr visit_if(const Expr& e) override { return mutate_operands(e); }
  Expr visit_call_function(const Expr& e) override { return mutate_operands(e); }
  // Trip count, condition, carried values, then the body (mutate_function).
  Expr visit_loop(const Expr& e) override;
  // The chain through rewrite_let_chain, rebuilt when anything changed.
  Expr visit_let(const Expr& e) override;

  // One binding: its replacement (by default the value rewritten, the variable kept). An
  // undefined value drops the binding.
  virtual Binding rewrite_binding(const Expr& var, const Expr& value) {
    return {var, mutate(value)};
  }
  // One binding as any number of bindings appended to `out` (pack_weights turns a Gemm
  // into its product and an Add). By default rewrite_binding's, unless it dropped it.
  virtual void rewrite_binding_into(const Expr& var, const Expr& value, std::vector<Binding>& out) {
    Binding b = rewrite_binding(var, value);
    if (b.value.defined()) out.push_back(std::move(b));
  }
  // The chain starting at `e` with every binding through rewrite_binding_into and the body
  // rewritten; `changed` says whether anything differs. For passes
  // that rebuild a chain their own way (fuse_ops groups bindings).
  struct RewrittenChain {
    LetChain chain;
    bool changed = false;
  };
  RewrittenChain rewrite_let_chain(const Expr& e);

  // `e` with its operands rewritten: `e` itself when none changed, else with_operands.
  Expr mutate_operands(const Expr& e);
  std::vector<Expr> mutate_all(const std::vector<Expr>& es, bool* changed);
};

// How many times each variable is read anywhere in `m` (by var_id): the passes that rewrite a
// chain of calls (fold_batch_norm, fuse_attention) only fold a value read by the chain alone.
std::unordered_map<uint64_t, size_t> count_var_uses(const Module& m);

// An ExprMutator for passes that fold chains of calls into one (fold_batch_norm,
// fuse_attention): it knows how often each variable is read in the module as it was
// (count_var_uses) and, through record_call, the call each let variable is bound to as
// rewritten so far.
class ChainMutator : public ExprMutator {
 protected:
  explicit ChainMutator(const Module& m) : uses_(count_var_uses(m)) {}
  // `value` (a call) is what `var` is bound to from here on.
  void record_call(const Expr& var, const Expr& value) { defined_[var->var_id] = value; }
  // The call bound to `e` when e is a let variable read exactly once (by the chain being
  // folded), else null.
  const Expr* single_use_call(const Expr& e) const;

 private:
  std::unordered_map<uint64_t, size_t> uses_;
  std::unordered_map<uint64_t, Expr> defined_;
};

}  // namespace dynvm::compiler
