// LSTM and GRU cells (see recurrent.h).
#include "kernels/ops/recurrent.h"

#include <functional>
#include <tuple>
#include <utility>

#include "kernels/ops/matmul.h"
#include "kernels/ops/schedules.h"
#include "kernels/ops/steps.h"
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

// The LSTM cell's outputs (h', c') from gates g [batch, 4 hidden], c [batch, hidden] and
// peepholes p [3 hidden] (when given).
std::pair<te::TensorRef, te::TensorRef> lstm_math(const te::TensorRef& g, const te::TensorRef& cs,
                                                  const te::TensorRef& p, int64_t hidden) {
  // Gate `block`'s pre-activation at (b, j), plus peephole block `peephole` (none when
  // negative) times `state`.
  auto gate = [&](const te::Indices& i, int64_t block, int64_t peephole, const Expr& state) {
    Expr v = te::read(g, {i[0], i[1] + arith::Expr(block * hidden)});
    if (!p || peephole < 0) return v;
    return v + te::read(p, {i[1] + arith::Expr(peephole * hidden)}) * state;
  };
  te::TensorRef c_next = te::compute("c_next", cs->shape(), [&](const te::Indices& i) {
    Expr cv = te::read(cs, {i[0], i[1]});
    Expr in = sigmoid(gate(i, 0, 0, cv));
    Expr forget = sigmoid(gate(i, 2, 2, cv));
    return forget * cv + in * tanh_of(gate(i, 3, -1, cv));
  });
  te::TensorRef h_next = te::compute("h_next", cs->shape(), [&](const te::Indices& i) {
    Expr cn = te::read(c_next, {i[0], i[1]});
    return sigmoid(gate(i, 1, 1, cn)) * tanh_of(cn);
  });
  return {h_next, c_next};
}

// The GRU cell's h' (linear_before_reset 1) from xw and hr [batch, 3 hidden], h [batch, hidden].
te::TensorRef gru_math(const te::TensorRef& x, const te::TensorRef& r, const te::TensorRef& hs,
                       int64_t hidden) {
  return te::compute("h_next", hs->shape(), [&](const te::Indices& i) {
    auto at = [&](const te::TensorRef& t, int64_t block) {
      return te::read(t, {i[0], i[1] + arith::Expr(block * hidden)});
    };
    Expr z = sigmoid(at(x, 0) + at(r, 0));
    Expr reset = sigmoid(at(x, 1) + at(r, 1));
    Expr n = tanh_of(at(x, 2) + reset * at(r, 2));
    return n + z * (te::read(hs, {i[0], i[1]}) - n);
  });
}

void check_peepholes(const char* op, const std::optional<TensorType>& peepholes, vm::DType dtype,
                     int64_t hidden) {
  if (peepholes &&
      (peepholes->dtype != dtype || peepholes->shape.size() != 1 ||
       !peepholes->shape[0].is_int_imm() || peepholes->shape[0].int_value() != 3 * hidden)) {
    user_error(op, ": peepholes must be [3 * ", hidden, "] of the state's dtype");
  }
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

// A sequence kernel (lstm_sequence, ...): its arguments, and its step — the product of the
// carried h with R, `gates` storing `product` plus what the cell adds, then the cell's stages.
struct SequenceStep {
  std::string name;
  std::vector<te::TensorRef> inputs, outputs;  // the kernel's
  std::vector<te::TensorRef> step_args;        // the step's, with their roles
  std::vector<StepArgument> roles;
  // The step's products: (the stage storing each, the sum it stores), matmul's register tile.
  std::vector<std::pair<te::TensorRef, te::TensorRef>> products;
  std::vector<te::TensorRef> cell;          // the other stages: the injective template
  std::vector<te::TensorRef> step_outputs;  // what the step writes
  arith::Expr steps;
  std::vector<bool> reversed;            // per direction
  std::vector<arith::Expr> state_shape;  // the step's [batch, hidden]
};

// gates[b, n] = epilogue(sum_k h[b, k] rt[k, first + n], (b, n)) for n in [0, columns), and
// that sum's stage.
std::pair<te::TensorRef, te::TensorRef> step_product(
    const te::TensorRef& h, const te::TensorRef& rt, int64_t first, int64_t columns,
    const std::function<Expr(const Expr&, const te::Indices&)>& epilogue) {
  auto k = te::reduce_axis(rt->shape()[0], "k");
  te::TensorRef product =
      te::compute("hr", {h->shape()[0], arith::Expr(columns)}, [&](const te::Indices& i) {
        return te::sum(te::read(h, {i[0], k.var}) * te::read(rt, {k.var, i[1] + first}), {k});
      });
  te::TensorRef gates = te::compute("gates", product->shape(), [&](const te::Indices& i) {
    return epilogue(te::read(product, {i[0], i[1]}), i);
  });
  return {gates, product};
}

// All of rt's columns.
std::pair<te::TensorRef, te::TensorRef> step_product(
    const te::TensorRef& h, const te::TensorRef& rt,
    const std::function<Expr(const Expr&, const te::Indices&)>& epilogue) {
  return step_product(h, rt, 0, rt->shape()[1].int_value(), epilogue);
}

// Knobs: the product's register tile (tile_m rows x tile_n columns, tile_k unrolled), the
// cell's vector_width. At batch 1 a step is a matrix-vector product whose tile_n / 16
// accumulators are the FMA chains in flight: 16 and 32 columns ran 3.1x and 1.7x slower than 64
// (hidden 128), so they are not candidates. Serial: a step is microseconds, less than handing
// work to a thread.
OpInstance sequence_op(const SequenceStep& st) {
  OpInstance op;
  op.name = st.name;
  op.inputs = st.inputs;
  op.outputs = st.outputs;
  op.knobs = {{"tile_m", {1, 2, 4, 6}, 4}, {"tile_n", {64, 128}, 64}, {"tile_k", {1, 4}, 4}};
  for (const KnobSpec& spec : injective_knobs(st.state_shape)) {
    if (spec.name == "vector_width") op.knobs.push_back(spec);
  }
  op.step_args = st.step_args;
  op.schedule = [specs = op.knobs, st](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule(st.step_outputs);
    for (const auto& [gates, product] : st.products) {
      schedule_product_tiles(s, gates, product, st.name, knob_value(specs, knobs, "tile_m"),
                             knob_value(specs, knobs, "tile_n"),
                             knob_value(specs, knobs, "tile_k"));
    }
    for (const te::TensorRef& t : st.cell) {
      schedule_injective(s, t, knob_value(specs, knobs, "vector_width"), false);
    }
    return s;
  };
  op.over_steps = [st](const tir::PrimFunc& step) {
    std::vector<te::TensorRef> args = st.inputs;
    args.insert(args.end(), st.outputs.begin(), st.outputs.end());
    return over_steps(step, st.roles, args, st.inputs.size(), st.steps, st.reversed);
  };
  return op;
}

// The kernel's and the step's tensors of a sequence op, checked: xw [steps, batch, dirs *
// blocks * hidden] and rt [dirs, hidden, blocks * hidden] (a static hidden size), floating-point
// of one dtype; each state [dirs, batch, hidden] of that dtype too. A state's dims may be
// symbols of their own: the kernel declares them as xw's batch and rt's hidden, and checks
// them when it runs.
struct SequenceShapes {
  int64_t hidden = 0, dirs = 0, blocks = 0;
  vm::DType dtype = vm::DType::kFloat32;
  arith::Expr steps, batch;
  std::vector<bool> reversed;
  std::vector<arith::Expr> state() const { return {I(dirs), batch, I(hidden)}; }
  std::vector<arith::Expr> step_state() const { return {batch, I(hidden)}; }
  static arith::Expr I(int64_t v) { return arith::Expr(v); }
};

SequenceShapes check_sequence(const char* op, const TensorType& xw, const TensorType& rt,
                              const std::vector<const TensorType*>& states, int64_t blocks,
                              const std::string& direction) {
  SequenceShapes sh;
  sh.blocks = blocks;
  if (direction == "forward" || direction == "reverse") {
    sh.reversed = {direction == "reverse"};
  } else if (direction == "bidirectional") {
    sh.reversed = {false, true};
  } else {
    user_error(op, ": unknown direction '", direction, "'");
  }
  sh.dirs = static_cast<int64_t>(sh.reversed.size());
  if (!vm::is_floating(xw.dtype)) user_error(op, ": needs floating-point inputs");
  sh.dtype = xw.dtype;
  auto is = [](const arith::Expr& d, int64_t v) { return d.is_int_imm() && d.int_value() == v; };
  if (rt.shape.size() != 3 || !is(rt.shape[0], sh.dirs) || !rt.shape[1].is_int_imm()) {
    user_error(op, ": rt must be [", sh.dirs, ", hidden, ", blocks,
               " * hidden] with a static hidden size");
  }
  sh.hidden = rt.shape[1].int_value();
  const int64_t wide = blocks * sh.hidden;
  if (!is(rt.shape[2], wide)) {
    user_error(op, ": rt must be [", sh.dirs, ", ", sh.hidden, ", ", blocks, " * ", sh.hidden, "]");
  }
  if (xw.shape.size() != 3 || !is(xw.shape[2], sh.dirs * wide)) {
    user_error(op, ": xw must be [steps, batch, ", sh.dirs, " * ", blocks, " * ", sh.hidden, "]");
  }
  sh.steps = xw.shape[0];
  sh.batch = xw.shape[1];
  for (const TensorType* t : states) {
    if (t->shape.size() != 3 || !is(t->shape[0], sh.dirs) ||
        (t->shape[2].is_int_imm() && !is(t->shape[2], sh.hidden))) {
      user_error(op, ": states must be [", sh.dirs, ", batch, ", sh.hidden, "]");
    }
  }
  std::vector<const TensorType*> all{&rt};
  all.insert(all.end(), states.begin(), states.end());
  for (const TensorType* t : all) {
    if (t->dtype != xw.dtype) user_error(op, ": inputs must share one dtype");
  }
  return sh;
}

// A per-direction vector ([dirs, blocks * hidden]: peepholes, biases), checked.
void check_per_direction(const char* op, const char* what, const std::optional<TensorType>& t,
                         const SequenceShapes& sh, int64_t blocks) {
  if (t && (t->dtype != sh.dtype || t->shape.size() != 2 || !t->shape[0].is_int_imm() ||
            t->shape[0].int_value() != sh.dirs || !t->shape[1].is_int_imm() ||
            t->shape[1].int_value() != blocks * sh.hidden)) {
    user_error(op, ": ", what, " must be [", sh.dirs, ", ", blocks, " * ", sh.hidden,
               "] of the state's dtype");
  }
}

// The kernel's tensors as the step sees them (steps.h): `time` and `dir` the axes of the step's
// time and its direction in `whole` (-1: none), `stride` the direction's offset along the last.
ArgumentLayout layout(int time, int dir, int64_t stride = 0) {
  ArgumentLayout l;
  l.time_axis = time;
  l.direction_axis = dir;
  l.direction_stride = stride;
  return l;
}
StepArgument role(StepArgument::Role r, te::TensorRef whole, ArgumentLayout at,
                  te::TensorRef initial = nullptr, ArgumentLayout initial_at = {}) {
  StepArgument a;
  a.role = r;
  a.whole = std::move(whole);
  a.layout = at;
  a.initial = std::move(initial);
  a.initial_layout = initial_at;
  return a;
}

// The parts every sequence op shares: xw and rt with their step views, h0 and y with h's, and
// the layouts that place them (y [steps, dirs, batch, hidden], ONNX's Y).
struct SequenceCommon {
  te::TensorRef x, r, h_0, y;      // the kernel's
  te::TensorRef x_t, r_d, h_prev;  // the step's
};

SequenceCommon common_parts(SequenceStep& st, const SequenceShapes& sh) {
  using Role = StepArgument::Role;
  SequenceCommon c;
  const int64_t wide = sh.blocks * sh.hidden;
  c.x = te::placeholder("xw", {sh.steps, sh.batch, SequenceShapes::I(sh.dirs * wide)}, sh.dtype);
  c.r = te::placeholder(
      "rt", {SequenceShapes::I(sh.dirs), SequenceShapes::I(sh.hidden), SequenceShapes::I(wide)},
      sh.dtype);
  c.h_0 = te::placeholder("h0", sh.state(), sh.dtype);
  c.y = te::placeholder(
      "y", {sh.steps, SequenceShapes::I(sh.dirs), sh.batch, SequenceShapes::I(sh.hidden)},
      sh.dtype);
  c.x_t = te::placeholder("xw_t", {sh.batch, SequenceShapes::I(wide)}, sh.dtype);
  c.r_d =
      te::placeholder("rt_d", {SequenceShapes::I(sh.hidden), SequenceShapes::I(wide)}, sh.dtype);
  c.h_prev = te::placeholder("h_prev", sh.step_state(), sh.dtype);
  st.inputs = {c.x, c.r, c.h_0};
  st.outputs = {c.y};
  st.step_args = {c.x_t, c.r_d, c.h_prev};
  st.roles = {role(Role::kAtStep, c.x, layout(0, -1, wide)), role(Role::kWhole, c.r, layout(-1, 0)),
              role(Role::kCarried, c.y, layout(0, 1), c.h_0, layout(-1, 0))};
  st.steps = sh.steps;
  st.reversed = sh.reversed;
  st.state_shape = sh.step_state();
  return c;
}

// A per-direction input [dirs, n] of the kernel, read by the step as [n].
te::TensorRef per_direction(SequenceStep& st, const char* name, const TensorType& t) {
  auto whole = te::placeholder(name, t.shape, t.dtype);
  auto step = te::placeholder(std::string(name) + "_d", {t.shape[1]}, t.dtype);
  st.inputs.push_back(whole);
  st.step_args.push_back(step);
  st.roles.push_back(role(StepArgument::Role::kWhole, whole, layout(-1, 0)));
  return step;
}

}  // namespace

OpInstance lstm_cell(const TensorType& gates, const TensorType& c,
                     const std::optional<TensorType>& peepholes) {
  const int64_t hidden = check_cell("lstm_cell", c, {&gates}, 4);
  check_peepholes("lstm_cell", peepholes, c.dtype, hidden);
  te::TensorRef g = te::placeholder("gates", gates.shape, gates.dtype);
  te::TensorRef cs = te::placeholder("c", c.shape, c.dtype);
  std::vector<te::TensorRef> inputs{g, cs};
  te::TensorRef p;
  if (peepholes) {
    p = te::placeholder("p", peepholes->shape, c.dtype);
    inputs.push_back(p);
  }
  auto [h_next, c_next] = lstm_math(g, cs, p, hidden);
  return cell_op(
      str_cat("lstm_cell", peepholes ? "_peep_" : "_", tir::to_string(tir::DataType{c.dtype, 1})),
      std::move(inputs), {h_next, c_next});
}

OpInstance gru_cell(const TensorType& xw, const TensorType& hr, const TensorType& h) {
  const int64_t hidden = check_cell("gru_cell", h, {&xw, &hr}, 3);
  te::TensorRef x = te::placeholder("xw", xw.shape, xw.dtype);
  te::TensorRef r = te::placeholder("hr", hr.shape, hr.dtype);
  te::TensorRef hs = te::placeholder("h", h.shape, h.dtype);
  return cell_op("gru_cell_" + tir::to_string(tir::DataType{h.dtype, 1}), {x, r, hs},
                 {gru_math(x, r, hs, hidden)});
}

OpInstance lstm_sequence(const TensorType& xw, const TensorType& rt, const TensorType& h0,
                         const TensorType& c0, const std::optional<TensorType>& peepholes,
                         const std::string& direction) {
  const char* op = "lstm_sequence";
  const SequenceShapes sh = check_sequence(op, xw, rt, {&h0, &c0}, 4, direction);
  check_per_direction(op, "peepholes", peepholes, sh, 3);
  using Role = StepArgument::Role;
  SequenceStep st;
  const SequenceCommon c = common_parts(st, sh);
  auto c_0 = te::placeholder("c0", sh.state(), sh.dtype);
  auto c_last = te::placeholder("c_last", sh.state(), sh.dtype);
  auto c_prev = te::placeholder("c_prev", sh.step_state(), sh.dtype);
  st.inputs.push_back(c_0);
  st.outputs.push_back(c_last);
  st.step_args.push_back(c_prev);
  st.roles.push_back(role(Role::kCarried, c_last, layout(-1, 0), c_0, layout(-1, 0)));
  te::TensorRef p;
  if (peepholes) p = per_direction(st, "p", *peepholes);
  st.products = {step_product(c.h_prev, c.r_d, [&](const Expr& v, const te::Indices& i) {
    return v + te::read(c.x_t, {i[0], i[1]});
  })};
  auto [h_next, c_next] = lstm_math(st.products[0].first, c_prev, p, sh.hidden);
  st.step_args.insert(st.step_args.end(), {h_next, c_next});
  st.roles.push_back(role(Role::kAtStep, c.y, layout(0, 1)));
  st.roles.push_back(role(Role::kWhole, c_last, layout(-1, 0)));
  st.cell = {c_next, h_next};
  st.step_outputs = {h_next, c_next};
  st.name = str_cat("lstm_sequence", peepholes ? "_peep_" : "_",
                    tir::to_string(tir::DataType{sh.dtype, 1}));
  return sequence_op(st);
}

OpInstance gru_sequence(const TensorType& xw, const TensorType& rt, const TensorType& h0,
                        const std::optional<TensorType>& rb, const std::string& direction,
                        bool linear_before_reset) {
  const char* op = "gru_sequence";
  const SequenceShapes sh = check_sequence(op, xw, rt, {&h0}, 3, direction);
  check_per_direction(op, "rb", rb, sh, 3);
  if (rb && !linear_before_reset) {
    user_error(op, ": with linear_before_reset 0 every bias adds outside the products: into xw");
  }
  SequenceStep st;
  const SequenceCommon c = common_parts(st, sh);
  const int64_t h = sh.hidden;
  te::TensorRef h_next;
  if (linear_before_reset) {
    te::TensorRef bias;
    if (rb) bias = per_direction(st, "rb", *rb);
    st.products = {step_product(c.h_prev, c.r_d, [&](const Expr& v, const te::Indices& i) {
      return bias ? v + te::read(bias, {i[1]}) : v;
    })};
    h_next = gru_math(c.x_t, st.products[0].first, c.h_prev, h);
  } else {
    // The reset gate multiplies h before the n block's product: z and r from one product, r h
    // between, then the n product.
    auto zr = step_product(c.h_prev, c.r_d, 0, 2 * h, [&](const Expr& v, const te::Indices& i) {
      return v + te::read(c.x_t, {i[0], i[1]});
    });
    te::TensorRef rh = te::compute("rh", sh.step_state(), [&](const te::Indices& i) {
      return sigmoid(te::read(zr.first, {i[0], i[1] + arith::Expr(h)})) *
             te::read(c.h_prev, {i[0], i[1]});
    });
    auto n = step_product(rh, c.r_d, 2 * h, h, [&](const Expr& v, const te::Indices& i) {
      return tanh_of(v + te::read(c.x_t, {i[0], i[1] + arith::Expr(2 * h)}));
    });
    h_next = te::compute("h_next", sh.step_state(), [&](const te::Indices& i) {
      Expr nv = te::read(n.first, {i[0], i[1]});
      Expr z = sigmoid(te::read(zr.first, {i[0], i[1]}));
      return nv + z * (te::read(c.h_prev, {i[0], i[1]}) - nv);
    });
    st.products = {zr, n};
    st.cell = {rh};
  }
  st.step_args.push_back(h_next);
  st.roles.push_back(role(StepArgument::Role::kAtStep, c.y, layout(0, 1)));
  st.cell.push_back(h_next);
  st.step_outputs = {h_next};
  st.name = str_cat("gru_sequence", linear_before_reset ? "_" : "_reset_first_",
                    tir::to_string(tir::DataType{sh.dtype, 1}));
  return sequence_op(st);
}

OpInstance rnn_sequence(const TensorType& xw, const TensorType& rt, const TensorType& h0,
                        const std::string& direction) {
  const SequenceShapes sh = check_sequence("rnn_sequence", xw, rt, {&h0}, 1, direction);
  SequenceStep st;
  const SequenceCommon c = common_parts(st, sh);
  st.products = {step_product(c.h_prev, c.r_d, [&](const Expr& v, const te::Indices& i) {
    return tanh_of(v + te::read(c.x_t, {i[0], i[1]}));
  })};
  const te::TensorRef& h_next = st.products[0].first;
  st.step_args.push_back(h_next);
  st.roles.push_back(role(StepArgument::Role::kAtStep, c.y, layout(0, 1)));
  st.step_outputs = {h_next};
  st.name = "rnn_sequence_" + tir::to_string(tir::DataType{sh.dtype, 1});
  return sequence_op(st);
}

}  // namespace dynvm::ops
