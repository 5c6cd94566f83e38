// sin, cos, hard_swish and prelu (a per-channel and a full-shape slope) on symbolic and
// static shapes against double loops; integer inputs and non-broadcasting slopes refused.
#include "kernels/ops/activation.h"

#include <algorithm>
#include <cmath>

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

TEST(Activation, SinCosHardSwishMatchDoubleLoops) {
  arith::Var n("n");
  TensorType sym{kF32, {n}};
  OpLibrary lib =
      OpLibrary::build({{"sin", activation(ActivationOp::kSin, sym)},
                        {"cos", activation(ActivationOp::kCos, sym)},
                        {"hard_swish", activation(ActivationOp::kHardSwish, sym)},
                        {"sin_static", activation(ActivationOp::kSin, {kF32, dims({37})})}});
  std::mt19937 rng(3);
  for (int64_t len : {1, 37, 1000}) {
    vm::Tensor x = random_tensor({len}, kF32, rng, -6, 6);
    std::vector<double> s, c, h;
    for (int64_t i = 0; i < len; ++i) {
      double v = at(x, i);
      s.push_back(std::sin(v));
      c.push_back(std::cos(v));
      h.push_back(v * std::max(0.0, std::min(1.0, v / 6 + 0.5)));
    }
    expect_close(run_op(lib, "sin", {x}, {len}, kF32), s, 1e-5, 1e-6, "sin");
    expect_close(run_op(lib, "cos", {x}, {len}, kF32), c, 1e-5, 1e-6, "cos");
    expect_close(run_op(lib, "hard_swish", {x}, {len}, kF32), h, 1e-5, 1e-6, "hard_swish");
    if (len == 37)
      expect_close(run_op(lib, "sin_static", {x}, {37}, kF32), s, 1e-5, 1e-6, "sin_static");
  }
}

TEST(Activation, PreluBroadcastsTheSlopeToX) {
  arith::Var n("n");
  OpLibrary lib =
      OpLibrary::build({{"prelu_channel", prelu({kF32, {n, arith::make_int(3), arith::make_int(4)}},
                                                {kF32, dims({3, 1})})},
                        {"prelu_full", prelu({kF32, dims({2, 3})}, {kF32, dims({2, 3})})}});
  std::mt19937 rng(5);
  vm::Tensor x = random_tensor({2, 3, 4}, kF32, rng, -3, 3);
  vm::Tensor slope = random_tensor({3, 1}, kF32, rng, 0, 1);
  std::vector<double> want;
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = at(x, i);
    want.push_back(v < 0 ? v * at(slope, (i / 4) % 3) : v);
  }
  expect_close(run_op(lib, "prelu_channel", {x, slope}, {2, 3, 4}, kF32), want, 1e-6, 1e-7,
               "prelu_channel");
  vm::Tensor y = random_tensor({2, 3}, kF32, rng, -3, 3),
             s2 = random_tensor({2, 3}, kF32, rng, 0, 1);
  std::vector<double> want2;
  for (int64_t i = 0; i < 6; ++i) want2.push_back(at(y, i) < 0 ? at(y, i) * at(s2, i) : at(y, i));
  expect_close(run_op(lib, "prelu_full", {y, s2}, {2, 3}, kF32), want2, 1e-6, 1e-7, "prelu_full");
}

TEST(Activation, RefusesIntegersAndSlopesThatDoNotBroadcastToX) {
  EXPECT_USER_ERROR(activation(ActivationOp::kSin, {vm::DType::kInt32, dims({4})}),
                    "floating-point");
  EXPECT_USER_ERROR(prelu({kF32, dims({1, 3})}, {kF32, dims({2, 3})}), "unidirectionally");
}

}  // namespace
}  // namespace dynvm::ops::testing
