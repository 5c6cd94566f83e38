// LSTM's step (see recurrent_cell.h): gates = x_t Wt + h Rt (+ Wb + Rb, added to x Wt before
// the loop) in ONNX's order i, o, f, c; then one dynvm.LstmCell (kernels/ops/recurrent.h):
// c' = f c + i g; h' = o tanh(c'), with peepholes P (i, o, f) adding Pi c and Pf c to the i
// and f gates and Po c' to the o gate. Without sequence_lens every step runs in one
// dynvm.LstmSequence kernel instead of the Loop.
#include "compiler/passes/recurrent_cell.h"
#include "vm/error.h"

namespace dynvm::compiler::recurrent {

Expr expand_lstm(const Expr& e, const std::string& where) {
  if (attr_int(e->attrs, "input_forget", 0, where) != 0)
    user_error(where, ": input_forget is not supported");
  Cell cell{"LSTM", 4, 2, {"Sigmoid", "Tanh", "Tanh"}, nullptr};
  cell.prepare = [](Lets& outer, const DirectionWeights& w) {
    PreparedCell prepared;
    if (w.wb.defined()) prepared.xw_bias = outer.bind(w.name("bias"), call("Add", {w.wb, w.rb}));
    prepared.step = [w](Lets& step, const Expr& xw, const std::vector<Expr>& s) {
      Expr hr = step.bind(w.name("hr"), call("MatMul", {s[0], w.rt}));
      Expr gates = step.bind(w.name("gates"), call("Add", {hr, xw}));
      std::vector<Expr> in{gates, s[1]};
      if (w.p.defined()) in.push_back(w.p);
      Expr next =
          step.bind(w.name("cell"), call("dynvm.LstmCell", in, {{"num_outputs", int64_t{2}}}));
      return std::vector<Expr>{step.bind(w.name("h_next"), make_get_item(next, 0)),
                               step.bind(w.name("c_next"), make_get_item(next, 1))};
    };
    prepared.sequence = [](Lets& outer, const Expr& xw, const Expr& rt,
                           const std::vector<Expr>& initial,
                           const std::vector<DirectionWeights>& all, const std::string& direction) {
      std::vector<Expr> in{xw, rt, initial[0], initial[1]};
      if (all[0].p.defined()) {
        std::vector<Expr> p;
        for (const DirectionWeights& d : all) p.push_back(d.p);
        in.push_back(stack(outer, "lstm_p_all", p));
      }
      return call("dynvm.LstmSequence", in,
                  {{"num_outputs", int64_t{2}}, {"direction", direction}});
    };
    return prepared;
  };
  return expand_cell(e, where, cell);
}

}  // namespace dynvm::compiler::recurrent
