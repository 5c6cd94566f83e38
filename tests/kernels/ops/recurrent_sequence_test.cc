// lstm_sequence, gru_sequence (both linear_before_reset forms) and rnn_sequence (a whole
// recurrence in one kernel) on symbolic steps and batch, forward, reverse and bidirectional, at
// hidden sizes under, at and past the product's tiles, against the ONNX formulas run step by step
// in double precision; also no steps at all, a static shape, other knobs, a state whose batch
// disagrees with xw's, and the shapes that are refused.
#include <cmath>

#include "kernels/ops/recurrent.h"
#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// The directions of a `direction` attribute: reversed or not, in order.
std::vector<bool> reversed(const std::string& direction) {
  if (direction == "bidirectional") return {false, true};
  return {direction == "reverse"};
}

// A recurrence in double precision, ONNX's layouts: xw [steps, batch, dirs * gates * hidden]
// (the directions' columns side by side), rt [dirs, hidden, gates * hidden], h0 [dirs, batch,
// hidden]. `cell` maps (direction, b, j, x_t W and h R of row b [gates * hidden], h) to h' and
// updates any state of its own. Returns y [steps, dirs, batch, hidden] row-major.
struct Recurrence {
  int64_t steps, batch, hidden, gates;
  std::string direction;
  const vm::Tensor& xw;
  const vm::Tensor& rt;
  template <typename Cell>
  std::vector<double> run(const vm::Tensor& h0, Cell cell) const {
    const std::vector<bool> dirs = reversed(direction);
    const auto nd = static_cast<int64_t>(dirs.size());
    const int64_t wide = gates * hidden;
    std::vector<double> y(size_t(steps * nd * batch * hidden));
    for (int64_t d = 0; d < nd; ++d) {
      std::vector<double> h(size_t(batch * hidden));
      for (int64_t i = 0; i < batch * hidden; ++i) h[size_t(i)] = at(h0, d * batch * hidden + i);
      for (int64_t k = 0; k < steps; ++k) {
        const int64_t t = dirs[size_t(d)] ? steps - 1 - k : k;
        std::vector<double> next(h.size());
        for (int64_t b = 0; b < batch; ++b) {
          std::vector<double> hr(static_cast<size_t>(wide), 0.0);
          std::vector<double> x(static_cast<size_t>(wide));
          for (int64_t n = 0; n < wide; ++n) {
            for (int64_t r = 0; r < hidden; ++r) {
              hr[size_t(n)] += h[size_t(b * hidden + r)] * at(rt, (d * hidden + r) * wide + n);
            }
            x[size_t(n)] = at(xw, (t * batch + b) * nd * wide + d * wide + n);
          }
          for (int64_t j = 0; j < hidden; ++j) {
            next[size_t(b * hidden + j)] = cell(d, b, j, x, hr, h[size_t(b * hidden + j)]);
          }
        }
        h = next;
        for (int64_t i = 0; i < batch * hidden; ++i) {
          y[size_t((t * nd + d) * batch * hidden + i)] = h[size_t(i)];
        }
      }
    }
    return y;
  }
};

struct Case {
  int64_t steps, batch;
};
const std::vector<Case> kCases{{1, 1}, {7, 1}, {5, 3}, {0, 2}};

std::string what(const std::string& name, const Case& c) {
  return name + " steps " + std::to_string(c.steps) + " batch " + std::to_string(c.batch);
}

TEST(RecurrentSequence, LstmMatchesTheOnnxFormulasStepByStep) {
  arith::Var steps("steps"), batch("batch");
  struct Form {
    int64_t hidden;
    std::string direction;
  };
  const std::vector<Form> forms{{5, "forward"}, {16, "bidirectional"}, {33, "reverse"}};
  std::vector<OpToBuild> ops;
  for (const Form& f : forms) {
    const int64_t h = f.hidden, nd = f.direction == "bidirectional" ? 2 : 1;
    TensorType xw{kF32, {steps, batch, arith::Expr(nd * 4 * h)}}, rt{kF32, dims({nd, h, 4 * h})};
    TensorType state{kF32, {arith::Expr(nd), batch, arith::Expr(h)}};
    ops.push_back({"lstm" + std::to_string(h),
                   lstm_sequence(xw, rt, state, state, std::nullopt, f.direction)});
    ops.push_back(
        {"lstm_p" + std::to_string(h),
         lstm_sequence(xw, rt, state, state, TensorType{kF32, dims({nd, 3 * h})}, f.direction)});
  }
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(5);
  for (const Form& f : forms) {
    const int64_t h = f.hidden, nd = f.direction == "bidirectional" ? 2 : 1;
    for (const Case& c : kCases) {
      vm::Tensor xw = random_tensor({c.steps, c.batch, nd * 4 * h}, kF32, rng, -2, 2);
      vm::Tensor rt = random_tensor({nd, h, 4 * h}, kF32, rng, -0.5, 0.5);
      vm::Tensor h0 = random_tensor({nd, c.batch, h}, kF32, rng, -1, 1);
      vm::Tensor c0 = random_tensor({nd, c.batch, h}, kF32, rng, -2, 2);
      vm::Tensor p = random_tensor({nd, 3 * h}, kF32, rng, -1, 1);
      for (bool peep : {false, true}) {
        const std::string name = (peep ? "lstm_p" : "lstm") + std::to_string(h);
        std::vector<vm::Tensor> args{xw, rt, h0, c0};
        if (peep) args.push_back(p);
        vm::Tensor y = poisoned({c.steps, nd, c.batch, h}, kF32);
        vm::Tensor c_last = poisoned({nd, c.batch, h}, kF32);
        args.push_back(y);
        args.push_back(c_last);
        OpResult r = lib.run(name, args);
        ASSERT_TRUE(r.ok()) << name << ": " << r.error;

        std::vector<double> cs = values(c0);
        auto cell = [&](int64_t d, int64_t b, int64_t j, const std::vector<double>& x,
                        const std::vector<double>& hr, double) {
          auto g = [&](int64_t block) {
            return x[size_t(block * h + j)] + hr[size_t(block * h + j)];
          };
          auto peephole = [&](int64_t block) {
            return peep ? at(p, (d * 3 + block) * h + j) : 0.0;
          };
          double& cv = cs[size_t((d * c.batch + b) * h + j)];
          const double i = sigmoid(g(0) + peephole(0) * cv), fg = sigmoid(g(2) + peephole(2) * cv);
          cv = fg * cv + i * std::tanh(g(3));
          return sigmoid(g(1) + peephole(1) * cv) * std::tanh(cv);
        };
        std::vector<double> want =
            Recurrence{c.steps, c.batch, h, 4, f.direction, xw, rt}.run(h0, cell);
        expect_close(y, want, 1e-4, 1e-5, what(name + " " + f.direction, c) + " y");
        expect_close(c_last, cs, 1e-4, 1e-5, what(name + " " + f.direction, c) + " c_last");
      }
    }
  }
}

TEST(RecurrentSequence, GruMatchesTheOnnxFormulasWithAndWithoutRb) {
  arith::Var steps("steps"), batch("batch");
  const std::vector<int64_t> hiddens{7, 16, 40};
  const std::string direction = "bidirectional";
  std::vector<OpToBuild> ops;
  for (int64_t h : hiddens) {
    TensorType xw{kF32, {steps, batch, arith::Expr(2 * 3 * h)}}, rt{kF32, dims({2, h, 3 * h})};
    TensorType state{kF32, {arith::Expr(2), batch, arith::Expr(h)}};
    ops.push_back(
        {"gru" + std::to_string(h), gru_sequence(xw, rt, state, std::nullopt, direction)});
    ops.push_back({"gru_b" + std::to_string(h),
                   gru_sequence(xw, rt, state, TensorType{kF32, dims({2, 3 * h})}, direction)});
  }
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(6);
  for (int64_t h : hiddens) {
    for (const Case& c : kCases) {
      vm::Tensor xw = random_tensor({c.steps, c.batch, 2 * 3 * h}, kF32, rng, -2, 2);
      vm::Tensor rt = random_tensor({2, h, 3 * h}, kF32, rng, -0.5, 0.5);
      vm::Tensor h0 = random_tensor({2, c.batch, h}, kF32, rng, -1, 1);
      vm::Tensor rb = random_tensor({2, 3 * h}, kF32, rng, -1, 1);
      for (bool bias : {false, true}) {
        const std::string name = (bias ? "gru_b" : "gru") + std::to_string(h);
        std::vector<vm::Tensor> args{xw, rt, h0};
        if (bias) args.push_back(rb);
        auto cell = [&](int64_t d, int64_t, int64_t j, const std::vector<double>& x,
                        const std::vector<double>& hr, double hv) {
          auto r = [&](int64_t block) {
            return hr[size_t(block * h + j)] + (bias ? at(rb, (d * 3 + block) * h + j) : 0.0);
          };
          auto xv = [&](int64_t block) { return x[size_t(block * h + j)]; };
          const double z = sigmoid(xv(0) + r(0)), reset = sigmoid(xv(1) + r(1));
          const double n = std::tanh(xv(2) + reset * r(2));
          return (1 - z) * n + z * hv;
        };
        expect_close(run_op(lib, name, args, {c.steps, 2, c.batch, h}, kF32),
                     Recurrence{c.steps, c.batch, h, 3, direction, xw, rt}.run(h0, cell), 1e-4,
                     1e-5, what(name, c));
      }
    }
  }
}

// GRU with linear_before_reset 0 (ONNX's default): n = tanh(x_t Wn + (r h) Rn), the biases in
// xw. The reference steps each direction in double precision.
std::vector<double> gru_reset_first_ref(const vm::Tensor& xw, const vm::Tensor& rt,
                                        const vm::Tensor& h0, int64_t steps, int64_t batch,
                                        int64_t hidden, const std::vector<bool>& dirs) {
  const auto nd = static_cast<int64_t>(dirs.size());
  const int64_t wide = 3 * hidden;
  std::vector<double> y(size_t(steps * nd * batch * hidden));
  for (int64_t d = 0; d < nd; ++d) {
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<double> h(static_cast<size_t>(hidden));
      for (int64_t j = 0; j < hidden; ++j) h[size_t(j)] = at(h0, (d * batch + b) * hidden + j);
      for (int64_t k = 0; k < steps; ++k) {
        const int64_t t = dirs[size_t(d)] ? steps - 1 - k : k;
        auto x = [&](int64_t n) { return at(xw, (t * batch + b) * nd * wide + d * wide + n); };
        auto r_at = [&](int64_t row, int64_t n) { return at(rt, (d * hidden + row) * wide + n); };
        const auto n_h = static_cast<size_t>(hidden);
        std::vector<double> z(n_h), rh(n_h), next(n_h);
        for (int64_t j = 0; j < hidden; ++j) {
          double zs = x(j), rs = x(hidden + j);
          for (int64_t i = 0; i < hidden; ++i) {
            zs += h[size_t(i)] * r_at(i, j);
            rs += h[size_t(i)] * r_at(i, hidden + j);
          }
          z[size_t(j)] = sigmoid(zs);
          rh[size_t(j)] = sigmoid(rs) * h[size_t(j)];
        }
        for (int64_t j = 0; j < hidden; ++j) {
          double ns = x(2 * hidden + j);
          for (int64_t i = 0; i < hidden; ++i) ns += rh[size_t(i)] * r_at(i, 2 * hidden + j);
          const double n = std::tanh(ns);
          next[size_t(j)] = n + z[size_t(j)] * (h[size_t(j)] - n);
        }
        h = next;
        for (int64_t j = 0; j < hidden; ++j) {
          y[size_t(((t * nd + d) * batch + b) * hidden + j)] = h[size_t(j)];
        }
      }
    }
  }
  return y;
}

TEST(RecurrentSequence, GruWithTheResetGateFirstMatchesTheOnnxFormulas) {
  arith::Var steps("steps"), batch("batch");
  const std::vector<int64_t> hiddens{6, 16, 40};
  std::vector<OpToBuild> ops;
  for (int64_t h : hiddens) {
    TensorType xw{kF32, {steps, batch, arith::Expr(2 * 3 * h)}}, rt{kF32, dims({2, h, 3 * h})};
    TensorType state{kF32, {arith::Expr(2), batch, arith::Expr(h)}};
    ops.push_back({"gru_r" + std::to_string(h),
                   gru_sequence(xw, rt, state, std::nullopt, "bidirectional", false)});
  }
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(8);
  for (int64_t h : hiddens) {
    for (const Case& c : kCases) {
      vm::Tensor xw = random_tensor({c.steps, c.batch, 2 * 3 * h}, kF32, rng, -2, 2);
      vm::Tensor rt = random_tensor({2, h, 3 * h}, kF32, rng, -0.5, 0.5);
      vm::Tensor h0 = random_tensor({2, c.batch, h}, kF32, rng, -1, 1);
      const std::string name = "gru_r" + std::to_string(h);
      expect_close(run_op(lib, name, {xw, rt, h0}, {c.steps, 2, c.batch, h}, kF32),
                   gru_reset_first_ref(xw, rt, h0, c.steps, c.batch, h, {false, true}), 1e-4, 1e-5,
                   what(name, c));
    }
  }
  EXPECT_USER_ERROR(gru_sequence({kF32, {steps, batch, arith::Expr(24)}}, {kF32, dims({1, 8, 24})},
                                 {kF32, {arith::Expr(1), batch, arith::Expr(8)}},
                                 TensorType{kF32, dims({1, 24})}, "forward", false),
                    "every bias adds outside the products");
}

// RNN at the default tile and at others (one row, 128 columns, no k unrolling), reversed, with
// static steps and batch, and with h0's batch a symbol of its own.
TEST(RecurrentSequence, RnnMatchesTheOnnxFormulaAtOtherTilesAndStaticShapes) {
  arith::Var steps("steps"), batch("batch"), other("other");
  const std::vector<int64_t> hiddens{5, 24, 70};
  auto types = [&](int64_t h, const arith::Expr& state_batch) {
    return std::vector<TensorType>{{kF32, {steps, batch, arith::Expr(h)}},
                                   {kF32, dims({1, h, h})},
                                   {kF32, {arith::Expr(1), state_batch, arith::Expr(h)}}};
  };
  std::vector<OpToBuild> ops;
  for (int64_t h : hiddens) {
    auto t = types(h, batch);
    ops.push_back({"rnn" + std::to_string(h), rnn_sequence(t[0], t[1], t[2])});
    ops.push_back({"rnn_tiles" + std::to_string(h),
                   rnn_sequence(t[0], t[1], t[2], "reverse"),
                   {{"tile_m", 1}, {"tile_n", 128}, {"tile_k", 1}}});
  }
  ops.push_back({"rnn_static", rnn_sequence({kF32, dims({6, 2, 24})}, {kF32, dims({1, 24, 24})},
                                            {kF32, dims({1, 2, 24})})});
  auto apart = types(24, other);
  ops.push_back({"rnn_apart", rnn_sequence(apart[0], apart[1], apart[2])});
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(7);
  auto check = [&](const std::string& name, int64_t h, const Case& c, const std::string& dir) {
    vm::Tensor xw = random_tensor({c.steps, c.batch, h}, kF32, rng, -2, 2);
    vm::Tensor rt = random_tensor({1, h, h}, kF32, rng, -0.5, 0.5);
    vm::Tensor h0 = random_tensor({1, c.batch, h}, kF32, rng, -1, 1);
    auto cell = [&](int64_t, int64_t, int64_t j, const std::vector<double>& x,
                    const std::vector<double>& hr,
                    double) { return std::tanh(x[size_t(j)] + hr[size_t(j)]); };
    expect_close(run_op(lib, name, {xw, rt, h0}, {c.steps, 1, c.batch, h}, kF32),
                 Recurrence{c.steps, c.batch, h, 1, dir, xw, rt}.run(h0, cell), 1e-4, 1e-5,
                 what(name, c));
  };
  for (int64_t h : hiddens) {
    for (const Case& c : kCases) {
      check("rnn" + std::to_string(h), h, c, "forward");
      check("rnn_tiles" + std::to_string(h), h, c, "reverse");
    }
  }
  check("rnn_static", 24, {6, 2}, "forward");
  check("rnn_apart", 24, {3, 2}, "forward");
  vm::Tensor y = poisoned({3, 1, 2, 24}, kF32);
  OpResult r = lib.run("rnn_apart", {random_tensor({3, 2, 24}, kF32, rng, -1, 1),
                                     random_tensor({1, 24, 24}, kF32, rng, -1, 1),
                                     random_tensor({1, 3, 24}, kF32, rng, -1, 1), y});
  EXPECT_FALSE(r.ok()) << "h0 of batch 3 for an xw of batch 2";
}

TEST(RecurrentSequence, ShapesThatDoNotFitAreRefused) {
  arith::Var steps("steps"), batch("batch");
  TensorType state{kF32, {arith::Expr(1), batch, arith::Expr(8)}};
  TensorType both{kF32, {arith::Expr(2), batch, arith::Expr(8)}};
  EXPECT_USER_ERROR(
      rnn_sequence({kF32, {steps, batch, arith::Expr(9)}}, {kF32, dims({1, 8, 8})}, state),
      "xw must be [steps, batch, 1 * 1 * 8]");
  EXPECT_USER_ERROR(
      rnn_sequence({kF32, {steps, batch, arith::Expr(8)}}, {kF32, dims({1, 8, 9})}, state),
      "rt must be [1, 8, 1 * 8]");
  EXPECT_USER_ERROR(rnn_sequence({kF32, {steps, batch, arith::Expr(16)}}, {kF32, dims({1, 8, 8})},
                                 both, "bidirectional"),
                    "rt must be [2, hidden");
  EXPECT_USER_ERROR(rnn_sequence({kF32, {steps, batch, arith::Expr(8)}}, {kF32, dims({1, 8, 8})},
                                 state, "sideways"),
                    "unknown direction");
  EXPECT_USER_ERROR(gru_sequence({kF32, {steps, batch, arith::Expr(24)}}, {kF32, dims({1, 8, 24})},
                                 state, TensorType{kF32, dims({1, 8})}),
                    "rb must be");
  EXPECT_USER_ERROR(
      lstm_sequence({kF32, {steps, batch, arith::Expr(32)}}, {kF32, dims({1, 8, 32})}, state,
                    {kF32, {arith::Expr(1), batch, arith::Expr(4)}}, std::nullopt),
      "states must be [1, batch, 8]");
  EXPECT_USER_ERROR(lstm_sequence({kF64, {steps, batch, arith::Expr(32)}}, {kF32, dims({1, 8, 32})},
                                  state, state, std::nullopt),
                    "one dtype");
}

}  // namespace
}  // namespace dynvm::ops::testing
