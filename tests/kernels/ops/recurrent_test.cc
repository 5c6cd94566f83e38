// lstm_cell and gru_cell (the element-wise half of a recurrent step) on a symbolic batch at
// hidden sizes under, at and past one vector of lanes, with and without the LSTM's
// peepholes, against the ONNX formulas evaluated in double precision; shapes that do not
// fit are refused.
#include "kernels/ops/recurrent.h"

#include <cmath>

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// h' then c', row-major [batch, hidden] each, from the ONNX LSTM formulas (gates i, o, f, c).
std::vector<std::vector<double>> lstm_ref(const vm::Tensor& gates, const vm::Tensor& c,
                                          const vm::Tensor* p, int64_t batch, int64_t hidden) {
  std::vector<double> h2, c2;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < hidden; ++j) {
      auto g = [&](int64_t block) { return at(gates, b * 4 * hidden + block * hidden + j); };
      auto peep = [&](int64_t block) { return p ? at(*p, block * hidden + j) : 0.0; };
      const double cv = at(c, b * hidden + j);
      const double i = sigmoid(g(0) + peep(0) * cv), f = sigmoid(g(2) + peep(2) * cv);
      const double cn = f * cv + i * std::tanh(g(3));
      const double o = sigmoid(g(1) + peep(1) * cn);
      h2.push_back(o * std::tanh(cn));
      c2.push_back(cn);
    }
  }
  return {h2, c2};
}

// h' from the ONNX GRU formulas with linear_before_reset 1 (gates z, r, n).
std::vector<double> gru_ref(const vm::Tensor& xw, const vm::Tensor& hr, const vm::Tensor& h,
                            int64_t batch, int64_t hidden) {
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < hidden; ++j) {
      auto x = [&](int64_t block) { return at(xw, b * 3 * hidden + block * hidden + j); };
      auto r = [&](int64_t block) { return at(hr, b * 3 * hidden + block * hidden + j); };
      const double z = sigmoid(x(0) + r(0)), reset = sigmoid(x(1) + r(1));
      const double n = std::tanh(x(2) + reset * r(2));
      out.push_back((1 - z) * n + z * at(h, b * hidden + j));
    }
  }
  return out;
}

TEST(RecurrentCells, LstmMatchesTheOnnxFormulasWithAndWithoutPeepholes) {
  arith::Var batch("batch");
  const std::vector<int64_t> hiddens{5, 16, 48, 33};
  std::vector<OpToBuild> ops;
  for (int64_t h : hiddens) {
    TensorType gates{kF32, {batch, arith::Expr(4 * h)}}, c{kF32, {batch, arith::Expr(h)}};
    ops.push_back({"lstm" + std::to_string(h), lstm_cell(gates, c, std::nullopt)});
    ops.push_back(
        {"lstm_p" + std::to_string(h), lstm_cell(gates, c, TensorType{kF32, dims({3 * h})})});
  }
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(3);
  for (int64_t h : hiddens) {
    for (int64_t batch_size : {1, 3}) {
      vm::Tensor gates = random_tensor({batch_size, 4 * h}, kF32, rng, -4, 4);
      vm::Tensor c = random_tensor({batch_size, h}, kF32, rng, -2, 2);
      vm::Tensor p = random_tensor({3 * h}, kF32, rng, -1, 1);
      for (bool peep : {false, true}) {
        const std::string name = (peep ? "lstm_p" : "lstm") + std::to_string(h);
        std::vector<vm::Tensor> args{gates, c};
        if (peep) args.push_back(p);
        vm::Tensor h2 = poisoned({batch_size, h}, kF32), c2 = poisoned({batch_size, h}, kF32);
        args.push_back(h2);
        args.push_back(c2);
        OpResult r = lib.run(name, args);
        ASSERT_TRUE(r.ok()) << name << ": " << r.error;
        auto want = lstm_ref(gates, c, peep ? &p : nullptr, batch_size, h);
        const std::string what = name + " batch " + std::to_string(batch_size);
        expect_close(h2, want[0], 1e-5, 1e-6, what + " h'");
        expect_close(c2, want[1], 1e-5, 1e-6, what + " c'");
      }
    }
  }
}

TEST(RecurrentCells, GruMatchesTheOnnxFormulasWithTheLinearBeforeReset) {
  arith::Var batch("batch");
  const std::vector<int64_t> hiddens{7, 16, 40};
  std::vector<OpToBuild> ops;
  for (int64_t h : hiddens) {
    TensorType wide{kF32, {batch, arith::Expr(3 * h)}}, state{kF32, {batch, arith::Expr(h)}};
    ops.push_back({"gru" + std::to_string(h), gru_cell(wide, wide, state)});
  }
  ops.push_back(
      {"gru_f64", gru_cell({kF64, dims({2, 9})}, {kF64, dims({2, 9})}, {kF64, dims({2, 3})})});
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(4);
  for (int64_t h : hiddens) {
    for (int64_t batch_size : {1, 4}) {
      vm::Tensor xw = random_tensor({batch_size, 3 * h}, kF32, rng, -4, 4);
      vm::Tensor hr = random_tensor({batch_size, 3 * h}, kF32, rng, -4, 4);
      vm::Tensor state = random_tensor({batch_size, h}, kF32, rng, -1, 1);
      const std::string name = "gru" + std::to_string(h);
      expect_close(run_op(lib, name, {xw, hr, state}, {batch_size, h}, kF32),
                   gru_ref(xw, hr, state, batch_size, h), 1e-5, 1e-6,
                   name + " batch " + std::to_string(batch_size));
    }
  }
  vm::Tensor xw = random_tensor({2, 9}, kF64, rng, -4, 4),
             hr = random_tensor({2, 9}, kF64, rng, -4, 4);
  vm::Tensor state = random_tensor({2, 3}, kF64, rng, -1, 1);
  expect_close(run_op(lib, "gru_f64", {xw, hr, state}, {2, 3}, kF64), gru_ref(xw, hr, state, 2, 3),
               1e-12, 1e-12, "gru_f64");
}

TEST(RecurrentCells, ShapesThatDoNotFitAreRefused) {
  arith::Var batch("batch"), hidden("hidden");
  EXPECT_USER_ERROR(
      lstm_cell({kF32, {batch, arith::Expr(20)}}, {kF32, {batch, hidden}}, std::nullopt),
      "static hidden size");
  EXPECT_USER_ERROR(lstm_cell({kF32, dims({2, 16})}, {kF32, dims({2, 5})}, std::nullopt),
                    "[batch, 4 * 5]");
  EXPECT_USER_ERROR(
      lstm_cell({kF32, dims({2, 20})}, {kF32, dims({2, 5})}, TensorType{kF32, dims({5})}),
      "peepholes");
  EXPECT_USER_ERROR(gru_cell({kF32, dims({2, 9})}, {kF64, dims({2, 9})}, {kF32, dims({2, 3})}),
                    "one dtype");
  EXPECT_USER_ERROR(gru_cell({kI32, dims({2, 9})}, {kI32, dims({2, 9})}, {kI32, dims({2, 3})}),
                    "floating-point");
}

}  // namespace
}  // namespace dynvm::ops::testing
