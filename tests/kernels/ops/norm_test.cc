// softmax / log_softmax over the last and a middle axis, and layer_norm over the last one
// or two axes (with and without bias), symbolic and static, against double loops; softmax
// of large inputs stays finite (max-subtract).
#include "kernels/ops/norm.h"

#include <cmath>

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
    ops.push_back({"layer_norm_last", layer_norm(sym, {kF32, {c}}, TensorType{kF32, {c}}, -1)});
    ops.push_back({"layer_norm_two", layer_norm(sym, {kF32, {b, c}}, std::nullopt, 1, 1e-3)});
    ops.push_back({"layer_norm_static", layer_norm({kF32, dims({3, 7, 129})}, {kF32, dims({129})},
                                                   TensorType{kF32, dims({129})})});
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

}  // namespace
}  // namespace dynvm::ops::testing
