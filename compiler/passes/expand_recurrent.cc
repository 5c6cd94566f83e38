// LSTM, GRU and RNN as Loops (see expand_recurrent.h): finds the nodes; the cells are in
// recurrent_{lstm,gru,rnn}.cc, the loop they share in recurrent_cell.cc.
#include "compiler/passes/expand_recurrent.h"

#include "compiler/ir/functor.h"
#include "compiler/passes/recurrent_cell.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

class Expander : public ExprMutator {
 public:
  size_t expanded = 0;

  // Errors outside any binding name the function (a Loop body keeps its loop's binding).
  void enter_function(const std::string& name) { where_ = "@" + name; }

 protected:
  // Errors name the binding a recurrent node is bound to.
  Binding rewrite_binding(const Expr& var, const Expr& value) override {
    std::string saved = where_;
    where_ = "%" + var->name;
    Expr v = mutate(value);
    where_ = saved;
    return {var, v};
  }

  Expr visit_call(const Expr& e) override {
    Expr call = ExprMutator::visit_call(e);
    const std::string& op = call->name;
    if (op != "LSTM" && op != "GRU" && op != "RNN") return call;
    ++expanded;
    // The cells build an untyped loop from the node's operands and attributes.
    Expr node = make_call(op, call->operands, call->attrs);
    const std::string where = where_ + " = " + op;
    if (op == "LSTM") return recurrent::expand_lstm(node, where);
    if (op == "GRU") return recurrent::expand_gru(node, where);
    return recurrent::expand_rnn(node, where);
  }

 private:
  std::string where_;
};

}  // namespace

PassResult expand_recurrent(const TypedModule& in) {
  Expander expander;
  TypedModule out = in;
  for (auto& f : out.module.functions) {
    expander.enter_function(f->name);
    f = expander.mutate_function(f);
  }
  return PassResult(std::move(out), expander.expanded > 0,
                    str_cat(expander.expanded, " recurrent nodes expanded into loops"));
}

}  // namespace dynvm::compiler
