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
    return [=](Lets& step, const Expr& xw, const std::vector<Expr>& s) {
      Expr hr = step.bind(w.name("hr"), call("MatMul", {s[0], w.rt}));
      Expr gates = step.bind(w.name("gates"), call("Add", {hr, xw}));
      if (bias.defined()) gates = step.bind(w.name("gates_b"), call("Add", {gates, bias}));
      // One gate's pre-activation: its block of the gates, plus peephole * cell.
      auto gate = [&](const std::string& name, int64_t block, const Expr& p, const Expr& c) {
        Expr g = step.bind(w.name(name + "_pre"), slice(gates, block * h, (block + 1) * h, 1));
        if (!p.defined()) return g;
        Expr pc = step.bind(w.name(name + "_peep"), call("Mul", {p, c}));
        return step.bind(w.name(name + "_in"), call("Add", {g, pc}));
      };
      Expr ig = step.bind(w.name("i"), call("Sigmoid", {gate("i", 0, pi, s[1])}));
      Expr fg = step.bind(w.name("f"), call("Sigmoid", {gate("f", 2, pf, s[1])}));
      Expr cg = step.bind(w.name("g"), call("Tanh", {gate("g", 3, Expr(), s[1])}));
      Expr fc = step.bind(w.name("f_c"), call("Mul", {fg, s[1]}));
      Expr ig_g = step.bind(w.name("i_g"), call("Mul", {ig, cg}));
      Expr c2 = step.bind(w.name("c_next"), call("Add", {fc, ig_g}));
      Expr og = step.bind(w.name("o"), call("Sigmoid", {gate("o", 1, po, c2)}));
      Expr tc = step.bind(w.name("c_tanh"), call("Tanh", {c2}));
      Expr h2 = step.bind(w.name("h_next"), call("Mul", {og, tc}));
      return std::vector<Expr>{h2, c2};
    };
  };
  return expand_cell(e, where, cell);
}

}  // namespace dynvm::compiler::recurrent
