// LSTM's step (see recurrent_cell.h): gates = x_t Wt + h Rt (+ Wb + Rb) in ONNX's order
// i, o, f, c; c' = f c + i g; h' = o tanh(c').
#include "compiler/passes/recurrent_cell.h"
#include "vm/error.h"

namespace dynvm::compiler::recurrent {

Expr expand_lstm(const Expr& e, const std::string& where) {
  if (attr_int(e->attrs, "input_forget", 0, where) != 0)
    user_error(where, ": input_forget is not supported");
  if (!absent(e->operands, 7)) user_error(where, ": peepholes (P) are not supported");
  Cell cell{"LSTM", 4, 2, {"Sigmoid", "Tanh", "Tanh"}, nullptr};
  cell.prepare = [](Lets& outer, const DirectionWeights& w) -> CellStep {
    Expr bias;
    if (w.wb.defined()) bias = outer.bind(w.name("bias"), call("Add", {w.wb, w.rb}));
    return [w, bias](Lets& step, const Expr& xt, const std::vector<Expr>& s) {
      const int64_t h = w.hidden;
      Expr gates = step.bind(
          w.name("gates"), call("Add", {call("MatMul", {xt, w.wt}), call("MatMul", {s[0], w.rt})}));
      if (bias.defined()) gates = step.bind(w.name("gates_b"), call("Add", {gates, bias}));
      Expr ig = step.bind(w.name("i"), call("Sigmoid", {slice(gates, 0, h, 1)}));
      Expr og = step.bind(w.name("o"), call("Sigmoid", {slice(gates, h, 2 * h, 1)}));
      Expr fg = step.bind(w.name("f"), call("Sigmoid", {slice(gates, 2 * h, 3 * h, 1)}));
      Expr cg = step.bind(w.name("g"), call("Tanh", {slice(gates, 3 * h, 4 * h, 1)}));
      Expr c2 = step.bind(w.name("c_next"),
                          call("Add", {call("Mul", {fg, s[1]}), call("Mul", {ig, cg})}));
      Expr h2 = step.bind(w.name("h_next"), call("Mul", {og, call("Tanh", {c2})}));
      return std::vector<Expr>{h2, c2};
    };
  };
  return expand_cell(e, where, cell);
}

}  // namespace dynvm::compiler::recurrent
