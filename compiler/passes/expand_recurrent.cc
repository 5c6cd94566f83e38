// LSTM as a Loop (see expand_recurrent.h).
#include "compiler/passes/expand_recurrent.h"

#include "vm/error.h"

namespace dynvm::compiler {
namespace {

Expr i64s(std::vector<int64_t> v) {
  auto n = static_cast<int64_t>(v.size());
  return make_constant(vm::Tensor::from_vector(v, {n}, vm::DType::kInt64));
}
Expr i64(int64_t v) {
  return make_constant(vm::Tensor::from_vector(std::vector<int64_t>{v}, {}, vm::DType::kInt64));
}
Expr call(const char* op, std::vector<Expr> args, Attrs attrs = {}) {
  return make_call(op, std::move(args), std::move(attrs));
}
Expr slice(const Expr& x, int64_t begin, int64_t end, int64_t axis) {
  return call("Slice", {x, i64s({begin}), i64s({end}), i64s({axis})});
}
bool absent(const std::vector<Expr>& in, size_t i) {
  return i >= in.size() || (in[i].kind() == ExprKind::kTuple && in[i]->operands.empty());
}

// A builder of let chains: bind() names a value, finish() wraps the body.
class Lets {
 public:
  Expr bind(const std::string& name, Expr value) {
    Expr v = make_var(name);
    lets_.emplace_back(v, std::move(value));
    return v;
  }
  Expr finish(Expr body) const {
    for (auto it = lets_.rbegin(); it != lets_.rend(); ++it)
      body = make_let(it->first, it->second, body);
    return body;
  }

 private:
  std::vector<std::pair<Expr, Expr>> lets_;
};

Expr expand_lstm(const Expr& e, const std::string& where) {
  const Attrs& a = e->attrs;
  const std::vector<Expr>& in = e->operands;
  const int64_t hidden = attr_int(a, "hidden_size", -1, where);
  if (hidden < 1) user_error(where, ": hidden_size is required");
  const std::string direction = attr_string(a, "direction", "forward", where);
  if (direction != "forward" && direction != "reverse") {
    user_error(where, ": direction ", direction, " is not supported yet (forward and reverse are)");
  }
  if (attr_int(a, "layout", 0, where) != 0) user_error(where, ": layout 1 is not supported yet");
  if (attr_int(a, "input_forget", 0, where) != 0)
    user_error(where, ": input_forget is not supported");
  if (a.count("clip")) user_error(where, ": clip is not supported");
  if (a.count("activations")) {
    auto acts = std::get_if<std::vector<std::string>>(&a.at("activations"));
    if (acts == nullptr || *acts != std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}) {
      user_error(where, ": only the default activations (Sigmoid, Tanh, Tanh) are supported");
    }
  }
  if (in.size() < 3) user_error(where, ": LSTM needs X, W and R");
  if (!absent(in, 4)) user_error(where, ": sequence_lens is not supported yet");
  if (!absent(in, 7)) user_error(where, ": peepholes (P) are not supported");
  const int64_t h = hidden;
  const Expr& x = in[0];
  Lets outer;
  // Weights transposed for row-vector matmuls: x_t [b, in] @ Wt [in, 4h].
  Expr wt = outer.bind("lstm_wt", call("Transpose", {call("Squeeze", {in[1], i64s({0})})},
                                       {{"perm", std::vector<int64_t>{1, 0}}}));
  Expr rt = outer.bind("lstm_rt", call("Transpose", {call("Squeeze", {in[2], i64s({0})})},
                                       {{"perm", std::vector<int64_t>{1, 0}}}));
  Expr bias;
  if (!absent(in, 3)) {
    Expr b = outer.bind("lstm_b", call("Squeeze", {in[3], i64s({0})}));
    bias = outer.bind("lstm_bias", call("Add", {slice(b, 0, 4 * h, 0), slice(b, 4 * h, 8 * h, 0)}));
  }
  Expr shape = outer.bind("lstm_x_shape", call("Shape", {x}));
  // Zero state [batch, h] when none is given.
  // (bound to a variable: type inference records its value, [batch, h], for Expand)
  Expr zeros_shape = outer.bind(
      "lstm_state_shape",
      call("Concat", {call("Gather", {shape, i64s({1})}, {{"axis", int64_t{0}}}), i64s({h})},
           {{"axis", int64_t{0}}}));
  Expr zero =
      make_constant(vm::Tensor::from_vector(std::vector<float>{0.0f}, {}, vm::DType::kFloat32));
  auto state = [&](size_t i, const char* name) {
    if (!absent(in, i)) return outer.bind(name, call("Squeeze", {in[i], i64s({0})}));
    return outer.bind(name, call("Expand", {zero, zeros_shape}));
  };
  Expr h0 = state(5, "lstm_h0");
  Expr c0 = state(6, "lstm_c0");
  Expr trips = outer.bind("lstm_steps", call("Gather", {shape, i64(0)}, {{"axis", int64_t{0}}}));

  // One step: gates = x_t Wt + h Rt (+ bias), in ONNX's order i, o, f, c.
  auto body = std::make_shared<Function>();
  body->name = "lstm_step";
  Expr t = make_var("t", tensor_type(vm::DType::kInt64, {}));
  Expr go = make_var("go", tensor_type(vm::DType::kBool, {}));
  Expr hv = make_var("h"), cv = make_var("c");
  body->params = {t, go, hv, cv};
  Lets step;
  Expr index = t;
  if (direction == "reverse") {
    index = step.bind("lstm_index", call("Sub", {call("Sub", {trips, i64(1)}), t}));
  }
  Expr xt = step.bind("lstm_xt", call("Gather", {x, index}, {{"axis", int64_t{0}}}));
  Expr gates =
      step.bind("lstm_gates", call("Add", {call("MatMul", {xt, wt}), call("MatMul", {hv, rt})}));
  if (bias.defined()) gates = step.bind("lstm_gates_b", call("Add", {gates, bias}));
  Expr ig = step.bind("lstm_i", call("Sigmoid", {slice(gates, 0, h, 1)}));
  Expr og = step.bind("lstm_o", call("Sigmoid", {slice(gates, h, 2 * h, 1)}));
  Expr fg = step.bind("lstm_f", call("Sigmoid", {slice(gates, 2 * h, 3 * h, 1)}));
  Expr cg = step.bind("lstm_g", call("Tanh", {slice(gates, 3 * h, 4 * h, 1)}));
  Expr c2 = step.bind("lstm_c_next", call("Add", {call("Mul", {fg, cv}), call("Mul", {ig, cg})}));
  Expr h2 = step.bind("lstm_h_next", call("Mul", {og, call("Tanh", {c2})}));
  body->body = step.finish(make_tuple({go, h2, c2, h2}));

  Expr loop = outer.bind("lstm_loop", make_loop(trips, Expr(), {h0, c0}, body, 1));
  // Y [seq, 1, batch, h] in time order (a reverse scan collected last step first),
  // Y_h and Y_c [1, batch, h].
  Expr ys = make_get_item(loop, 2);
  if (direction == "reverse") {
    ys = outer.bind("lstm_y_time_order",
                    call("Slice", {ys, i64s({-1}), i64s({std::numeric_limits<int64_t>::min()}),
                                   i64s({0}), i64s({-1})}));
  }
  Expr y = outer.bind("lstm_y", call("Unsqueeze", {ys, i64s({1})}));
  Expr yh = outer.bind("lstm_y_h", call("Unsqueeze", {make_get_item(loop, 0), i64s({0})}));
  Expr yc = outer.bind("lstm_y_c", call("Unsqueeze", {make_get_item(loop, 1), i64s({0})}));
  auto n = a.find("num_outputs");
  if (n == a.end()) return outer.finish(y);  // one output: the value itself
  std::vector<Expr> outs{y, yh, yc};
  outs.resize(static_cast<size_t>(attr_int(a, "num_outputs", 1, where)));
  return outer.finish(make_tuple(outs));
}

class Expander {
 public:
  Expr visit(const Expr& e, const std::string& where) {
    if (!e.defined()) return e;
    switch (e.kind()) {
      case ExprKind::kVar:
      case ExprKind::kConstant:
        return e;
      case ExprKind::kLet: {
        const Expr& var = e->operands[0];
        return make_let(var, visit(e->operands[1], "%" + var->name), visit(e->operands[2], where));
      }
      case ExprKind::kLoop: {
        auto body = std::make_shared<Function>(*e->body);
        body->body = visit(body->body, where);
        std::vector<Expr> carried;
        for (const Expr& c : loop_carried(e)) carried.push_back(visit(c, where));
        return make_loop(visit(loop_max_trip(e), where), visit(loop_cond(e), where), carried, body,
                         e->index, e.type());
      }
      default:
        break;
    }
    std::vector<Expr> ops;
    for (const Expr& o : e->operands) ops.push_back(visit(o, where));
    switch (e.kind()) {
      case ExprKind::kCall:
        if (e->name == "LSTM")
          return expand_lstm(make_call(e->name, ops, e->attrs), where + " = LSTM");
        return make_call(e->name, ops, e->attrs, e.type());
      case ExprKind::kTuple:
        return make_tuple(ops, e.type());
      case ExprKind::kGetItem:
        return make_get_item(ops[0], e->index, e.type());
      case ExprKind::kIf:
        return make_if(ops[0], ops[1], ops[2], e.type());
      case ExprKind::kCallFunction:
        return make_call_function(e->name, ops, e.type());
      default:
        break;
    }
    internal_error(__FILE__, __LINE__, "expand_recurrent: unexpected expression kind");
  }
};

}  // namespace

Module expand_recurrent(const Module& module) {
  Module out = module;
  for (auto& f : out.functions) {
    auto g = std::make_shared<Function>(*f);
    g->body = Expander().visit(g->body, "@" + g->name);
    f = g;
  }
  return out;
}

}  // namespace dynvm::compiler
