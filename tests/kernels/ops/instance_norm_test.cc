// instance_norm (InstanceNormalization) on a symbolic [n, c, h, w] and a static [N, C, L]
// input (reductions in vector lanes over the flat spatial dims) against a double loop (mean, then the biased variance about it); a large offset
// keeps its precision; integer inputs and short ranks are refused.
#include "kernels/ops/instance_norm.h"

#include <cmath>

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

std::vector<double> instance_norm_ref(const vm::Tensor& x, const vm::Shape& s,
                                      const vm::Tensor& scale, const vm::Tensor& bias, double eps) {
  int64_t inner = 1;
  for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  std::vector<double> out(static_cast<size_t>(numel(s)));
  for (int64_t slice = 0; slice < s[0] * s[1]; ++slice) {
    double mean = 0, var = 0;
    for (int64_t k = 0; k < inner; ++k) mean += at(x, slice * inner + k);
    mean /= static_cast<double>(inner);
    for (int64_t k = 0; k < inner; ++k) {
      const double d = at(x, slice * inner + k) - mean;
      var += d * d;
    }
    var /= static_cast<double>(inner);
    const int64_t c = slice % s[1];
    for (int64_t k = 0; k < inner; ++k) {
      out[static_cast<size_t>(slice * inner + k)] =
          (at(x, slice * inner + k) - mean) / std::sqrt(var + eps) * at(scale, c) + at(bias, c);
    }
  }
  return out;
}

TEST(InstanceNorm, NormalizesEachImageAndChannelOverItsSpatialDims) {
  arith::Var n("n"), c("c"), h("h"), w("w");
  std::vector<OpToBuild> ops;
  ops.push_back({"in_sym", instance_norm({kF32, {n, c, h, w}}, {kF32, {c}}, {kF32, {c}}, 1e-3)});
  ops.push_back({"in_static", instance_norm({kF32, dims({2, 3, 7})}, {kF32, dims({3})},
                                            {kF32, dims({3})}, 1e-5)});
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(9);
  // Spatial sizes under one vector of lanes, with a tail (33 x 17 = 561 = 35 x 16 + 1) and
  // whole vectors only (64 x 64).
  for (const vm::Shape& s : {vm::Shape{1, 2, 1, 3}, vm::Shape{2, 3, 5, 9}, vm::Shape{1, 2, 33, 17},
                             vm::Shape{1, 1, 64, 64}}) {
    vm::Tensor x = random_tensor(s, kF32, rng, -5, 5);
    vm::Tensor scale = random_tensor({s[1]}, kF32, rng, -2, 2);
    vm::Tensor bias = random_tensor({s[1]}, kF32, rng, -2, 2);
    expect_close(run_op(lib, "in_sym", {x, scale, bias}, s, kF32),
                 instance_norm_ref(x, s, scale, bias, 1e-3), 1e-4, 1e-5, "in_sym " + shape_name(s));
  }
  // An offset of 1000: the variance about the mean stays exact where E[x^2] - E[x]^2 would not.
  vm::Tensor x = random_tensor({2, 3, 7}, kF32, rng, 999, 1001);
  vm::Tensor scale = random_tensor({3}, kF32, rng, -2, 2);
  vm::Tensor bias = random_tensor({3}, kF32, rng, -2, 2);
  expect_close(run_op(lib, "in_static", {x, scale, bias}, {2, 3, 7}, kF32),
               instance_norm_ref(x, {2, 3, 7}, scale, bias, 1e-5), 1e-3, 1e-3, "in_static");
}

TEST(InstanceNorm, RefusesIntegerInputsAndShortRanks) {
  TensorType param{kF32, dims({5})};
  EXPECT_USER_ERROR(instance_norm({vm::DType::kInt32, dims({1, 5, 2})}, param, param, 1e-5),
                    "floating-point");
  EXPECT_USER_ERROR(instance_norm({kF32, dims({1, 5})}, param, param, 1e-5), "[N, C, D1, ...]");
}

}  // namespace
}  // namespace dynvm::ops::testing
