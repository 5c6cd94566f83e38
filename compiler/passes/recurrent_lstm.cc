// LSTM's step (see recurrent_cell.h): gates = x_t Wt + h Rt (+ Wb + Rb) in ONNX's order
// i, o, f, c; c' = f c + i g; h' = o tanh(c'). Peepholes P (i, o, f) add Pi c and Pf c to
// the i and f gates and Po c' to the o gate.
#include "compiler/passes/recurrent_cell.h"
#include "vm/error.h"

namespace dynvm::compiler::recurrent {

Expr expand_lstm(const Expr& e, const std::string& where) {
  if (attr_int(e->attrs, "input_forget", 0, where) != 0)
    user_error(where, ": input_forget is not supported");
  Cell cell{"LSTM", 4, 2, {"Sigmoid", "Tanh", "Tanh"}, nullptr};
  cell.prepare = [](Lets& outer, const DirectionWeights& w) -> CellStep {
    const int64_t h = w.hidden;
    Expr bias, pi, po, pf;
    if (w.wb.defined()) bias = outer.bind(w.name("bias"), call("Add", {w.wb, w.rb}));
    if (w.p.defined()) {
      pi = outer.bind(w.name("pi"), slice(w.p, 0, h, 0));
      po = outer.bind(w.name("po"), slice(w.p, h, 2 * h, 0));
      pf = outer.bind(w.name("pf"), slice(w.p, 2 * h, 3 * h, 0));
    }
    // gate + peephole * cell, or the gate alone without peepholes.
    auto peep = [](const Expr& gate, const Expr& p, const Expr& c) {
      return p.defined() ? call("Add", {gate, call("Mul", {p, c})}) : gate;
    };
    return [=](Lets& step, const Expr& xt, const std::vector<Expr>& s) {
      Expr gates = step.bind(
          w.name("gates"), call("Add", {call("MatMul", {xt, w.wt}), call("MatMul", {s[0], w.rt})}));
      if (bias.defined()) gates = step.bind(w.name("gates_b"), call("Add", {gates, bias}));
      Expr ig = step.bind(w.name("i"), call("Sigmoid", {peep(slice(gates, 0, h, 1), pi, s[1])}));
      Expr fg =
          step.bind(w.name("f"), call("Sigmoid", {peep(slice(gates, 2 * h, 3 * h, 1), pf, s[1])}));
      Expr cg = step.bind(w.name("g"), call("Tanh", {slice(gates, 3 * h, 4 * h, 1)}));
      Expr c2 = step.bind(w.name("c_next"),
                          call("Add", {call("Mul", {fg, s[1]}), call("Mul", {ig, cg})}));
      Expr og = step.bind(w.name("o"), call("Sigmoid", {peep(slice(gates, h, 2 * h, 1), po, c2)}));
      Expr h2 = step.bind(w.name("h_next"), call("Mul", {og, call("Tanh", {c2})}));
      return std::vector<Expr>{h2, c2};
    };
  };
  return expand_cell(e, where, cell);
}

}  // namespace dynvm::compiler::recurrent
