// lstm_sequence, gru_sequence and rnn_sequence (a whole recurrence in one kernel) on symbolic
// steps and batch, at hidden sizes under, at and past the product's tiles, against the ONNX
// formulas run step by step in double precision; also no steps at all, a static shape, other
// knobs, and the shapes that are refused.
#include <cmath>

#include "kernels/ops/recurrent.h"
#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// One direction's recurrence in double precision; `cell` maps (t, b, the step's products
// h R [gates * hidden], h) to h' and updates its own state.
struct Recurrence {
  int64_t steps, batch, hidden, gates;
  const vm::Tensor& xw;  // [steps, batch, gates * hidden]
  const vm::Tensor& rt;  // [hidden, gates * hidden]
  // Every step's h, [steps, batch, hidden] row-major.
  template <typename Cell>
  std::vector<double> run(std::vector<double> h, Cell cell) const {
    std::vector<double> y;
    const int64_t wide = gates * hidden;
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<double> next(h.size());
      for (int64_t b = 0; b < batch; ++b) {
        std::vector<double> hr(static_cast<size_t>(wide), 0.0), x(static_cast<size_t>(wide));
        for (int64_t n = 0; n < wide; ++n) {
          for (int64_t k = 0; k < hidden; ++k) {
            hr[size_t(n)] += h[size_t(b * hidden + k)] * at(rt, k * wide + n);
          }
          x[size_t(n)] = at(xw, (t * batch + b) * wide + n);
        }
        for (int64_t j = 0; j < hidden; ++j) {
          next[size_t(b * hidden + j)] = cell(b, j, x, hr, h[size_t(b * hidden + j)]);
        }
      }
      h = next;
      y.insert(y.end(), h.begin(), h.end());
    }
    return y;
  }
};

struct Case {
  int64_t steps, batch;
};
const std::vector<Case> kCases{{1, 1}, {7, 1}, {5, 3}, {0, 2}};

TEST(RecurrentSequence, LstmMatchesTheOnnxFormulasStepByStep) {
  arith::Var steps("steps"), batch("batch");
  const std::vector<int64_t> hiddens{5, 16, 33};
  std::vector<OpToBuild> ops;
  for (int64_t h : hiddens) {
    TensorType xw{kF32, {steps, batch, arith::Expr(4 * h)}}, rt{kF32, dims({h, 4 * h})};
    TensorType state{kF32, {batch, arith::Expr(h)}};
    ops.push_back({"lstm" + std::to_string(h), lstm_sequence(xw, rt, state, state, std::nullopt)});
    ops.push_back({"lstm_p" + std::to_string(h),
                   lstm_sequence(xw, rt, state, state, TensorType{kF32, dims({3 * h})})});
  }
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(5);
  for (int64_t h : hiddens) {
    for (const Case& c : kCases) {
      vm::Tensor xw = random_tensor({c.steps, c.batch, 4 * h}, kF32, rng, -2, 2);
      vm::Tensor rt = random_tensor({h, 4 * h}, kF32, rng, -0.5, 0.5);
      vm::Tensor h0 = random_tensor({c.batch, h}, kF32, rng, -1, 1);
      vm::Tensor c0 = random_tensor({c.batch, h}, kF32, rng, -2, 2);
      vm::Tensor p = random_tensor({3 * h}, kF32, rng, -1, 1);
      for (bool peep : {false, true}) {
        const std::string name = (peep ? "lstm_p" : "lstm") + std::to_string(h);
        std::vector<vm::Tensor> args{xw, rt, h0, c0};
        if (peep) args.push_back(p);
        vm::Tensor y = poisoned({c.steps, c.batch, h}, kF32), c_last = poisoned({c.batch, h}, kF32);
        args.push_back(y);
        args.push_back(c_last);
        OpResult r = lib.run(name, args);
        ASSERT_TRUE(r.ok()) << name << ": " << r.error;

        std::vector<double> cs = values(c0);
        auto cell = [&](int64_t b, int64_t j, const std::vector<double>& x,
                        const std::vector<double>& hr, double) {
          auto g = [&](int64_t block) {
            return x[size_t(block * h + j)] + hr[size_t(block * h + j)];
          };
          auto peephole = [&](int64_t block) { return peep ? at(p, block * h + j) : 0.0; };
          double& cv = cs[size_t(b * h + j)];
          const double i = sigmoid(g(0) + peephole(0) * cv), f = sigmoid(g(2) + peephole(2) * cv);
          cv = f * cv + i * std::tanh(g(3));
          return sigmoid(g(1) + peephole(1) * cv) * std::tanh(cv);
        };
        std::vector<double> want = Recurrence{c.steps, c.batch, h, 4, xw, rt}.run(values(h0), cell);
        const std::string what =
            name + " steps " + std::to_string(c.steps) + " batch " + std::to_string(c.batch);
        expect_close(y, want, 1e-4, 1e-5, what + " y");
        expect_close(c_last, cs, 1e-4, 1e-5, what + " c_last");
      }
    }
  }
}

TEST(RecurrentSequence, GruMatchesTheOnnxFormulasWithAndWithoutRb) {
  arith::Var steps("steps"), batch("batch");
  const std::vector<int64_t> hiddens{7, 16, 40};
  std::vector<OpToBuild> ops;
  for (int64_t h : hiddens) {
    TensorType xw{kF32, {steps, batch, arith::Expr(3 * h)}}, rt{kF32, dims({h, 3 * h})};
    TensorType state{kF32, {batch, arith::Expr(h)}};
    ops.push_back({"gru" + std::to_string(h), gru_sequence(xw, rt, state, std::nullopt)});
    ops.push_back({"gru_b" + std::to_string(h),
                   gru_sequence(xw, rt, state, TensorType{kF32, dims({3 * h})})});
  }
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(6);
  for (int64_t h : hiddens) {
    for (const Case& c : kCases) {
      vm::Tensor xw = random_tensor({c.steps, c.batch, 3 * h}, kF32, rng, -2, 2);
      vm::Tensor rt = random_tensor({h, 3 * h}, kF32, rng, -0.5, 0.5);
      vm::Tensor h0 = random_tensor({c.batch, h}, kF32, rng, -1, 1);
      vm::Tensor rb = random_tensor({3 * h}, kF32, rng, -1, 1);
      for (bool bias : {false, true}) {
        const std::string name = (bias ? "gru_b" : "gru") + std::to_string(h);
        std::vector<vm::Tensor> args{xw, rt, h0};
        if (bias) args.push_back(rb);
        auto cell = [&](int64_t, int64_t j, const std::vector<double>& x,
                        const std::vector<double>& hr, double hv) {
          auto r = [&](int64_t block) {
            return hr[size_t(block * h + j)] + (bias ? at(rb, block * h + j) : 0.0);
          };
          auto xv = [&](int64_t block) { return x[size_t(block * h + j)]; };
          const double z = sigmoid(xv(0) + r(0)), reset = sigmoid(xv(1) + r(1));
          const double n = std::tanh(xv(2) + reset * r(2));
          return (1 - z) * n + z * hv;
        };
        expect_close(
            run_op(lib, name, args, {c.steps, c.batch, h}, kF32),
            Recurrence{c.steps, c.batch, h, 3, xw, rt}.run(values(h0), cell), 1e-4, 1e-5,
            name + " steps " + std::to_string(c.steps) + " batch " + std::to_string(c.batch));
      }
    }
  }
}

// RNN at the default tile and at others (one row, one vector of columns, no k unrolling), and
// with static steps and batch.
TEST(RecurrentSequence, RnnMatchesTheOnnxFormulaAtOtherTilesAndStaticShapes) {
  arith::Var steps("steps"), batch("batch");
  const std::vector<int64_t> hiddens{5, 24, 70};
  std::vector<OpToBuild> ops;
  for (int64_t h : hiddens) {
    TensorType xw{kF32, {steps, batch, arith::Expr(h)}}, rt{kF32, dims({h, h})};
    TensorType state{kF32, {batch, arith::Expr(h)}};
    ops.push_back({"rnn" + std::to_string(h), rnn_sequence(xw, rt, state)});
    ops.push_back({"rnn_tiles" + std::to_string(h),
                   rnn_sequence(xw, rt, state),
                   {{"tile_m", 1}, {"tile_n", 128}, {"tile_k", 1}}});
  }
  ops.push_back({"rnn_static", rnn_sequence({kF32, dims({6, 2, 24})}, {kF32, dims({24, 24})},
                                            {kF32, dims({2, 24})})});
  // h0's batch a symbol of its own: the kernel checks it against xw's when it runs.
  arith::Var other("other");
  ops.push_back(
      {"rnn_apart", rnn_sequence({kF32, {steps, batch, arith::Expr(24)}}, {kF32, dims({24, 24})},
                                 {kF32, {other, arith::Expr(24)}})});
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(7);
  auto check = [&](const std::string& name, int64_t h, const Case& c) {
    vm::Tensor xw = random_tensor({c.steps, c.batch, h}, kF32, rng, -2, 2);
    vm::Tensor rt = random_tensor({h, h}, kF32, rng, -0.5, 0.5);
    vm::Tensor h0 = random_tensor({c.batch, h}, kF32, rng, -1, 1);
    auto cell = [&](int64_t, int64_t j, const std::vector<double>& x, const std::vector<double>& hr,
                    double) { return std::tanh(x[size_t(j)] + hr[size_t(j)]); };
    expect_close(run_op(lib, name, {xw, rt, h0}, {c.steps, c.batch, h}, kF32),
                 Recurrence{c.steps, c.batch, h, 1, xw, rt}.run(values(h0), cell), 1e-4, 1e-5,
                 name + " steps " + std::to_string(c.steps) + " batch " + std::to_string(c.batch));
  };
  for (int64_t h : hiddens) {
    for (const Case& c : kCases) {
      check("rnn" + std::to_string(h), h, c);
      check("rnn_tiles" + std::to_string(h), h, c);
    }
  }
  check("rnn_static", 24, {6, 2});
  check("rnn_apart", 24, {3, 2});
  vm::Tensor y = poisoned({3, 2, 24}, kF32);
  OpResult r = lib.run("rnn_apart", {random_tensor({3, 2, 24}, kF32, rng, -1, 1),
                                     random_tensor({24, 24}, kF32, rng, -1, 1),
                                     random_tensor({3, 24}, kF32, rng, -1, 1), y});
  EXPECT_FALSE(r.ok()) << "h0 of batch 3 for an xw of batch 2";
}

TEST(RecurrentSequence, ShapesThatDoNotFitAreRefused) {
  arith::Var steps("steps"), batch("batch");
  TensorType state{kF32, {batch, arith::Expr(8)}};
  EXPECT_USER_ERROR(
      rnn_sequence({kF32, {steps, batch, arith::Expr(9)}}, {kF32, dims({8, 8})}, state),
      "xw must be [steps, batch, 1 * 8]");
  EXPECT_USER_ERROR(
      rnn_sequence({kF32, {steps, batch, arith::Expr(8)}}, {kF32, dims({8, 9})}, state),
      "rt must be [8, 1 * 8]");
  EXPECT_USER_ERROR(gru_sequence({kF32, {steps, batch, arith::Expr(24)}}, {kF32, dims({8, 24})},
                                 state, TensorType{kF32, dims({8})}),
                    "rb must be");
  EXPECT_USER_ERROR(lstm_sequence({kF32, {steps, batch, arith::Expr(32)}}, {kF32, dims({8, 32})},
                                  state, {kF32, {batch, arith::Expr(4)}}, std::nullopt),
                    "states must be [batch, 8]");
  EXPECT_USER_ERROR(lstm_sequence({kF64, {steps, batch, arith::Expr(32)}}, {kF32, dims({8, 32})},
                                  state, state, std::nullopt),
                    "one dtype");
}

}  // namespace
}  // namespace dynvm::ops::testing
