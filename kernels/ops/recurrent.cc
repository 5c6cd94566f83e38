// LSTM and GRU cells (see recurrent.h).
#include "kernels/ops/recurrent.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using tir::Expr;

Expr sigmoid(const Expr& x) { return tir::call(tir::Intrinsic::kSigmoid, x); }
Expr tanh_of(const Expr& x) { return tir::call(tir::Intrinsic::kTanh, x); }

// The state's [batch, hidden] and the static hidden size; `blocks` of hidden columns in each
// of `wide` ([batch, blocks * hidden], the same batch).
int64_t check_cell(const char* op, const TensorType& state,
                   const std::vector<const TensorType*>& wide, int64_t blocks) {
  if (!vm::is_floating(state.dtype)) user_error(op, ": needs floating-point inputs");
  if (state.shape.size() != 2 || !state.shape[1].is_int_imm()) {
    user_error(op, ": the state must be [batch, hidden] with a static hidden size");
  }
  const int64_t hidden = state.shape[1].int_value();
  for (const TensorType* t : wide) {
    if (t->dtype != state.dtype) user_error(op, ": inputs must share one dtype");
    if (t->shape.size() != 2 || !t->shape[1].is_int_imm() ||
        t->shape[1].int_value() != blocks * hidden) {
      user_error(op, ": gate inputs must be [batch, ", blocks, " * ", hidden, "]");
    }
  }
  return hidden;
}

// Both outputs with the injective template, one loop nest each.
OpInstance cell_op(std::string name, std::vector<te::TensorRef> inputs,
                   std::vector<te::TensorRef> outputs) {
  OpInstance op;
  op.name = std::move(name);
  op.inputs = std::move(inputs);
  op.outputs = outputs;
  op.knobs = injective_knobs(outputs[0]->shape());
  op.schedule = [specs = op.knobs, outputs](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule(outputs);
    for (const te::TensorRef& out : outputs) {
      schedule_injective(s, out, knob_value(specs, knobs, "vector_width"),
                         knob_value(specs, knobs, "parallel") != 0);
    }
    return s;
  };
  return op;
}

}  // namespace

OpInstance lstm_cell(const TensorType& gates, const TensorType& c,
                     const std::optional<TensorType>& peepholes) {
  const int64_t hidden = check_cell("lstm_cell", c, {&gates}, 4);
  if (peepholes &&
      (peepholes->dtype != c.dtype || peepholes->shape.size() != 1 ||
       !peepholes->shape[0].is_int_imm() || peepholes->shape[0].int_value() != 3 * hidden)) {
    user_error("lstm_cell: peepholes must be [3 * ", hidden, "] of the state's dtype");
  }
  te::TensorRef g = te::placeholder("gates", gates.shape, gates.dtype);
  te::TensorRef cs = te::placeholder("c", c.shape, c.dtype);
  std::vector<te::TensorRef> inputs{g, cs};
  std::optional<te::TensorRef> p;
  if (peepholes) {
    p = te::placeholder("p", peepholes->shape, c.dtype);
    inputs.push_back(*p);
  }
  // Gate `block`'s pre-activation at (b, j), plus peephole block `peephole` (none when
  // negative) times `state`.
  auto gate = [&](const te::Indices& i, int64_t block, int64_t peephole, const Expr& state) {
    Expr v = te::read(g, {i[0], i[1] + arith::Expr(block * hidden)});
    if (!p || peephole < 0) return v;
    return v + te::read(*p, {i[1] + arith::Expr(peephole * hidden)}) * state;
  };
  te::TensorRef c_next = te::compute("c_next", c.shape, [&](const te::Indices& i) {
    Expr cv = te::read(cs, {i[0], i[1]});
    Expr in = sigmoid(gate(i, 0, 0, cv));
    Expr forget = sigmoid(gate(i, 2, 2, cv));
    return forget * cv + in * tanh_of(gate(i, 3, -1, cv));
  });
  te::TensorRef h_next = te::compute("h_next", c.shape, [&](const te::Indices& i) {
    Expr cn = te::read(c_next, {i[0], i[1]});
    return sigmoid(gate(i, 1, 1, cn)) * tanh_of(cn);
  });
  return cell_op(
      str_cat("lstm_cell", peepholes ? "_peep_" : "_", tir::to_string(tir::DataType{c.dtype, 1})),
      std::move(inputs), {h_next, c_next});
}

OpInstance gru_cell(const TensorType& xw, const TensorType& hr, const TensorType& h) {
  const int64_t hidden = check_cell("gru_cell", h, {&xw, &hr}, 3);
  te::TensorRef x = te::placeholder("xw", xw.shape, xw.dtype);
  te::TensorRef r = te::placeholder("hr", hr.shape, hr.dtype);
  te::TensorRef hs = te::placeholder("h", h.shape, h.dtype);
  te::TensorRef h_next = te::compute("h_next", h.shape, [&](const te::Indices& i) {
    auto at = [&](const te::TensorRef& t, int64_t block) {
      return te::read(t, {i[0], i[1] + arith::Expr(block * hidden)});
    };
    Expr z = sigmoid(at(x, 0) + at(r, 0));
    Expr reset = sigmoid(at(x, 1) + at(r, 1));
    Expr n = tanh_of(at(x, 2) + reset * at(r, 2));
    return n + z * (te::read(hs, {i[0], i[1]}) - n);
  });
  return cell_op("gru_cell_" + tir::to_string(tir::DataType{h.dtype, 1}), {x, r, hs}, {h_next});
}

}  // namespace dynvm::ops
