// batch_norm (inference BatchNormalization) on a symbolic [n, c, w] and a static NCHW
// input against a double loop; integer inputs and mismatched parameters are refused.
#include "kernels/ops/batch_norm.h"

#include <cmath>

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

// (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c] with c the dim-1 index.
std::vector<double> batch_norm_ref(const vm::Tensor& x, const vm::Shape& s,
                                   const std::vector<vm::Tensor>& p, double eps) {
  int64_t inner = 1;
  for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  std::vector<double> out(static_cast<size_t>(numel(s)));
  for (int64_t i = 0; i < numel(s); ++i) {
    const int64_t c = (i / inner) % s[1];
    out[static_cast<size_t>(i)] =
        (at(x, i) - at(p[2], c)) / std::sqrt(at(p[3], c) + eps) * at(p[0], c) + at(p[1], c);
  }
  return out;
}

TEST(BatchNorm, NormalizesPerChannelOnSymbolicAndStaticShapes) {
  arith::Var n("n"), w("w");
  TensorType param{kF32, dims({5})};
  std::vector<OpToBuild> ops;
  ops.push_back(
      {"bn_sym", batch_norm({kF32, {n, arith::make_int(5), w}}, param, param, param, param, 1e-3)});
  ops.push_back({"bn_static", batch_norm({kF32, dims({2, 5, 3, 4})}, param, param, param, param)});
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(7);
  std::vector<vm::Tensor> p = {
      random_tensor({5}, kF32, rng, -2, 2), random_tensor({5}, kF32, rng, -2, 2),
      random_tensor({5}, kF32, rng, -2, 2), random_tensor({5}, kF32, rng, 0.1, 3)};
  for (const vm::Shape& s : {vm::Shape{1, 5, 1}, vm::Shape{3, 5, 37}}) {
    vm::Tensor x = random_tensor(s, kF32, rng, -5, 5);
    expect_close(run_op(lib, "bn_sym", {x, p[0], p[1], p[2], p[3]}, s, kF32),
                 batch_norm_ref(x, s, p, 1e-3), 1e-5, 1e-6, "bn_sym " + shape_name(s));
  }
  vm::Tensor x = random_tensor({2, 5, 3, 4}, kF32, rng, -5, 5);
  expect_close(run_op(lib, "bn_static", {x, p[0], p[1], p[2], p[3]}, {2, 5, 3, 4}, kF32),
               batch_norm_ref(x, {2, 5, 3, 4}, p, 1e-5), 1e-5, 1e-6, "bn_static");
}

TEST(BatchNorm, RefusesIntegerInputsAndMismatchedParameters) {
  TensorType param{kF32, dims({5})};
  EXPECT_USER_ERROR(batch_norm({vm::DType::kInt32, dims({1, 5, 2})}, param, param, param, param),
                    "floating-point");
  EXPECT_USER_ERROR(batch_norm({kF32, dims({1, 5, 2})}, {kF32, dims({5, 1})}, param, param, param),
                    "1-D");
}

}  // namespace
}  // namespace dynvm::ops::testing
