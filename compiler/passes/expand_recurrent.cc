// LSTM, GRU and RNN as Loops (see expand_recurrent.h): finds the nodes; the cells are in
// recurrent_{lstm,gru,rnn}.cc, the loop they share in recurrent_cell.cc.
#include "compiler/passes/expand_recurrent.h"

#include "compiler/passes/recurrent_cell.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

class Expander {
 public:
  Expr visit(const Expr& e, const std::string& where) {
    if (!e.defined()) return e;
    switch (e.kind()) {
      case ExprKind::kVar:
      case ExprKind::kConstant:
        return e;
      case ExprKind::kLet: {
        const Expr& var = e->operands[0];
        return make_let(var, visit(e->operands[1], "%" + var->name), visit(e->operands[2], where));
      }
      case ExprKind::kLoop: {
        auto body = std::make_shared<Function>(*e->body);
        body->body = visit(body->body, where);
        std::vector<Expr> carried;
        for (const Expr& c : loop_carried(e)) carried.push_back(visit(c, where));
        return make_loop(visit(loop_max_trip(e), where), visit(loop_cond(e), where), carried, body,
                         e->index, e.type());
      }
      default:
        break;
    }
    std::vector<Expr> ops;
    for (const Expr& o : e->operands) ops.push_back(visit(o, where));
    switch (e.kind()) {
      case ExprKind::kCall:
        if (e->name == "LSTM")
          return recurrent::expand_lstm(make_call(e->name, ops, e->attrs), where + " = LSTM");
        if (e->name == "GRU")
          return recurrent::expand_gru(make_call(e->name, ops, e->attrs), where + " = GRU");
        if (e->name == "RNN")
          return recurrent::expand_rnn(make_call(e->name, ops, e->attrs), where + " = RNN");
        return with_operands(e, std::move(ops));
      default:
        return with_operands(e, std::move(ops));
    }
  }
};

}  // namespace

Module expand_recurrent(const Module& module) {
  Module out = module;
  for (auto& f : out.functions) {
    auto g = std::make_shared<Function>(*f);
    g->body = Expander().visit(g->body, "@" + g->name);
    f = g;
  }
  return out;
}

}  // namespace dynvm::compiler
