// The Loop over time shared by LSTM, GRU and RNN (see recurrent_cell.h).
#include "compiler/passes/recurrent_cell.h"

#include <cctype>
#include <limits>

#include "vm/error.h"

namespace dynvm::compiler::recurrent {

Expr i64s(std::vector<int64_t> v) {
  auto n = static_cast<int64_t>(v.size());
  return make_constant(vm::Tensor::from_vector(v, {n}, vm::DType::kInt64));
}
Expr i64(int64_t v) {
  return make_constant(vm::Tensor::from_vector(std::vector<int64_t>{v}, {}, vm::DType::kInt64));
}
Expr call(const char* op, std::vector<Expr> args, Attrs attrs) {
  return make_call(op, std::move(args), std::move(attrs));
}
Expr slice(const Expr& x, int64_t begin, int64_t end, int64_t axis) {
  return call("Slice", {x, i64s({begin}), i64s({end}), i64s({axis})});
}
bool absent(const std::vector<Expr>& in, size_t i) {
  return i >= in.size() || (in[i].kind() == ExprKind::kTuple && in[i]->operands.empty());
}

Expr stack(Lets& outer, const std::string& name, const std::vector<Expr>& per_direction) {
  std::vector<Expr> rows;
  for (const Expr& v : per_direction) rows.push_back(call("Unsqueeze", {v, i64s({0})}));
  if (rows.size() == 1) return outer.bind(name, rows[0]);
  return outer.bind(name, call("Concat", rows, {{"axis", int64_t{0}}}));
}

Expr Lets::bind(const std::string& name, Expr value) {
  Expr v = make_var(name);
  lets_.emplace_back(v, std::move(value));
  return v;
}
Expr Lets::finish(Expr body) const {
  for (auto it = lets_.rbegin(); it != lets_.rend(); ++it)
    body = make_let(it->first, it->second, body);
  return body;
}

namespace {

void check_attrs(const Attrs& a, const std::vector<Expr>& in, const std::string& where,
                 const Cell& cell, const std::string& direction) {
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    user_error(where, ": unknown direction '", direction, "'");
  }
  const int64_t layout = attr_int(a, "layout", 0, where);
  if (layout != 0 && layout != 1) user_error(where, ": layout must be 0 or 1, not ", layout);
  if (a.count("clip")) user_error(where, ": clip is not supported");
  if (a.count("activations")) {
    std::vector<std::string> want = cell.activations;
    if (direction == "bidirectional") want.insert(want.end(), want.begin(), want.end());
    auto acts = std::get_if<std::vector<std::string>>(&a.at("activations"));
    if (acts == nullptr || *acts != want) {
      std::string list;
      for (const std::string& f : cell.activations) list += (list.empty() ? "" : ", ") + f;
      user_error(where, ": only the default activations (", list, ") are supported");
    }
  }
  if (in.size() < 3) user_error(where, ": ", cell.op, " needs X, W and R");
  if (!absent(in, 4) && direction != "forward") {
    user_error(where, ": sequence_lens is supported with direction forward only");
  }
}

// The recurrence as a Loop of `trips` steps, each one cell step (h, then c for LSTM, carried;
// every h the scan output); with sequence_lens (`lens` defined) a batch element keeps its
// states past its length and its Y is 0 there.
Expr loop_over_steps(const DirectionWeights& w, const Cell& cell, const PreparedCell& prepared,
                     const Expr& xw_all, const Expr& lens, const std::vector<Expr>& initial,
                     const Expr& trips, const Expr& zero) {
  auto body = std::make_shared<Function>();
  body->name = w.name("step");
  Expr t = make_var("t", tensor_type(vm::DType::kInt64, {}));
  Expr go = make_var("go", tensor_type(vm::DType::kBool, {}));
  body->params = {t, go};
  std::vector<Expr> states;
  for (int k = 0; k < cell.states; ++k) states.push_back(make_var(k == 0 ? "h" : "c"));
  body->params.insert(body->params.end(), states.begin(), states.end());
  Lets step;
  Expr xw = step.bind(w.name("xw"), call("Gather", {xw_all, t}, {{"axis", int64_t{0}}}));
  std::vector<Expr> next = prepared.step(step, xw, states);
  DYNVM_INTERNAL_CHECK(next.size() == states.size(), "expand_recurrent: step of ", cell.op);
  Expr y_t = next[0];
  if (lens.defined()) {
    Expr running = step.bind(w.name("running"), call("Less", {t, lens}));
    Expr live = step.bind(w.name("live"), call("Unsqueeze", {running, i64s({1})}));
    for (size_t k = 0; k < next.size(); ++k) {
      next[k] = step.bind(w.name(k == 0 ? "h_kept" : "c_kept"),
                          call("Where", {live, next[k], states[k]}));
    }
    y_t = step.bind(w.name("y_t"), call("Where", {live, next[0], zero}));
  }
  std::vector<Expr> results{go};
  results.insert(results.end(), next.begin(), next.end());
  results.push_back(y_t);  // the scan output: every h
  body->body = step.finish(make_tuple(results));
  return make_loop(trips, Expr(), initial, body, 1);
}

}  // namespace

Expr expand_cell(const Expr& e, const std::string& where, const Cell& cell) {
  const Attrs& a = e->attrs;
  const std::vector<Expr>& in = e->operands;
  const int64_t h = attr_int(a, "hidden_size", -1, where);
  if (h < 1) user_error(where, ": hidden_size is required");
  const std::string direction = attr_string(a, "direction", "forward", where);
  check_attrs(a, in, where, cell, direction);
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  std::string base = cell.op;
  for (char& ch : base) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));

  const bool batch_first = attr_int(a, "layout", 0, where) == 1;
  auto swap01 = [](const Expr& v, std::vector<int64_t> perm) {
    return call("Transpose", {v}, {{"perm", std::move(perm)}});
  };
  Lets outer;
  // Layout 1 runs the layout-0 loop on X [seq, batch, input].
  const Expr x = batch_first ? outer.bind(base + "_x_seq_first", swap01(in[0], {1, 0, 2})) : in[0];
  Expr shape = outer.bind(base + "_x_shape", call("Shape", {x}));
  // Zero state [batch, h] when none is given.
  // (bound to a variable: type inference records its value, [batch, h], for Expand)
  Expr zeros_shape = outer.bind(
      base + "_state_shape",
      call("Concat", {call("Gather", {shape, i64s({1})}, {{"axis", int64_t{0}}}), i64s({h})},
           {{"axis", int64_t{0}}}));
  Expr zero =
      make_constant(vm::Tensor::from_vector(std::vector<float>{0.0f}, {}, vm::DType::kFloat32));
  Expr trips = outer.bind(base + "_steps", call("Gather", {shape, i64(0)}, {{"axis", int64_t{0}}}));
  // sequence_lens (forward only): batch element b steps while t < lens[b]; past its end its
  // states stay and its Y is 0.
  Expr lens;
  if (!absent(in, 4)) {
    lens = outer.bind(base + "_lens", call("Cast", {in[4]}, {{"to", int64_t{7}}}));
  }

  std::vector<DirectionWeights> ws;
  std::vector<PreparedCell> preps;
  for (int64_t d = 0; d < dirs; ++d) {
    DirectionWeights w;
    w.hidden = h;
    w.prefix = base + (dirs == 1 ? "" : d == 0 ? "_fw" : "_bw");
    // This direction's [.., ..] of a [dirs, .., ..] input.
    auto pick = [&](const Expr& v) {
      if (dirs == 1) return call("Squeeze", {v, i64s({0})});
      return call("Gather", {v, i64(d)}, {{"axis", int64_t{0}}});
    };
    const Attrs transpose{{"perm", std::vector<int64_t>{1, 0}}};
    w.wt = outer.bind(w.name("wt"), call("Transpose", {pick(in[1])}, transpose));
    w.rt = outer.bind(w.name("rt"), call("Transpose", {pick(in[2])}, transpose));
    if (!absent(in, 3)) {
      Expr b = outer.bind(w.name("b"), pick(in[3]));
      w.wb = outer.bind(w.name("wb"), slice(b, 0, cell.gates * h, 0));
      w.rb = outer.bind(w.name("rb"), slice(b, cell.gates * h, 2 * cell.gates * h, 0));
    }
    if (cell.states == 2 && !absent(in, 7)) w.p = outer.bind(w.name("p"), pick(in[7]));
    preps.push_back(cell.prepare(outer, w));
    ws.push_back(std::move(w));
  }
  // The given initial state k ([dirs, batch, h]), undefined when absent.
  auto given_state = [&](int k) {
    const size_t i = 5 + size_t(k);
    if (absent(in, i)) return Expr();
    return batch_first ? swap01(in[i], {1, 0, 2}) : in[i];
  };

  std::vector<Expr> outs;  // Y [seq, dirs, batch, h]; Y_h (and Y_c) [dirs, batch, h]
  if (preps[0].sequence && !lens.defined()) {
    // Every direction in one kernel: x Wt of all of them as one product, their columns side by
    // side, each Rt and state stacked along a leading direction axis; the kernel writes ONNX's
    // Y itself.
    std::vector<Expr> wts, biases, rts;
    for (int64_t d = 0; d < dirs; ++d) {
      wts.push_back(ws[size_t(d)].wt);
      if (preps[size_t(d)].xw_bias.defined()) biases.push_back(preps[size_t(d)].xw_bias);
      rts.push_back(ws[size_t(d)].rt);
    }
    auto side_by_side = [&](const std::vector<Expr>& v, int64_t axis, const std::string& n) {
      if (v.size() == 1) return v[0];
      return outer.bind(base + "_" + n, call("Concat", v, {{"axis", axis}}));
    };
    Expr xw = outer.bind(base + "_xw", call("MatMul", {x, side_by_side(wts, 1, "wt")}));
    if (!biases.empty()) {
      xw = outer.bind(base + "_xw_b", call("Add", {xw, side_by_side(biases, 0, "xw_bias")}));
    }
    Expr states_shape = outer.bind(
        base + "_states_shape",
        call("Concat",
             {i64s({dirs}), call("Gather", {shape, i64s({1})}, {{"axis", int64_t{0}}}), i64s({h})},
             {{"axis", int64_t{0}}}));
    std::vector<Expr> initial;
    for (int k = 0; k < cell.states; ++k) {
      Expr given = given_state(k);
      initial.push_back(outer.bind(base + (k == 0 ? "_h0" : "_c0"),
                                   given.defined() ? given : call("Expand", {zero, states_shape})));
    }
    Expr run = outer.bind(
        base + "_sequence",
        preps[0].sequence(outer, xw, stack(outer, base + "_rt", rts), initial, ws, direction));
    Expr y = cell.states == 1 ? run : outer.bind(base + "_y", make_get_item(run, 0));
    outs.push_back(y);
    // Each direction's last h: forward at the last time, reverse at the first.
    std::vector<Expr> last;
    for (int64_t d = 0; d < dirs; ++d) {
      const bool reverse = direction == "reverse" || d == 1;
      Expr at = call("Gather", {y, i64(reverse ? 0 : -1)}, {{"axis", int64_t{0}}});
      last.push_back(outer.bind(ws[size_t(d)].name("y_h"), slice(at, d, d + 1, 0)));
    }
    outs.push_back(side_by_side(last, 0, "y_h"));
    if (cell.states == 2) outs.push_back(outer.bind(base + "_y_c", make_get_item(run, 1)));
  } else {
    std::vector<Expr> ys;                                        // per direction
    std::vector<std::vector<Expr>> finals(size_t(cell.states));  // per state, per direction
    for (int64_t d = 0; d < dirs; ++d) {
      const DirectionWeights& w = ws[size_t(d)];
      const PreparedCell& prepared = preps[size_t(d)];
      const bool reverse = direction == "reverse" || d == 1;
      std::vector<Expr> initial;
      for (int k = 0; k < cell.states; ++k) {
        Expr given = given_state(k);
        if (given.defined()) {
          given = dirs == 1 ? call("Squeeze", {given, i64s({0})})
                            : call("Gather", {given, i64(d)}, {{"axis", int64_t{0}}});
        }
        initial.push_back(
            outer.bind(w.name(k == 0 ? "h0" : "c0"),
                       given.defined() ? given : call("Expand", {zero, zeros_shape})));
      }
      // X Wt for every step at once ([seq, batch, gates * hidden]): one product with the
      // steps as rows, where each step multiplied its own [batch, input] row block.
      Expr xw_all = outer.bind(w.name("xw_all"), call("MatMul", {x, w.wt}));
      if (prepared.xw_bias.defined()) {
        xw_all = outer.bind(w.name("xw_all_b"), call("Add", {xw_all, prepared.xw_bias}));
      }
      // A reverse scan reads the steps last first: reversed once here, step t reads row t (a
      // per-step index seq - 1 - t was an integer kernel of its own every step).
      if (reverse) {
        xw_all = outer.bind(
            w.name("xw_reversed"),
            call("Slice", {xw_all, i64s({-1}), i64s({std::numeric_limits<int64_t>::min()}),
                           i64s({0}), i64s({-1})}));
      }
      Expr loop = outer.bind(
          w.name("loop"), loop_over_steps(w, cell, prepared, xw_all, lens, initial, trips, zero));
      Expr y = make_get_item(loop, cell.states);
      // Y in time order (a reverse scan collected the last step first).
      if (reverse) {
        y = outer.bind(w.name("y_time_order"),
                       call("Slice", {y, i64s({-1}), i64s({std::numeric_limits<int64_t>::min()}),
                                      i64s({0}), i64s({-1})}));
      }
      ys.push_back(outer.bind(w.name("y"), call("Unsqueeze", {y, i64s({1})})));
      for (int k = 0; k < cell.states; ++k) {
        finals[size_t(k)].push_back(
            outer.bind(w.name(k == 0 ? "y_h" : "y_c"),
                       call("Unsqueeze", {make_get_item(loop, k), i64s({0})})));
      }
    }
    auto both = [&](const std::vector<Expr>& per_direction, int64_t axis, const char* n) {
      if (dirs == 1) return per_direction[0];
      return outer.bind(base + "_" + n, call("Concat", per_direction, {{"axis", axis}}));
    };
    outs.push_back(both(ys, 1, "y"));
    for (int k = 0; k < cell.states; ++k)
      outs.push_back(both(finals[size_t(k)], 0, k ? "y_c" : "y_h"));
  }
  if (batch_first) {
    outs[0] = outer.bind(base + "_y_batch_first", swap01(outs[0], {2, 0, 1, 3}));
    for (size_t k = 1; k < outs.size(); ++k) {
      outs[k] = outer.bind(base + (k == 1 ? "_y_h_batch_first" : "_y_c_batch_first"),
                           swap01(outs[k], {1, 0, 2}));
    }
  }
  if (!a.count("num_outputs")) return outer.finish(outs[0]);  // one output: the value itself
  const int64_t n = attr_int(a, "num_outputs", 1, where);
  if (n < 1 || n > static_cast<int64_t>(outs.size()))
    user_error(where, ": ", cell.op, " has at most ", outs.size(), " outputs, the node names ", n);
  outs.resize(static_cast<size_t>(n));
  return outer.finish(make_tuple(outs));
}

}  // namespace dynvm::compiler::recurrent
