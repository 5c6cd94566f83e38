// GRU's step (see recurrent_cell.h), gates in ONNX's order z, r, h:
//   z = sigmoid(x_t Wz + h Rz + Wbz + Rbz),  r = sigmoid(x_t Wr + h Rr + Wbr + Rbr)
//   linear_before_reset 0:  n = tanh(x_t Wh + (r h) Rh + Rbh + Wbh)
//   linear_before_reset 1:  n = tanh(x_t Wh + r (h Rh + Rbh) + Wbh)
//   h' = (1 - z) n + z h, computed as n + z (h - n).
// With linear_before_reset 1 (PyTorch's and Keras's GRU) a step is one product h R + Rb and
// one dynvm.GruCell (kernels/ops/recurrent.h), Wb added to x W before the loop; with 0, the
// reset gate multiplies h before its product, so the step is two products and the gate math
// between them. Without sequence_lens, every step of either form is one dynvm.GruSequence
// kernel instead of the Loop.
#include "compiler/passes/recurrent_cell.h"
#include "vm/error.h"

namespace dynvm::compiler::recurrent {
namespace {

PreparedCell prepare_linear_before_reset(Lets& outer, const DirectionWeights& w) {
  PreparedCell prepared;
  prepared.xw_bias = w.wb;
  prepared.step = [w](Lets& step, const Expr& xw, const std::vector<Expr>& s) {
    Expr hr = step.bind(w.name("hr"), call("MatMul", {s[0], w.rt}));
    if (w.rb.defined()) hr = step.bind(w.name("hr_b"), call("Add", {hr, w.rb}));
    return std::vector<Expr>{step.bind(w.name("h_next"), call("dynvm.GruCell", {xw, hr, s[0]}))};
  };
  prepared.sequence = [](Lets& outer, const Expr& xw, const Expr& rt,
                         const std::vector<Expr>& initial, const std::vector<DirectionWeights>& all,
                         const std::string& direction) {
    std::vector<Expr> in{xw, rt, initial[0]};
    if (all[0].rb.defined()) {
      std::vector<Expr> rb;
      for (const DirectionWeights& d : all) rb.push_back(d.rb);
      in.push_back(stack(outer, "gru_rb_all", rb));
    }
    return call("dynvm.GruSequence", in, {{"direction", direction}});
  };
  return prepared;
}

PreparedCell prepare_reset_first(Lets& outer, const DirectionWeights& w) {
  const int64_t h = w.hidden;
  // R's z, r block and its h block, apart: the h block multiplies r h.
  Expr rt_zr = outer.bind(w.name("rt_zr"), slice(w.rt, 0, 2 * h, 1));
  Expr rt_n = outer.bind(w.name("rt_n"), slice(w.rt, 2 * h, 3 * h, 1));
  PreparedCell prepared;
  // Every bias adds to its gate's pre-activation outside the products: all of them go into
  // x W before the loop.
  if (w.wb.defined()) prepared.xw_bias = outer.bind(w.name("bias"), call("Add", {w.wb, w.rb}));
  prepared.step = [=](Lets& step, const Expr& xw, const std::vector<Expr>& s) {
    const Expr& hv = s[0];
    Expr xzr = step.bind(w.name("xzr"), slice(xw, 0, 2 * h, 1));
    Expr hzr = step.bind(w.name("hzr"), call("MatMul", {hv, rt_zr}));
    Expr zr = step.bind(w.name("zr"), call("Add", {hzr, xzr}));
    Expr z =
        step.bind(w.name("z"), call("Sigmoid", {step.bind(w.name("z_pre"), slice(zr, 0, h, 1))}));
    Expr r = step.bind(w.name("r"),
                       call("Sigmoid", {step.bind(w.name("r_pre"), slice(zr, h, 2 * h, 1))}));
    Expr xn = step.bind(w.name("xn"), slice(xw, 2 * h, 3 * h, 1));
    Expr rh = step.bind(w.name("rh"), call("Mul", {r, hv}));
    Expr hn = step.bind(w.name("hn"), call("MatMul", {rh, rt_n}));
    Expr pre = step.bind(w.name("n_pre"), call("Add", {hn, xn}));
    Expr n = step.bind(w.name("n"), call("Tanh", {pre}));
    Expr diff = step.bind(w.name("h_minus_n"), call("Sub", {hv, n}));
    Expr moved = step.bind(w.name("z_diff"), call("Mul", {z, diff}));
    return std::vector<Expr>{step.bind(w.name("h_next"), call("Add", {n, moved}))};
  };
  prepared.sequence = [](Lets&, const Expr& xw, const Expr& rt, const std::vector<Expr>& initial,
                         const std::vector<DirectionWeights>&, const std::string& direction) {
    return call("dynvm.GruSequence", {xw, rt, initial[0]},
                {{"direction", direction}, {"linear_before_reset", int64_t{0}}});
  };
  return prepared;
}

}  // namespace

Expr expand_gru(const Expr& e, const std::string& where) {
  const int64_t lbr = attr_int(e->attrs, "linear_before_reset", 0, where);
  if (lbr != 0 && lbr != 1) user_error(where, ": linear_before_reset must be 0 or 1, not ", lbr);
  Cell cell{"GRU", 3, 1, {"Sigmoid", "Tanh"}, nullptr};
  cell.prepare = lbr == 1 ? prepare_linear_before_reset : prepare_reset_first;
  return expand_cell(e, where, cell);
}

}  // namespace dynvm::compiler::recurrent
