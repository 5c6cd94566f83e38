// RNN's step (see recurrent_cell.h): h' = tanh(x_t Wt + h Rt (+ Wb + Rb, added to x Wt
// before the loop)); without sequence_lens, every step in one dynvm.RnnSequence kernel.
#include "compiler/passes/recurrent_cell.h"

namespace dynvm::compiler::recurrent {

Expr expand_rnn(const Expr& e, const std::string& where) {
  Cell cell{"RNN", 1, 1, {"Tanh"}, nullptr};
  cell.prepare = [](Lets& outer, const DirectionWeights& w) {
    PreparedCell prepared;
    if (w.wb.defined()) prepared.xw_bias = outer.bind(w.name("bias"), call("Add", {w.wb, w.rb}));
    prepared.step = [w](Lets& step, const Expr& xw, const std::vector<Expr>& s) {
      Expr hr = step.bind(w.name("hr"), call("MatMul", {s[0], w.rt}));
      Expr pre = step.bind(w.name("pre"), call("Add", {hr, xw}));
      return std::vector<Expr>{step.bind(w.name("h_next"), call("Tanh", {pre}))};
    };
    prepared.sequence = [](Lets&, const Expr& xw, const Expr& rt, const std::vector<Expr>& initial,
                           const std::vector<DirectionWeights>&, const std::string& direction) {
      return call("dynvm.RnnSequence", {xw, rt, initial[0]}, {{"direction", direction}});
    };
    return prepared;
  };
  return expand_cell(e, where, cell);
}

}  // namespace dynvm::compiler::recurrent
