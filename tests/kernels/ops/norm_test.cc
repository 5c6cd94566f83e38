// softmax / log_softmax over the last and a middle axis, and layer_norm over the last one
// or two axes (with and without bias, with and without its Mean / InvStdDev outputs),
// symbolic and static, against double loops; softmax of large inputs stays finite. Hardmax
// (ties: the first maximum) and LRN (odd and even window sizes) against index loops.
#include "kernels/ops/norm.h"

#include <cmath>
#include <sstream>
#include <tuple>
#include <utility>

#include "kernels/tir/printer.h"
#include "tests/kernels/ops/op_test_util.h"

namespace dynvm::ops::testing {
namespace {

// Softmax (or log_softmax) of x [a, b, c] along `axis` in double.
std::vector<double> softmax_ref(const vm::Tensor& x, const vm::Shape& s, size_t axis, bool log) {
  int64_t inner = 1, outer = 1;
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  for (size_t d = 0; d < axis; ++d) outer *= s[d];
  int64_t n = s[axis];
  std::vector<double> out(static_cast<size_t>(numel(s)));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto idx = [&](int64_t j) { return (o * n + j) * inner + i; };
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; ++j) m = std::max(m, at(x, idx(j)));
      for (int64_t j = 0; j < n; ++j) sum += std::exp(at(x, idx(j)) - m);
      for (int64_t j = 0; j < n; ++j) {
        double v = at(x, idx(j)) - m;
        out[static_cast<size_t>(idx(j))] = log ? v - std::log(sum) : std::exp(v) / sum;
      }
    }
  }
  return out;
}

class Norms : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var a("a"), b("b"), c("c");
    std::vector<OpToBuild> ops;
    TensorType sym{kF32, {a, b, c}};
    ops.push_back({"softmax_last", softmax(sym, -1)});
    ops.push_back({"softmax_mid", softmax(sym, 1)});
    ops.push_back({"log_softmax_last", log_softmax(sym, -1)});
    ops.push_back({"log_softmax_mid", log_softmax(sym, 1)});
    ops.push_back({"softmax_tuned",
                   softmax(sym, -1),
                   {{"unroll", 4}, {"vector_width", 16}, {"parallel", 0}}});
    ops.push_back({"softmax_static", softmax({kF32, dims({3, 7, 129})}, 2)});
    ops.push_back({"softmax_heads", softmax({kF32, {a, 4, b, c}}, -1)});
    ops.push_back({"layer_norm_last", layer_norm(sym, {kF32, {c}}, TensorType{kF32, {c}}, -1)});
    ops.push_back({"layer_norm_two", layer_norm(sym, {kF32, {b, c}}, std::nullopt, 1, 1e-3)});
    ops.push_back({"layer_norm_static", layer_norm({kF32, dims({3, 7, 129})}, {kF32, dims({129})},
                                                   TensorType{kF32, dims({129})})});
    // With ONNX's Mean and InvStdDev outputs: over the last axis (vector lanes), the last
    // two (scalar reductions), and Mean alone over every axis.
    ops.push_back({"layer_norm_stats_last",
                   layer_norm(sym, {kF32, {c}}, TensorType{kF32, {c}}, -1, 1e-5, 3)});
    ops.push_back(
        {"layer_norm_stats_two", layer_norm(sym, {kF32, {b, c}}, std::nullopt, -2, 1e-3, 3)});
    ops.push_back(
        {"layer_norm_mean_all", layer_norm(sym, {kF32, {a, b, c}}, std::nullopt, 0, 1e-5, 2)});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Norms::lib_ = nullptr;

// Rows shorter than, a multiple of and not a multiple of the 16 lanes softmax reduces in.
const std::vector<vm::Shape> kShapes = {
    {1, 1, 1}, {2, 3, 7}, {2, 5, 32}, {3, 17, 129}, {1, 2, 1000}};

TEST_F(Norms, SoftmaxAndLogSoftmaxOverLastAndMiddleAxes) {
  std::mt19937 rng(21);
  for (const vm::Shape& s : kShapes) {
    vm::Tensor x = random_tensor(s, kF32, rng, -5, 5);
    for (bool log : {false, true}) {
      for (size_t axis : {size_t{2}, size_t{1}}) {
        std::string sym =
            std::string(log ? "log_softmax" : "softmax") + (axis == 2 ? "_last" : "_mid");
        expect_close(run_op(*lib_, sym, {x}, s, kF32), softmax_ref(x, s, axis, log), 1e-5, 1e-6,
                     sym + " " + shape_name(s));
      }
    }
  }
  vm::Tensor x = random_tensor({3, 7, 129}, kF32, rng, -5, 5);
  expect_close(run_op(*lib_, "softmax_static", {x}, {3, 7, 129}, kF32),
               softmax_ref(x, {3, 7, 129}, 2, false), 1e-5, 1e-6, "softmax_static");
}

// Attention scores [n, heads, s, s]: the blocks of 8 rows are one parallel loop at the root
// (a main part and a tail), the batch and heads inside each block, not a parallel loop per
// (batch, head).
TEST_F(Norms, SoftmaxOverASymbolicRowCountRunsItsBlocksInParallelOutermost) {
  arith::Var a("a"), b("b"), c("c");
  std::istringstream lowered(
      tir::to_string(lower_op(softmax({kF32, {a, 4, b, c}}, -1), {}, "heads")));
  int calls = 0;
  for (std::string line; std::getline(lowered, line);) {
    if (line.find("parallel_call(") == std::string::npos) continue;
    ++calls;
    EXPECT_EQ(line.rfind("  parallel_call(", 0), 0u) << line;  // in the function's body
  }
  EXPECT_EQ(calls, 2);
  std::mt19937 rng(22);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 4, 1, 3}, {2, 4, 9, 17}, {3, 4, 16, 40}}) {
    vm::Tensor x = random_tensor(s, kF32, rng, -5, 5);
    const vm::Shape rows{s[0] * s[1], s[2], s[3]};  // the same rows, as softmax_ref's [a, b, c]
    expect_close(run_op(*lib_, "softmax_heads", {x}, s, kF32), softmax_ref(x, rows, 2, false),
                 1e-5, 1e-6, "softmax_heads " + shape_name(s));
  }
}

TEST_F(Norms, TunedKnobsKeepTheValues) {
  std::mt19937 rng(24);
  for (const vm::Shape& s : kShapes) {
    vm::Tensor x = random_tensor(s, kF32, rng, -5, 5);
    expect_close(run_op(*lib_, "softmax_tuned", {x}, s, kF32), softmax_ref(x, s, 2, false), 1e-5,
                 1e-6, "softmax_tuned " + shape_name(s));
  }
}

TEST_F(Norms, SoftmaxOfLargeInputsStaysFinite) {
  std::mt19937 rng(22);
  vm::Tensor x = random_tensor({2, 3, 17}, kF32, rng, 200, 300);
  expect_close(run_op(*lib_, "softmax_last", {x}, {2, 3, 17}, kF32),
               softmax_ref(x, {2, 3, 17}, 2, false), 1e-5, 1e-6, "softmax large");
}

// layer_norm of x [a, b, c] over the trailing dims from `axis`.
std::vector<double> layer_norm_ref(const vm::Tensor& x, const vm::Shape& s, size_t axis,
                                   const vm::Tensor& scale, const vm::Tensor* bias, double eps) {
  int64_t n = 1;
  for (size_t d = axis; d < s.size(); ++d) n *= s[d];
  std::vector<double> out;
  for (int64_t row = 0; row < numel(s) / n; ++row) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) mean += at(x, row * n + j) / static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) {
      double d = at(x, row * n + j) - mean;
      var += d * d / static_cast<double>(n);
    }
    for (int64_t j = 0; j < n; ++j) {
      double y = (at(x, row * n + j) - mean) / std::sqrt(var + eps) * at(scale, j);
      out.push_back(bias ? y + at(*bias, j) : y);
    }
  }
  return out;
}

TEST_F(Norms, LayerNormOverTrailingAxes) {
  std::mt19937 rng(23);
  for (const vm::Shape& s : kShapes) {
    vm::Tensor x = random_tensor(s, kF32, rng, -2, 3);
    vm::Tensor scale = random_tensor({s[2]}, kF32, rng), bias = random_tensor({s[2]}, kF32, rng);
    expect_close(run_op(*lib_, "layer_norm_last", {x, scale, bias}, s, kF32),
                 layer_norm_ref(x, s, 2, scale, &bias, 1e-5), 2e-5, 2e-5,
                 "layer_norm_last " + shape_name(s));
    vm::Tensor scale2 = random_tensor({s[1], s[2]}, kF32, rng);
    expect_close(run_op(*lib_, "layer_norm_two", {x, scale2}, s, kF32),
                 layer_norm_ref(x, s, 1, scale2, nullptr, 1e-3), 2e-5, 2e-5,
                 "layer_norm_two " + shape_name(s));
  }
  vm::Tensor x = random_tensor({3, 7, 129}, kF32, rng);
  vm::Tensor scale = random_tensor({129}, kF32, rng), bias = random_tensor({129}, kF32, rng);
  expect_close(run_op(*lib_, "layer_norm_static", {x, scale, bias}, {3, 7, 129}, kF32),
               layer_norm_ref(x, {3, 7, 129}, 2, scale, &bias, 1e-5), 2e-5, 2e-5,
               "layer_norm_static");
}

// Per row of x [a, b, c] over the trailing dims from `axis`: the mean and
// 1 / sqrt(variance + eps), as ONNX LayerNormalization's Mean and InvStdDev.
std::pair<std::vector<double>, std::vector<double>> layer_norm_stats_ref(const vm::Tensor& x,
                                                                         const vm::Shape& s,
                                                                         size_t axis, double eps) {
  int64_t n = 1;
  for (size_t d = axis; d < s.size(); ++d) n *= s[d];
  std::vector<double> means, inv_std_devs;
  for (int64_t row = 0; row < numel(s) / n; ++row) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) mean += at(x, row * n + j);
    mean /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j)
      var += (at(x, row * n + j) - mean) * (at(x, row * n + j) - mean);
    var /= static_cast<double>(n);
    means.push_back(mean);
    inv_std_devs.push_back(1 / std::sqrt(var + eps));
  }
  return {means, inv_std_devs};
}

TEST_F(Norms, LayerNormMeanAndInvStdDevOutputs) {
  std::mt19937 rng(24);
  for (const vm::Shape& s : kShapes) {
    vm::Tensor x = random_tensor(s, kF32, rng, -2, 3);
    const std::string where = shape_name(s);

    vm::Tensor scale = random_tensor({s[2]}, kF32, rng), bias = random_tensor({s[2]}, kF32, rng);
    vm::Shape rows{s[0], s[1], 1};
    vm::Tensor y = poisoned(s, kF32), mean = poisoned(rows, kF32), inv = poisoned(rows, kF32);
    ASSERT_TRUE(lib_->run("layer_norm_stats_last", {x, scale, bias, y, mean, inv}).ok());
    auto [want_mean, want_inv] = layer_norm_stats_ref(x, s, 2, 1e-5);
    expect_close(y, layer_norm_ref(x, s, 2, scale, &bias, 1e-5), 2e-5, 2e-5, "Y last " + where);
    expect_close(mean, want_mean, 2e-5, 2e-5, "Mean last " + where);
    expect_close(inv, want_inv, 2e-5, 2e-5, "InvStdDev last " + where);

    vm::Tensor scale2 = random_tensor({s[1], s[2]}, kF32, rng);
    vm::Shape planes{s[0], 1, 1};
    y = poisoned(s, kF32), mean = poisoned(planes, kF32), inv = poisoned(planes, kF32);
    ASSERT_TRUE(lib_->run("layer_norm_stats_two", {x, scale2, y, mean, inv}).ok());
    std::tie(want_mean, want_inv) = layer_norm_stats_ref(x, s, 1, 1e-3);
    expect_close(y, layer_norm_ref(x, s, 1, scale2, nullptr, 1e-3), 2e-5, 2e-5, "Y two " + where);
    expect_close(mean, want_mean, 2e-5, 2e-5, "Mean two " + where);
    expect_close(inv, want_inv, 2e-5, 2e-5, "InvStdDev two " + where);

    vm::Tensor scale3 = random_tensor(s, kF32, rng);
    y = poisoned(s, kF32), mean = poisoned({1, 1, 1}, kF32);
    ASSERT_TRUE(lib_->run("layer_norm_mean_all", {x, scale3, y, mean}).ok());
    std::tie(want_mean, want_inv) = layer_norm_stats_ref(x, s, 0, 1e-5);
    expect_close(y, layer_norm_ref(x, s, 0, scale3, nullptr, 1e-5), 2e-5, 2e-5, "Y all " + where);
    expect_close(mean, want_mean, 2e-5, 2e-5, "Mean all " + where);
  }
}

// A constant row: Mean is the value, InvStdDev exactly 1 / sqrt(epsilon).
TEST_F(Norms, LayerNormStatsOfAConstantRow) {
  vm::Tensor x = vm::Tensor::from_vector(std::vector<float>(6, 2.5f), {1, 2, 3}, kF32);
  vm::Tensor scale = vm::Tensor::from_vector(std::vector<float>(3, 1.0f), {3}, kF32);
  vm::Tensor bias = vm::Tensor::from_vector(std::vector<float>(3, 0.0f), {3}, kF32);
  vm::Tensor y = poisoned({1, 2, 3}, kF32), mean = poisoned({1, 2, 1}, kF32),
             inv = poisoned({1, 2, 1}, kF32);
  ASSERT_TRUE(lib_->run("layer_norm_stats_last", {x, scale, bias, y, mean, inv}).ok());
  expect_close(y, std::vector<double>(6, 0.0), 0, 0, "Y");
  expect_close(mean, {2.5, 2.5}, 0, 0, "Mean");
  expect_close(inv, {1 / std::sqrt(1e-5), 1 / std::sqrt(1e-5)}, 1e-6, 0, "InvStdDev");
}

// Hardmax along `axis`: 1 at the first maximum of each row, as numpy.argmax picks it.
std::vector<double> hardmax_ref(const vm::Tensor& x, const vm::Shape& s, size_t axis) {
  std::vector<double> out(static_cast<size_t>(numel(s)), 0.0);
  for (int64_t i = 0; i < numel(s); ++i) {
    std::vector<int64_t> c = unravel(i, s);
    if (c[axis] != 0) continue;  // one row per element with coordinate 0 on the axis
    int64_t best = 0;
    for (int64_t j = 1; j < s[axis]; ++j) {
      c[axis] = j;
      std::vector<int64_t> b = c;
      b[axis] = best;
      if (at(x, ravel(c, s)) > at(x, ravel(b, s))) best = j;
    }
    c[axis] = best;
    out[static_cast<size_t>(ravel(c, s))] = 1;
  }
  return out;
}

// ONNX LRN written out: the square sum over channels [c - (size-1)/2, c + size/2] in [0, C).
std::vector<double> lrn_ref(const vm::Tensor& x, const vm::Shape& s, int64_t size, double alpha,
                            double beta, double bias) {
  std::vector<double> out;
  for (int64_t i = 0; i < numel(s); ++i) {
    std::vector<int64_t> c = unravel(i, s);
    const int64_t ch = c[1];
    double sum = 0;
    for (int64_t k = std::max<int64_t>(0, ch - (size - 1) / 2);
         k <= std::min<int64_t>(s[1] - 1, ch + size / 2); ++k) {
      c[1] = k;
      double v = at(x, ravel(c, s));
      sum += v * v;
    }
    out.push_back(at(x, i) / std::pow(bias + alpha / static_cast<double>(size) * sum, beta));
  }
  return out;
}

class HardmaxAndLrn : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var a("a"), b("b"), c("c");
    std::vector<OpToBuild> ops;
    TensorType sym{kF32, {a, b, c}};
    ops.push_back({"hardmax_last", hardmax(sym, -1)});
    ops.push_back({"hardmax_first", hardmax(sym, 0)});
    ops.push_back({"hardmax_static_mid", hardmax({kF32, dims({3, 4, 5})}, 1)});
    ops.push_back({"lrn_3", lrn({kF32, {a, b, c, c}}, 3, 2e-4, 0.5, 2.0)});
    ops.push_back({"lrn_4_static", lrn({kF32, dims({2, 7, 3, 5})}, 4)});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* HardmaxAndLrn::lib_ = nullptr;

// Small integers as floats, so that rows often hold the maximum twice.
vm::Tensor tied_values(const vm::Shape& s, std::mt19937& rng) {
  vm::Tensor x = vm::Tensor::empty(s, kF32);
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = static_cast<float>(rng() % 4);
  return x;
}

TEST_F(HardmaxAndLrn, HardmaxMarksTheFirstMaximum) {
  std::mt19937 rng(51);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1, 1}, {2, 3, 7}, {3, 17, 129}}) {
    vm::Tensor x = tied_values(s, rng);
    expect_close(run_op(*lib_, "hardmax_last", {x}, s, kF32), hardmax_ref(x, s, 2), 0, 0,
                 "hardmax_last " + shape_name(s));
    expect_close(run_op(*lib_, "hardmax_first", {x}, s, kF32), hardmax_ref(x, s, 0), 0, 0,
                 "hardmax_first " + shape_name(s));
  }
  vm::Tensor x = tied_values({3, 4, 5}, rng);
  expect_close(run_op(*lib_, "hardmax_static_mid", {x}, {3, 4, 5}, kF32),
               hardmax_ref(x, {3, 4, 5}, 1), 0, 0, "hardmax_static_mid");
  // By hand: ties go to the first; a negative row still has its one.
  vm::Tensor h =
      vm::Tensor::from_vector(std::vector<float>{1, 3, 3, 0, -2, -1, -5, -1}, {2, 1, 4}, kF32);
  expect_close(run_op(*lib_, "hardmax_last", {h}, {2, 1, 4}, kF32), {0, 1, 0, 0, 0, 1, 0, 0}, 0, 0,
               "hardmax by hand");
}

TEST_F(HardmaxAndLrn, LrnOddAndEvenWindows) {
  std::mt19937 rng(52);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1, 2, 2}, {2, 5, 3, 3}, {1, 9, 7, 7}}) {
    vm::Tensor x = random_tensor(s, kF32, rng, -3, 3);
    expect_close(run_op(*lib_, "lrn_3", {x}, s, kF32), lrn_ref(x, s, 3, 2e-4, 0.5, 2.0), 1e-5, 1e-6,
                 "lrn_3 " + shape_name(s));
  }
  vm::Tensor x = random_tensor({2, 7, 3, 5}, kF32, rng, -30, 30);
  expect_close(run_op(*lib_, "lrn_4_static", {x}, {2, 7, 3, 5}, kF32),
               lrn_ref(x, {2, 7, 3, 5}, 4, 1e-4, 0.75, 1.0), 1e-5, 1e-6, "lrn_4_static");
}

}  // namespace
}  // namespace dynvm::ops::testing
