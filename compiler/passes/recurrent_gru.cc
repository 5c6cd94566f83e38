// GRU's step (see recurrent_cell.h), gates in ONNX's order z, r, h:
//   z = sigmoid(x_t Wz + h Rz + Wbz + Rbz),  r = sigmoid(x_t Wr + h Rr + Wbr + Rbr)
//   linear_before_reset 0:  n = tanh(x_t Wh + (r h) Rh + Rbh + Wbh)
//   linear_before_reset 1:  n = tanh(x_t Wh + r (h Rh + Rbh) + Wbh)
//   h' = (1 - z) n + z h, computed as n + z (h - n).
#include "compiler/passes/recurrent_cell.h"
#include "vm/error.h"

namespace dynvm::compiler::recurrent {

Expr expand_gru(const Expr& e, const std::string& where) {
  const int64_t lbr = attr_int(e->attrs, "linear_before_reset", 0, where);
  if (lbr != 0 && lbr != 1) user_error(where, ": linear_before_reset must be 0 or 1, not ", lbr);
  Cell cell{"GRU", 3, 1, {"Sigmoid", "Tanh"}, nullptr};
  cell.prepare = [lbr](Lets& outer, const DirectionWeights& w) -> CellStep {
    const int64_t h = w.hidden;
    // R's z, r block and its h block, apart: the h block multiplies r h when lbr is 0.
    Expr rt_zr = outer.bind(w.name("rt_zr"), slice(w.rt, 0, 2 * h, 1));
    Expr rt_n = outer.bind(w.name("rt_n"), slice(w.rt, 2 * h, 3 * h, 1));
    Expr bias_zr, wb_n, rb_n, bias_n;
    if (w.wb.defined()) {
      bias_zr = outer.bind(w.name("bias_zr"),
                           call("Add", {slice(w.wb, 0, 2 * h, 0), slice(w.rb, 0, 2 * h, 0)}));
      wb_n = outer.bind(w.name("wb_n"), slice(w.wb, 2 * h, 3 * h, 0));
      rb_n = outer.bind(w.name("rb_n"), slice(w.rb, 2 * h, 3 * h, 0));
      if (lbr == 0) bias_n = outer.bind(w.name("bias_n"), call("Add", {wb_n, rb_n}));
    }
    return [=](Lets& step, const Expr& xw, const std::vector<Expr>& s) {
      const Expr& hv = s[0];
      Expr xzr = step.bind(w.name("xzr"), slice(xw, 0, 2 * h, 1));
      Expr hzr = step.bind(w.name("hzr"), call("MatMul", {hv, rt_zr}));
      Expr zr = step.bind(w.name("zr"), call("Add", {hzr, xzr}));
      if (bias_zr.defined()) zr = step.bind(w.name("zr_b"), call("Add", {zr, bias_zr}));
      Expr z = step.bind(w.name("z"), call("Sigmoid", {step.bind(w.name("z_pre"), slice(zr, 0, h, 1))}));
      Expr r =
          step.bind(w.name("r"), call("Sigmoid", {step.bind(w.name("r_pre"), slice(zr, h, 2 * h, 1))}));
      Expr xn = step.bind(w.name("xn"), slice(xw, 2 * h, 3 * h, 1));
      Expr pre;
      if (lbr == 0) {
        Expr rh = step.bind(w.name("rh"), call("Mul", {r, hv}));
        Expr hn = step.bind(w.name("hn"), call("MatMul", {rh, rt_n}));
        pre = step.bind(w.name("n_pre"), call("Add", {hn, xn}));
        if (bias_n.defined()) pre = step.bind(w.name("n_pre_b"), call("Add", {pre, bias_n}));
      } else {
        Expr hr = step.bind(w.name("hn"), call("MatMul", {hv, rt_n}));
        if (rb_n.defined()) hr = step.bind(w.name("hn_b"), call("Add", {hr, rb_n}));
        Expr rhr = step.bind(w.name("r_hn"), call("Mul", {r, hr}));
        pre = step.bind(w.name("n_pre"), call("Add", {rhr, xn}));
        if (wb_n.defined()) pre = step.bind(w.name("n_pre_b"), call("Add", {pre, wb_n}));
      }
      Expr n = step.bind(w.name("n"), call("Tanh", {pre}));
      Expr diff = step.bind(w.name("h_minus_n"), call("Sub", {hv, n}));
      Expr moved = step.bind(w.name("z_diff"), call("Mul", {z, diff}));
      Expr h2 = step.bind(w.name("h_next"), call("Add", {n, moved}));
      return std::vector<Expr>{h2};
    };
  };
  return expand_cell(e, where, cell);
}

}  // namespace dynvm::compiler::recurrent
