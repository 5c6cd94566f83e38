// The graph IR verifier (see verify.h).
#include "compiler/ir/verify.h"

#include <set>
#include <unordered_set>
#include <vector>

#include "compiler/ir/functor.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

class Verifier : public ExprVisitor {
 public:
  Verifier(const Module& m, bool typed, const std::string& after)
      : module_(m), typed_(typed), after_(after) {}

  void run() {
    std::set<std::string> names;
    for (const auto& f : module_.functions) {
      if (!names.insert(f->name).second) fail("@", f->name, " is defined twice");
    }
    if (!module_.functions.empty() && module_.find_function(module_.entry) == nullptr) {
      fail("the entry @", module_.entry, " is not a function of the module");
    }
    for (const auto& f : module_.functions) {
      where_ = "@" + f->name;
      visit_function(*f);  // its own scope: module functions capture nothing
      DYNVM_INTERNAL_CHECK(in_scope_.empty(), "verifier scope left open");
    }
  }

  void visit(const Expr& e) override {
    if (!e.defined()) return;
    if (typed_ && !e.type().defined()) fail("a ", kind_name(e.kind()), " has no type");
    ExprVisitor::visit(e);
  }

  // Parameters are in scope in the body only.
  void visit_function(const Function& f) override {
    const size_t mark = bound_.size();
    for (const Expr& p : f.params) declare(p);
    if (typed_ && f.body.defined() && !f.result_type.defined()) {
      fail("@", f.name, " has no result type");
    }
    if (!f.body.defined()) fail("@", f.name, " has no body");
    visit(f.body);
    leave(mark);
  }

 protected:
  void visit_var(const Expr& e) override {
    if (!in_scope_.count(e->var_id)) {
      fail("%", e->name, " (variable ", e->var_id, ") is used where no binding of it is in scope");
    }
  }

  // A chain's bindings are in scope until its body has been visited.
  void visit_let(const Expr& e) override {
    const size_t mark = bound_.size();
    ExprVisitor::visit_let(e);
    leave(mark);
  }
  void visit_binding(const Expr& var, const Expr& value) override {
    visit(value);  // before the binding: a value cannot read its own variable
    declare(var);
  }

  void visit_if(const Expr& e) override {
    if (e->operands.size() != 3) fail("an if with ", e->operands.size(), " operands");
    ExprVisitor::visit_if(e);
    const Type& c = e->operands[0].type();
    if (typed_ && (!c.is_tensor() || c->dtype != vm::DType::kBool)) {
      fail("an if's condition is ", to_string(c), ", not a bool tensor");
    }
  }

  void visit_get_item(const Expr& e) override {
    ExprVisitor::visit_get_item(e);
    const Type& t = e->operands.at(0).type();
    if (!typed_) return;
    if (t.kind() != TypeKind::kTuple || static_cast<size_t>(e->index) >= t->fields.size()) {
      fail("field ", e->index, " of ", to_string(t));
    }
  }

  void visit_loop(const Expr& e) override {
    const Function& body = *e->body;
    const size_t carried = e->operands.size() - 2;
    if (body.params.size() != carried + 2) {
      fail("a loop carries ", carried, " values but its body takes ", body.params.size(),
           " parameters (expected ", carried + 2, ")");
    }
    ExprVisitor::visit_loop(e);
    if (!typed_) return;
    const size_t scans = static_cast<size_t>(e->index);
    const Type& returned = body.result_type;
    if (returned.kind() != TypeKind::kTuple || returned->fields.size() != 1 + carried + scans) {
      fail("a loop body returns ", to_string(returned), ", expected a tuple of ",
           1 + carried + scans, " (cond, ", carried, " carried, ", scans, " scans)");
    }
    if (e.type().kind() != TypeKind::kTuple || e.type()->fields.size() != carried + scans) {
      fail("a loop's value is ", to_string(e.type()), ", expected a tuple of ", carried + scans);
    }
  }

  void visit_call_function(const Expr& e) override {
    const Function* callee = module_.find_function(e->name);
    if (callee == nullptr) fail("a call of @", e->name, ", which the module does not define");
    if (callee->params.size() != e->operands.size()) {
      fail("@", e->name, " takes ", callee->params.size(), " arguments, called with ",
           e->operands.size());
    }
    ExprVisitor::visit_call_function(e);
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(Args&&... what) {
    internal_error(__FILE__, __LINE__,
                   str_cat("the IR after ", after_, " is invalid: ", where_, ": ",
                           std::forward<Args>(what)...));
  }

  void declare(const Expr& var) {
    if (var.kind() != ExprKind::kVar) fail("a ", kind_name(var.kind()), " is bound as a variable");
    if (!ever_bound_.insert(var->var_id).second) {
      fail("%", var->name, " (variable ", var->var_id, ") is bound twice");
    }
    if (typed_ && !var.type().defined()) fail("%", var->name, " has no type");
    in_scope_.insert(var->var_id);
    bound_.push_back(var->var_id);
  }

  void leave(size_t mark) {
    for (; bound_.size() > mark; bound_.pop_back()) in_scope_.erase(bound_.back());
  }

  const Module& module_;
  const bool typed_;
  const std::string& after_;
  std::string where_;
  std::unordered_set<uint64_t> ever_bound_;  // unique binders, module-wide
  std::unordered_set<uint64_t> in_scope_;
  std::vector<uint64_t> bound_;  // in binding order, for leaving scopes
};

}  // namespace

void verify_module(const Module& module, bool typed, const std::string& after_pass) {
  Verifier(module, typed, after_pass).run();
}

}  // namespace dynvm::compiler
